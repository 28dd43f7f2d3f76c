//! The suite's cases as held in memory: for a JSONL case only where its line is in its file
//! (offset, length, line number) beside what selection reads without parsing it (its id,
//! in one shared text, its dataset and its tags, each distinct set of tags held once). A
//! case becomes a [`Case`] only when something reads it (a worker as it starts the case,
//! `verify`, `cases`): its line is read again from the file, which stays open, and parsed.
//! About 40 bytes a case, so 100,000 cases take 4 MB, where holding their lines took 30
//! and holding them parsed ten times that. A file written to after it loaded is caught
//! when a case is read ([`Changed`]): its size or modification time differs. A selection,
//! or one dataset's cases, is a range or a list of indices into the same shared store, so
//! a plan never copies the suite's cases.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::case::Case;

/// One case as held: enough to select it and to name it without parsing it.
#[derive(Debug)]
pub(super) struct Stored {
    /// The id: its start in [`Store::ids`] and its length.
    pub(super) id: (u32, u32),
    /// Index into [`Store::datasets`].
    pub(super) dataset: u32,
    /// Index into [`Store::tag_sets`] (0: none).
    pub(super) tags: u32,
    pub(super) body: Body,
}

#[derive(Debug)]
pub(super) enum Body {
    /// A case from a folder (`input.txt`, `expected.json`): held parsed, as index into
    /// [`Store::parsed`] (such suites are written by hand, and small).
    Parsed(u32),
    /// A JSONL line, validated when it loaded; read again and parsed each time it is read.
    Line {
        /// Index into [`Store::files`].
        file: u32,
        line: u32,
        /// Where the line starts in the file, and its length in bytes (no line ending).
        at: u64,
        len: u32,
    },
}

/// A JSONL file the cases are read from, open since it loaded.
#[derive(Debug)]
pub(super) struct Source {
    pub(super) path: PathBuf,
    pub(super) file: File,
    /// Its size and modification time when it loaded.
    pub(super) stamp: Stamp,
}

/// What tells a file written to since it loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    pub(super) fn of(file: &File) -> std::io::Result<Stamp> {
        let m = file.metadata()?;
        Ok(Stamp {
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}

/// A case's JSONL file changed after the suite loaded: its line can no longer be trusted
/// to be the case that was checked (and selected, and counted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}:{line}: the file changed after the suite loaded (its cases were checked as they were): run again on the file as it is now",
    path.display()
)]
pub struct Changed {
    /// The JSONL file.
    pub path: PathBuf,
    /// The line of the case being read.
    pub line: usize,
}

impl From<Changed> for crate::error::Error {
    fn from(c: Changed) -> crate::error::Error {
        crate::error::Error::Config(c.to_string())
    }
}

/// Every loaded case, in dataset then id order.
#[derive(Debug)]
pub(super) struct Store {
    pub(super) cases: Vec<Stored>,
    /// Every case's id, one after the other.
    pub(super) ids: String,
    pub(super) datasets: Vec<String>,
    pub(super) files: Vec<Source>,
    pub(super) parsed: Vec<Case>,
    /// Each distinct set of tags, once; the first is the empty one.
    pub(super) tag_sets: Vec<Box<[String]>>,
}

impl Default for Store {
    fn default() -> Store {
        Store {
            cases: Vec::new(),
            ids: String::new(),
            datasets: Vec::new(),
            files: Vec::new(),
            parsed: Vec::new(),
            tag_sets: vec![Box::default()],
        }
    }
}

impl Store {
    /// The index of `name` in `datasets`, added if new.
    pub(super) fn dataset(&mut self, name: &str) -> u32 {
        match self.datasets.iter().position(|d| d == name) {
            Some(i) => i as u32,
            None => {
                self.datasets.push(name.to_string());
                (self.datasets.len() - 1) as u32
            }
        }
    }

    /// Adds an opened JSONL file; its index.
    pub(super) fn file(&mut self, source: Source) -> u32 {
        self.files.push(source);
        (self.files.len() - 1) as u32
    }

    /// Keeps `id`; where it is.
    pub(super) fn id(&mut self, id: &str) -> (u32, u32) {
        let at = self.ids.len() as u32;
        self.ids.push_str(id);
        (at, id.len() as u32)
    }

    /// The index of this set of tags in `tag_sets`, added if new. The sets are few (a
    /// suite tags its cases with a handful of words), so a search is quick.
    pub(super) fn tags(&mut self, tags: Vec<String>) -> u32 {
        if tags.is_empty() {
            return 0;
        }
        match self.tag_sets.iter().position(|t| **t == *tags) {
            Some(i) => i as u32,
            None => {
                self.tag_sets.push(tags.into());
                (self.tag_sets.len() - 1) as u32
            }
        }
    }

