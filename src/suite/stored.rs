//! The suite's cases as held in memory. A JSONL case is kept as the line it was read from
//! (about its size on disk) beside what selection reads without parsing (id, dataset,
//! tags), and becomes a [`Case`] only when something reads it: a worker as it starts the
//! case, `verify`, `cases`. Parsed, a case of three expected fields takes about ten times
//! its line (each JSON object is a B-tree node), and a suite of 100,000 held them all
//! before anything ran. A selection, or one dataset's cases, is a list of indices into the
//! same shared store, so a plan never copies the suite's cases.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::case::Case;

/// One case as held: enough to select it and to name it without parsing it.
#[derive(Debug)]
pub(super) struct Stored {
    pub(super) id: Box<str>,
    /// Index into [`Store::datasets`].
    pub(super) dataset: u32,
    pub(super) tags: Box<[String]>,
    pub(super) body: Body,
}

#[derive(Debug)]
pub(super) enum Body {
    /// A case from a folder (`input.txt`, `expected.json`): held parsed (such suites are
    /// written by hand, and small).
    Parsed(Box<Case>),
    /// A JSONL line, validated when it loaded; parsed again each time it is read.
    Line {
        /// Index into [`Store::files`].
        file: u32,
        line: u32,
        text: Box<str>,
    },
}

/// Every loaded case, in dataset then id order.
#[derive(Debug, Default)]
pub(super) struct Store {
    pub(super) cases: Vec<Stored>,
    pub(super) datasets: Vec<String>,
    pub(super) files: Vec<PathBuf>,
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

    /// The index of `path` in `files`, added if new.
    pub(super) fn file(&mut self, path: &Path) -> u32 {
        match self.files.iter().rposition(|f| f == path) {
            Some(i) => i as u32,
            None => {
                self.files.push(path.to_path_buf());
                (self.files.len() - 1) as u32
            }
        }
    }

    fn head<'a>(&'a self, s: &'a Stored) -> CaseHead<'a> {
        let (variant, source, line) = match &s.body {
            Body::Parsed(c) => (c.variant.as_str(), c.source.as_path(), c.line),
            Body::Line { file, line, .. } => (
                s.id.split('/').next().unwrap_or(&s.id),
                self.files[*file as usize].as_path(),
                Some(*line as usize),
            ),
        };
        CaseHead {
            id: &s.id,
            dataset: &self.datasets[s.dataset as usize],
            variant,
            tags: &s.tags,
            source,
            line,
        }
    }

    fn case(&self, s: &Stored) -> Case {
        match &s.body {
            Body::Parsed(c) => (**c).clone(),
            Body::Line { file, line, text } => super::cases::reparse_line(
                &self.datasets[s.dataset as usize],
                &self.files[*file as usize],
                *line as usize,
                text,
            )
            // The same text, parsed the same way, loaded without an error.
            .unwrap_or_else(|e| panic!("a case that loaded no longer parses: {e}")),
        }
    }
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

/// A list of cases: a suite's, or a selection of them. Cheap to clone (the cases are
/// shared); each [`Case`] is built when read ([`Cases::get`], [`Cases::iter`]).
#[derive(Debug, Clone, Default)]
pub struct Cases {
    store: Arc<Store>,
    /// Indices into the store, in order.
    picked: Arc<[u32]>,
}

impl Cases {
    pub(super) fn new(store: Store) -> Cases {
        let picked = (0..store.cases.len() as u32).collect();
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
        self.picked.is_empty()
    }

    /// The `i`-th case, parsed.
    pub fn get(&self, i: usize) -> Case {
        self.store.case(&self.store.cases[self.picked[i] as usize])
    }

    /// What the `i`-th case is known by, without parsing it.
    pub fn head(&self, i: usize) -> CaseHead<'_> {
        self.store.head(&self.store.cases[self.picked[i] as usize])
    }

    /// Every case, parsed one at a time as the iterator reaches it.
    pub fn iter(&self) -> impl Iterator<Item = Case> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Every case's [`CaseHead`], in order.
    pub fn heads(&self) -> impl Iterator<Item = CaseHead<'_>> + '_ {
        (0..self.len()).map(|i| self.head(i))
    }

    /// The cases whose head `keep` accepts, in order (sharing this list's cases).
    pub fn filter(&self, mut keep: impl FnMut(&CaseHead<'_>) -> bool) -> Cases {
        let picked = self
            .picked
            .iter()
            .copied()
            .filter(|&i| keep(&self.store.head(&self.store.cases[i as usize])))
            .collect();
        Cases {
            store: self.store.clone(),
            picked,
        }
    }

    /// The datasets of these cases, in order of first appearance.
    pub fn datasets(&self) -> Vec<String> {
        let mut seen: Vec<u32> = Vec::new();
        for &i in self.picked.iter() {
            let d = self.store.cases[i as usize].dataset;
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
            let case = set.cases.get(i);
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
            set.cases.get(3).input.as_text(),
            "a key given twice keeps the last"
        );
        assert_eq!(
            set.cases.get(1).mock_response.as_deref(),
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
        assert_eq!(picked.get(1), set.cases.get(2));
        assert_eq!(picked.by_dataset().len(), 1);
        assert_eq!(picked.datasets(), ["d"]);
    }
}