    /// Holds a case from a folder, parsed.
    pub(super) fn parsed(&mut self, dataset: u32, case: Case) -> Stored {
        let id = self.id(&case.id);
        let tags = self.tags(case.tags.clone());
        self.parsed.push(case);
        Stored {
            id,
            dataset,
            tags,
            body: Body::Parsed((self.parsed.len() - 1) as u32),
        }
    }

    pub(super) fn id_of(&self, s: &Stored) -> &str {
        &self.ids[s.id.0 as usize..(s.id.0 + s.id.1) as usize]
    }

    fn head<'a>(&'a self, s: &'a Stored) -> CaseHead<'a> {
        let id = self.id_of(s);
        let (variant, source, line) = match &s.body {
            Body::Parsed(i) => {
                let c = &self.parsed[*i as usize];
                (c.variant.as_str(), c.source.as_path(), c.line)
            }
            Body::Line { file, line, .. } => (
                id.split('/').next().unwrap_or(id),
                self.files[*file as usize].path.as_path(),
                Some(*line as usize),
            ),
        };
        CaseHead {
            id,
            dataset: &self.datasets[s.dataset as usize],
            variant,
            tags: &self.tag_sets[s.tags as usize],
            source,
            line,
        }
    }

    fn case(&self, s: &Stored) -> Result<Case, Changed> {
        match &s.body {
            Body::Parsed(i) => Ok(self.parsed[*i as usize].clone()),
            Body::Line {
                file,
                line,
                at,
                len,
            } => {
                let source = &self.files[*file as usize];
                let changed = || Changed {
                    path: source.path.clone(),
                    line: *line as usize,
                };
                let mut text = vec![0; *len as usize];
                if Stamp::of(&source.file).ok() != Some(source.stamp)
                    || read_exact_at(&source.file, &mut text, *at).is_err()
                {
                    return Err(changed());
                }
                let text = String::from_utf8(text).map_err(|_| changed())?;
                super::cases::reparse_line(
                    &self.datasets[s.dataset as usize],
                    &source.path,
                    *line as usize,
                    &text,
                )
                // The same text, parsed the same way, loaded without an error: a line that
                // no longer parses was written over in the same second with the same size.
                .map_err(|_| changed())
            }
        }
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, at)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file.try_clone()?;
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(buf)
}

/// What a case is known by without parsing it: its id, dataset, variant, tags and file.
#[derive(Debug, Clone, Copy)]
pub struct CaseHead<'a> {
    /// As [`Case::id`].
    pub id: &'a str,
    /// As [`Case::dataset`].
    pub dataset: &'a str,
    /// As [`Case::variant`].
    pub variant: &'a str,
    /// As [`Case::tags`].
    pub tags: &'a [String],
    /// The input file or the JSONL file.
    pub source: &'a Path,
    /// The JSONL line.
    pub line: Option<usize>,
}

impl CaseHead<'_> {
    /// `dataset/id`, as [`Case::key`].
    pub fn key(&self) -> String {
        format!("{}/{}", self.dataset, self.id)
    }
}

/// Which of the store's cases a list holds, in order.
#[derive(Debug, Clone)]
enum Picked {
    /// A run of consecutive cases (the whole suite, one dataset of it): nothing per case.
    Range(u32, u32),
    /// Indices into the store.
    List(Arc<[u32]>),
}

impl Picked {
    fn len(&self) -> usize {
        match self {
            Picked::Range(from, to) => (to - from) as usize,
            Picked::List(l) => l.len(),
        }
    }

    fn at(&self, i: usize) -> u32 {
        match self {
            Picked::Range(from, to) => {
                assert!(i < (to - from) as usize, "case {i} of {}", to - from);
                from + i as u32
            }
            Picked::List(l) => l[i],
        }
    }

    /// The list of these indices, a range when they are consecutive.
    fn of(picked: Vec<u32>) -> Picked {
        match (picked.first(), picked.last()) {
            (Some(&first), Some(&last)) if (last - first) as usize + 1 == picked.len() => {
                Picked::Range(first, last + 1)
            }
            (None, _) | (_, None) => Picked::Range(0, 0),
            _ => Picked::List(picked.into()),
        }
    }
}

/// A list of cases: a suite's, or a selection of them. Cheap to clone (the cases are
/// shared); each [`Case`] is built when read ([`Cases::get`], [`Cases::iter`]).
#[derive(Debug, Clone)]
pub struct Cases {
    store: Arc<Store>,
    picked: Picked,
}

impl Default for Cases {
    fn default() -> Cases {
        Cases::new(Store::default())
    }
}

impl Cases {
    pub(super) fn new(store: Store) -> Cases {
        let picked = Picked::Range(0, store.cases.len() as u32);
        Cases {
            store: Arc::new(store),
            picked,
        }
    }

    /// How many cases.
    pub fn len(&self) -> usize {
        self.picked.len()
    }

    /// Whether there is no case.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th case, parsed: its JSONL line read again from its file (an error if the
    /// file changed since the suite loaded).
    pub fn get(&self, i: usize) -> Result<Case, Changed> {
        self.store
            .case(&self.store.cases[self.picked.at(i) as usize])
    }

    /// What the `i`-th case is known by, without parsing it.
    pub fn head(&self, i: usize) -> CaseHead<'_> {
        self.store
            .head(&self.store.cases[self.picked.at(i) as usize])
    }

    /// Every case, parsed one at a time as the iterator reaches it.
    pub fn iter(&self) -> impl Iterator<Item = Result<Case, Changed>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Every case's [`CaseHead`], in order.
    pub fn heads(&self) -> impl Iterator<Item = CaseHead<'_>> + '_ {
        (0..self.len()).map(|i| self.head(i))
    }

    /// The cases whose head `keep` accepts, in order (sharing this list's cases).
    pub fn filter(&self, mut keep: impl FnMut(&CaseHead<'_>) -> bool) -> Cases {
        let picked = (0..self.len())
            .map(|i| self.picked.at(i))
            .filter(|&i| keep(&self.store.head(&self.store.cases[i as usize])))
            .collect();
        Cases {
            store: self.store.clone(),
            picked: Picked::of(picked),
        }
    }

    /// The datasets of these cases, in order of first appearance.
    pub fn datasets(&self) -> Vec<String> {
        let mut seen: Vec<u32> = Vec::new();
        for i in 0..self.len() {
            let d = self.store.cases[self.picked.at(i) as usize].dataset;
            if !seen.contains(&d) {
                seen.push(d);
            }
        }
        seen.into_iter()
            .map(|d| self.store.datasets[d as usize].clone())
            .collect()
    }

    /// These cases split by dataset, in order of first appearance.
    pub fn by_dataset(&self) -> Vec<(String, Cases)> {
        self.datasets()
            .into_iter()
            .map(|d| {
                let cases = self.filter(|h| h.dataset == d);
                (d, cases)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::cases::{Selection, load_cases, parse_line, select};
    use std::path::Path;

    const LINES: &str = r#"{"id": "b/2", "input": "two", "expected": {"a": 1}, "tags": ["x"]}
{"id": "a/1", "input": {"q": "one"}, "expect": [{"contains": "o"}], "weight": 2, "metadata": {"k": [1, 2]}, "minimum_scores": {"score": 0.5}, "mock_response": {"a": 1}}

{"id": "c", "id": "c/3", "input": "a key given twice keeps the last"}
{"id": 7, "input": "a number id", "mock_response": null}
"#;

    fn suite(dir: &Path) {
        let ds = dir.join("evals/datasets/d");
        std::fs::create_dir_all(ds.join("cases/plain")).unwrap();
        std::fs::write(ds.join("cases/plain/input.txt"), "from a folder").unwrap();
        std::fs::write(ds.join("cases/plain/expected.json"), r#"{"a": 2}"#).unwrap();
        std::fs::write(ds.join("cases.jsonl"), LINES).unwrap();
    }

    #[test]
    fn a_case_read_again_is_the_case_its_line_loaded_as() {
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        let file = tmp.path().join("evals/datasets/d/cases.jsonl");
        let ids: Vec<&str> = set.cases.heads().map(|h| h.id).collect();
        assert_eq!(ids, ["7", "a/1", "b/2", "c/3", "plain"]);
        for (i, head) in set.cases.heads().enumerate() {
            let case = set.cases.get(i).unwrap();
            assert_eq!(
                (head.id, head.dataset, head.variant, head.tags),
                (
                    case.id.as_str(),
                    case.dataset.as_str(),
                    case.variant.as_str(),
                    case.tags.as_slice()
                )
            );
            assert_eq!((head.source, head.line), (case.source.as_path(), case.line));
            if let Some(n) = case.line {
                let line = LINES.lines().nth(n - 1).unwrap();
                assert_eq!(case, parse_line("d", &file, n, line, tmp.path()).unwrap());
            }
        }
        assert_eq!(
            set.cases.get(3).unwrap().input.as_text(),
            "a key given twice keeps the last"
        );
        assert_eq!(
            set.cases.get(1).unwrap().mock_response.as_deref(),
            Some(r#"{"a":1}"#)
        );
    }

    #[test]
    fn a_selection_shares_the_suites_cases_in_their_order() {
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        let sel = Selection {
            cases: vec!["d/b/2".into(), "plain".into(), "a".into()],
            ..Default::default()
        };
        let picked = select(&set, &sel).unwrap();
        let keys: Vec<String> = picked.heads().map(|h| h.key()).collect();
        assert_eq!(keys, ["d/a/1", "d/b/2", "d/plain"]);
        assert_eq!(picked.get(1).unwrap(), set.cases.get(2).unwrap());
        assert_eq!(picked.by_dataset().len(), 1);
        assert_eq!(picked.datasets(), ["d"]);
    }

    #[test]
    fn a_case_read_after_its_file_changed_is_an_error_naming_the_line() {
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        let file = tmp.path().join("evals/datasets/d/cases.jsonl");
        assert!(set.cases.get(2).is_ok());
        // Written over in place (the same inode): the size tells.
        std::fs::write(&file, LINES.replace("two", "2")).unwrap();
        let e = set.cases.get(2).unwrap_err();
        assert_eq!((e.path.as_path(), e.line), (file.as_path(), 1));
        assert_eq!(
            crate::error::Error::from(e).to_string(),
            format!(
                "{}:1: the file changed after the suite loaded (its cases were checked as they were): run again on the file as it is now",
                file.display()
            )
        );
        // A case held parsed (from a folder) reads as it loaded.
        assert_eq!(set.cases.get(4).unwrap().id, "plain");
    }

    #[test]
    fn a_file_replaced_after_it_loaded_still_reads_as_it_loaded() {
        // An editor saves by renaming a new file over the old: the open file is the old.
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        let before = set.cases.get(2).unwrap();
        let file = tmp.path().join("evals/datasets/d/cases.jsonl");
        let new = tmp.path().join("new.jsonl");
        std::fs::write(&new, LINES.replace("two", "2")).unwrap();
        std::fs::rename(&new, &file).unwrap();
        assert_eq!(set.cases.get(2).unwrap(), before);
    }

    #[test]
    fn a_file_read_a_line_at_a_time_fails_as_the_whole_file_did() {
        let tmp = tempfile::tempdir().unwrap();
        let ds = tmp.path().join("evals/datasets/d");
        std::fs::create_dir_all(&ds).unwrap();
        let load = |bytes: &[u8]| {
            std::fs::write(ds.join("cases.jsonl"), bytes).unwrap();
            load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path())
                .unwrap_err()
                .to_string()
        };
        // Each as reading the file whole says it; a bad line before a byte that is not
        // UTF-8: the file's encoding is said first.
        let whole = |bytes: &[u8]| {
            std::fs::write(ds.join("cases.jsonl"), bytes).unwrap();
            let shown = "evals/datasets/d/cases.jsonl";
            crate::error::read_text(&ds.join("cases.jsonl"), shown)
                .unwrap_err()
                .to_string()
        };
        for bytes in [
            &b"{\"id\": \"a\", \"input\": \"x\"}\r\nnot json\n{\"id\": \"b\", \"input\": \"\xE9\"}\n"[..],
            b"\xFF\xFE{\x00",
            b"\n\xFE\xFF",
            b"{\"id\": \"a\", \"input\": \"x\xC3\"}",
        ] {
            assert_eq!(load(bytes), whole(bytes));
        }
        assert_eq!(
            load(b"{\"id\": \"a\", \"input\": \"x\"}\r\nnot json\n{\"id\": \"b\", \"input\": \"\xE9\"}\n"),
            "evals/datasets/d/cases.jsonl:3: not UTF-8 (byte 23 of the line, offset 58 in the file): save the file as UTF-8"
        );
        assert_eq!(
            load(b"{\"id\": \"a\", \"input\": \"x\"}\nnot json"),
            "evals/datasets/d/cases.jsonl:2:2: not valid JSON: expected ident"
        );
        // The first id loaded twice is named, with the case it repeats.
        assert_eq!(
            load(b"{\"id\": \"b\", \"input\": \"x\"}\n{\"id\": \"a\", \"input\": \"x\"}\n{\"id\": \"b\", \"input\": \"x\"}\n{\"id\": \"a\", \"input\": \"x\"}\n{\"id\": \"b\", \"input\": \"x\"}\n"),
            "duplicate case id 'b' in dataset 'd': evals/datasets/d/cases.jsonl:1 and evals/datasets/d/cases.jsonl:3; give one of them another id"
        );
    }

    #[test]
    fn a_whole_dataset_is_a_range_and_a_selection_a_list() {
        let tmp = tempfile::tempdir().unwrap();
        suite(tmp.path());
        let set = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path()).unwrap();
        assert!(matches!(set.cases.picked, super::Picked::Range(0, 5)));
        let odd = set.cases.filter(|h| h.id != "a/1");
        assert!(matches!(odd.picked, super::Picked::List(_)));
        let ids: Vec<&str> = odd.heads().map(|h| h.id).collect();
        assert_eq!(ids, ["7", "b/2", "c/3", "plain"]);
        let tail = odd.filter(|h| h.id != "7");
        assert!(matches!(tail.picked, super::Picked::Range(2, 5)));
        assert_eq!(tail.get(0).unwrap().id, "b/2");
    }
}
