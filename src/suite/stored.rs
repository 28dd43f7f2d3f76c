//! The suite's cases as held in memory: for a JSONL case only where its line is in its file
//! (offset, length, line number) beside what selection reads without parsing it (its id,
//! in one shared text, its dataset and its tags, each distinct set of tags held once). A
//! case becomes a [`Case`] only when something reads it (a worker as it starts the case,
//! `verify`, `cases`): its line is read again from the file, which stays open, and parsed.
//! 16 bytes a JSONL case beside its id (its dataset, file and tags held once for many
//! cases), so 100,000 cases take 2.3 MB, where holding their lines took 30 and holding
//! them parsed ten times that. A file written to after it loaded is caught
//! when a case is read ([`Changed`]): its size or modification time differs. A selection,
//! or one dataset's cases, is a range or a list of indices into the same shared store, so
//! a plan never copies the suite's cases.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::case::Case;

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

/// What a case's [`Store::lines`] entry is for a case from a folder (`input.txt`,
/// `expected.json`): such a case is held parsed, its entry its index in [`Store::parsed`].
const FOLDER: u32 = u32::MAX;

/// A line's length takes the low 24 bits of its packed span (up to 16 MiB), its offset the
/// high 40 (up to 1 TiB).
const LEN_BITS: u32 = 24;
/// The length bits all set: the line is in [`Store::long`], at the index in the high bits.
const LONG: u64 = (1 << LEN_BITS) - 1;

/// A line's offset and length in one `u64`; a line past what packs is kept in `long`.
fn pack(at: u64, len: u64, long: &mut Vec<(u64, u64)>) -> u64 {
    if at >> (64 - LEN_BITS) == 0 && len < LONG {
        (at << LEN_BITS) | len
    } else {
        long.push((at, len));
        ((long.len() as u64 - 1) << LEN_BITS) | LONG
    }
}

/// The offset and length [`pack`] packed.
fn unpack(span: u64, long: &[(u64, u64)]) -> (u64, u64) {
    match span & LONG {
        LONG => long[(span >> LEN_BITS) as usize],
        len => (span >> LEN_BITS, len),
    }
}

/// A count that is a `u32` in the store: past it (4 G cases, or 4 GiB of ids) the suite
/// could not be held anyway.
fn small(n: usize, what: &str) -> u32 {
    u32::try_from(n).unwrap_or_else(|_| panic!("a suite with over 4 G {what}"))
}

/// Every loaded case, in dataset then id order, as parallel arrays: 16 bytes a JSONL case
/// (where its id ends, its line number, where its line is) beside its id's text. What is
/// the same for many cases is held once: a dataset is a contiguous run of cases ([`Run`]),
/// with the file its cases come from when they all come from one; the tags of the few
/// cases that have some in a side table ([`Tags`]).
#[derive(Debug)]
pub(super) struct Store {
    /// Where each case's id ends in `ids`; it starts where the case before's ends.
    id_end: Vec<u32>,
    /// Every case's id, one after the other in case order.
    ids: String,
    /// A JSONL case's line number; a folder case's index in `parsed`.
    lines: Vec<u32>,
    /// A JSONL case's line in its file, packed ([`pack`]); 0 for a folder case.
    spans: Vec<u64>,
    /// The lines too long, or too far into their file, to pack: offset and length.
    long: Vec<(u64, u64)>,
    /// Each dataset's run of cases, in case order (a dataset with no case has none).
    runs: Vec<Run>,
    /// Which of `files` (or [`FOLDER`]) each case of a [`Origin::Mixed`] dataset is from.
    mixed: Vec<u32>,
    tags: Tags,
    /// Each distinct set of tags, once; the first is the empty one.
    tag_sets: Vec<Box<[String]>>,
    files: Vec<Source>,
    parsed: Vec<Case>,
    /// The dataset being loaded, its cases in load order until [`Store::end`] sorts them.
    loading: Option<Loading>,
}

/// A dataset's cases: `start..end` in the store.
#[derive(Debug)]
struct Run {
    start: u32,
    end: u32,
    name: String,
    origin: Origin,
}

/// Where a dataset's cases come from.
#[derive(Debug)]
enum Origin {
    /// All from one file of `files`, or all from folders ([`FOLDER`]): nothing per case.
    One(u32),
    /// From several: each case's in `mixed`, from this index on.
    Mixed(u32),
}

/// Which cases have tags, and which set (an index into `tag_sets`).
#[derive(Debug)]
enum Tags {
    /// The cases that have tags, in case order: most cases have none.
    Sparse(Vec<(u32, u32)>),
    /// Every case's (0: none), when more than half have some.
    Dense(Vec<u32>),
}

/// A dataset as it loads: where its cases start, and what came in where.
#[derive(Debug)]
struct Loading {
    name: String,
    start: u32,
    /// Where in the dataset's load order each new source's cases start, and the source.
    from: Vec<(u32, u32)>,
    /// The cases (by load position) with tags.
    tags: Vec<(u32, u32)>,
    /// Lines reserved for and not loaded yet.
    pending: usize,
}

impl Default for Store {
    fn default() -> Store {
        Store {
            id_end: Vec::new(),
            ids: String::new(),
            lines: Vec::new(),
            spans: Vec::new(),
            long: Vec::new(),
            runs: Vec::new(),
            mixed: Vec::new(),
            tags: Tags::Sparse(Vec::new()),
            tag_sets: vec![Box::default()],
            files: Vec::new(),
            parsed: Vec::new(),
            loading: None,
        }
    }
}

/// Room for `more` in `v`, exactly (a list grown by doubling could reach twice its size),
/// but at least an eighth more, so that many small files do not copy the list each time.
fn room<T>(v: &mut Vec<T>, more: usize) {
    if v.capacity() - v.len() < more {
        v.reserve_exact(more.max(v.len() / 8));
    }
}

impl Store {
    /// How many cases.
    pub(super) fn len(&self) -> usize {
        self.id_end.len()
    }

    /// Starts loading dataset `name`: the cases pushed until [`Store::end`] are its.
    pub(super) fn begin(&mut self, name: &str) {
        assert!(
            self.loading.is_none(),
            "dataset {name} begun inside another"
        );
        self.loading = Some(Loading {
            name: name.to_string(),
            start: small(self.len(), "cases"),
            from: Vec::new(),
            tags: Vec::new(),
            pending: 0,
        });
    }

    fn loading(&mut self) -> &mut Loading {
        self.loading
            .as_mut()
            .expect("a case pushed outside a dataset")
    }

    /// Room for `lines` more cases (a JSONL file's lines), so the arrays do not grow by
    /// doubling as they load.
    pub(super) fn reserve(&mut self, lines: usize) {
        room(&mut self.id_end, lines);
        room(&mut self.lines, lines);
        room(&mut self.spans, lines);
        self.loading().pending = lines;
    }

    /// Adds an opened JSONL file; its index.
    pub(super) fn file(&mut self, source: Source) -> u32 {
        self.files.push(source);
        small(self.files.len() - 1, "files")
    }

    /// Adds a case of the dataset loading, with its id, tags and where it is.
    fn push(&mut self, id: &str, tags: Vec<String>, source: u32, line: u32, span: u64) {
        let set = self.tag_set(tags);
        let n = self.len();
        let pending = {
            let l = self.loading();
            let at = small(n, "cases") - l.start;
            if l.from.last().is_none_or(|&(_, s)| s != source) {
                l.from.push((at, source));
            }
            if set != 0 {
                l.tags.push((at, set));
            }
            l.pending = l.pending.saturating_sub(1);
            l.pending
        };
        // Room for the file's ids, guessed from this one's length (a suite's ids are
        // mostly alike): as the arrays, not grown by doubling.
        if self.ids.capacity() - self.ids.len() < id.len() {
            let more = id.len() * (pending + 1);
            self.ids.reserve_exact(more.max(self.ids.len() / 8));
        }
        self.ids.push_str(id);
        self.id_end.push(small(self.ids.len(), "bytes of ids"));
        self.lines.push(line);
        self.spans.push(span);
    }

    /// Adds a case of the dataset loading from a JSONL line: `len` bytes at `at` in file
    /// `file`, line `line`.
    pub(super) fn push_line(
        &mut self,
        file: u32,
        id: &str,
        tags: Vec<String>,
        line: u32,
        at: u64,
        len: u64,
    ) {
        let span = pack(at, len, &mut self.long);
        self.push(id, tags, file, line, span);
    }

    /// Adds a case of the dataset loading from a folder, held parsed.
    pub(super) fn push_parsed(&mut self, case: Case) {
        let i = small(self.parsed.len(), "cases");
        let (id, tags) = (case.id.clone(), case.tags.clone());
        self.parsed.push(case);
        self.push(&id, tags, FOLDER, i, 0);
    }

    /// The index of this set of tags in `tag_sets`, added if new. The sets are few (a
    /// suite tags its cases with a handful of words), so a search is quick.
    fn tag_set(&mut self, tags: Vec<String>) -> u32 {
        if tags.is_empty() {
            return 0;
        }
        match self.tag_sets.iter().position(|t| **t == *tags) {
            Some(i) => i as u32,
            None => {
                self.tag_sets.push(tags.into());
                small(self.tag_sets.len() - 1, "sets of tags")
            }
        }
    }

    /// The dataset loading's cases by load position (0 its first), as [`Store::end`] wants
    /// them: in id order, and a case's duplicates beside it in the order they loaded.
    pub(super) fn order(&self) -> Vec<u32> {
        let start = self.loading.as_ref().map_or(0, |l| l.start);
        let mut order: Vec<u32> = (0..small(self.len(), "cases") - start).collect();
        // Unstable, so in place (a stable sort takes a buffer as large): no two positions
        // are equal, so the order is the one a stable sort by id gives.
        order.sort_unstable_by(|&a, &b| self.id(start + a).cmp(self.id(start + b)).then(a.cmp(&b)));
        order
    }

    /// The id of the dataset loading's case at load position `j`.
    pub(super) fn loaded_id(&self, j: u32) -> &str {
        let start = self.loading.as_ref().map_or(0, |l| l.start);
        self.id(start + j)
    }

    /// Where the dataset loading's case at load position `j` is: its folder case, or its
    /// file and line.
    pub(super) fn loaded_at(&self, j: u32) -> Place<'_> {
        let l = self.loading.as_ref().expect("no dataset loading");
        let source = l.from[l.from.partition_point(|&(at, _)| at <= j) - 1].1;
        self.place(source, (l.start + j) as usize)
    }

    fn place(&self, source: u32, i: usize) -> Place<'_> {
        match source {
            FOLDER => Place::Folder(&self.parsed[self.lines[i] as usize]),
            file => Place::Line(&self.files[file as usize], self.lines[i]),
        }
    }

    /// Ends the dataset loading: its cases put in `order` (from [`Store::order`]), ids
    /// laid out again in that order.
    pub(super) fn end(&mut self, mut order: Vec<u32>) {
        let l = self.loading.take().expect("no dataset loading");
        let start = l.start as usize;
        assert_eq!(order.len(), self.len() - start, "an order of every case");
        if order.is_empty() {
            return;
        }
        let ids_from = self.ids_start(start);
        let mut sorted = String::with_capacity(self.ids.len() - ids_from);
        for &j in &order {
            sorted.push_str(self.id(l.start + j));
        }
        // Each read off the load order while `order` still says where each case was.
        let tagged = |j: u32| {
            l.tags
                .binary_search_by_key(&j, |&(at, _)| at)
                .ok()
                .map(|k| l.tags[k].1)
        };
        if !l.tags.is_empty() {
            let Tags::Sparse(tags) = &mut self.tags else {
                unreachable!("tags are made dense once every dataset loaded")
            };
            for (k, &j) in order.iter().enumerate() {
                if let Some(set) = tagged(j) {
                    tags.push((l.start + k as u32, set));
                }
            }
        }
        let origin = match l.from[..] {
            [(_, one)] => Origin::One(one),
            _ => {
                let from = small(self.mixed.len(), "cases");
                self.mixed.reserve_exact(order.len());
                for &j in &order {
                    let at = l.from.partition_point(|&(at, _)| at <= j) - 1;
                    self.mixed.push(l.from[at].1);
                }
                Origin::Mixed(from)
            }
        };
        // The ids' ends as lengths, which move with their cases; ends again after.
        let ends = &mut self.id_end[start..];
        for i in (1..ends.len()).rev() {
            ends[i] -= ends[i - 1];
        }
        ends[0] -= ids_from as u32;
        permute(&mut order, |a, b| {
            self.id_end.swap(start + a, start + b);
            self.lines.swap(start + a, start + b);
            self.spans.swap(start + a, start + b);
        });
        let mut end = ids_from as u32;
        for e in &mut self.id_end[start..] {
            end += *e;
            *e = end;
        }
        self.ids.truncate(ids_from);
        self.ids.push_str(&sorted);
        self.runs.push(Run {
            start: l.start,
            end: small(self.len(), "cases"),
            name: l.name,
            origin,
        });
    }

    /// Every dataset loaded: what was reserved and not used given back, the tags held
    /// for every case when most have some.
    pub(super) fn done(&mut self) {
        assert!(self.loading.is_none(), "a dataset still loading");
        if let Tags::Sparse(tags) = &self.tags
            && tags.len() > self.len() / 2
        {
            let mut dense = vec![0; self.len()];
            for &(i, set) in tags {
                dense[i as usize] = set;
            }
            self.tags = Tags::Dense(dense);
        }
        if let Tags::Sparse(tags) = &mut self.tags {
            tags.shrink_to_fit();
        }
        self.id_end.shrink_to_fit();
        self.ids.shrink_to_fit();
        self.lines.shrink_to_fit();
        self.spans.shrink_to_fit();
        self.mixed.shrink_to_fit();
    }

    fn ids_start(&self, i: usize) -> usize {
        match i {
            0 => 0,
            i => self.id_end[i - 1] as usize,
        }
    }

    fn id(&self, i: u32) -> &str {
        let i = i as usize;
        &self.ids[self.ids_start(i)..self.id_end[i] as usize]
    }

    fn run(&self, i: u32) -> &Run {
        &self.runs[self.run_index(i)]
    }

    /// The index of the dataset of case `i` in the store's datasets with cases.
    fn run_index(&self, i: u32) -> usize {
        self.runs.partition_point(|r| r.end <= i)
    }

    fn source(&self, run: &Run, i: u32) -> u32 {
        match run.origin {
            Origin::One(source) => source,
            Origin::Mixed(from) => self.mixed[(from + i - run.start) as usize],
        }
    }

    fn tags_of(&self, i: u32) -> &[String] {
        let set = match &self.tags {
            Tags::Sparse(tags) => match tags.binary_search_by_key(&i, |&(at, _)| at) {
                Ok(k) => tags[k].1,
                Err(_) => 0,
            },
            Tags::Dense(sets) => sets[i as usize],
        };
        &self.tag_sets[set as usize]
    }

    fn head(&self, i: u32) -> CaseHead<'_> {
        let run = self.run(i);
        let id = self.id(i);
        let (variant, source, line) = match self.place(self.source(run, i), i as usize) {
            Place::Folder(c) => (c.variant.as_str(), c.source.as_path(), c.line),
            Place::Line(file, line) => (
                id.split('/').next().unwrap_or(id),
                file.path.as_path(),
                Some(line as usize),
            ),
        };
        CaseHead {
            id,
            dataset: &run.name,
            variant,
            tags: self.tags_of(i),
            source,
            line,
        }
    }

    fn case(&self, i: u32) -> Result<Case, Changed> {
        let run = self.run(i);
        match self.place(self.source(run, i), i as usize) {
            Place::Folder(c) => Ok(c.clone()),
            Place::Line(source, line) => {
                let (at, len) = unpack(self.spans[i as usize], &self.long);
                let changed = || Changed {
                    path: source.path.clone(),
                    line: line as usize,
                };
                let mut text = vec![0; usize::try_from(len).map_err(|_| changed())?];
                if Stamp::of(&source.file).ok() != Some(source.stamp)
                    || crate::error::read_exact_at(&source.file, &mut text, at).is_err()
                {
                    return Err(changed());
                }
                let text = String::from_utf8(text).map_err(|_| changed())?;
                super::cases::reparse_line(&run.name, &source.path, line as usize, &text)
                    // The same text, parsed the same way, loaded without an error: a line
                    // that no longer parses was written over in the same second with the
                    // same size.
                    .map_err(|_| changed())
            }
        }
    }
}

/// Where a case is.
pub(super) enum Place<'a> {
    /// A case from a folder, held parsed.
    Folder(&'a Case),
    /// A JSONL file's line.
    Line(&'a Source, u32),
}

/// Puts a list in `order` (its item at `k` is the one at `order[k]`) by swaps, in place:
/// `swap(a, b)` swaps the items at `a` and `b`. Each cycle of the permutation is followed
/// once, each entry of `order` marked done by pointing it at itself.
fn permute(order: &mut [u32], mut swap: impl FnMut(usize, usize)) {
    for start in 0..order.len() {
        let mut at = start;
        loop {
            let next = order[at] as usize;
            order[at] = at as u32;
            if next == start {
                break;
            }
            swap(at, next);
            at = next;
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
        let picked = Picked::Range(0, small(store.len(), "cases"));
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
        self.store.case(self.picked.at(i))
    }

    /// What the `i`-th case is known by, without parsing it.
    pub fn head(&self, i: usize) -> CaseHead<'_> {
        self.store.head(self.picked.at(i))
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
            .filter(|&i| keep(&self.store.head(i)))
            .collect();
        Cases {
            store: self.store.clone(),
            picked: Picked::of(picked),
        }
    }

    /// The datasets of these cases, in order of first appearance.
    pub fn datasets(&self) -> Vec<String> {
        let mut seen: Vec<usize> = Vec::new();
        for i in 0..self.len() {
            let d = self.store.run_index(self.picked.at(i));
            if !seen.contains(&d) {
                seen.push(d);
            }
        }
        seen.into_iter()
            .map(|d| self.store.runs[d].name.clone())
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

    fn load(dir: &Path) -> super::super::cases::CaseSet {
        load_cases(&dir.join("evals"), dir, dir).unwrap()
    }

    fn write(dir: &Path, file: &str, text: &str) {
        let path = dir.join("evals/datasets").join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_span_past_what_packs_is_held_beside_the_packed_ones() {
        let mut long = Vec::new();
        let spans = [
            (0, 0),
            (3, super::LONG - 1),
            ((1 << 40) - 1, 7),
            // Each one past: the length, the offset, both.
            (3, super::LONG),
            (1 << 40, 7),
            (u64::MAX, u64::MAX),
        ];
        let packed: Vec<u64> = spans
            .iter()
            .map(|&(at, len)| super::pack(at, len, &mut long))
            .collect();
        assert_eq!(long, spans[3..]);
        for (&p, &span) in packed.iter().zip(&spans) {
            assert_eq!(super::unpack(p, &long), span);
        }
    }

    #[test]
    fn a_line_longer_than_a_packed_length_reads_back_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let big = "x".repeat(super::LONG as usize + 10);
        let lines = format!(
            "{{\"id\": \"b\", \"input\": \"short\"}}\n{{\"id\": \"a\", \"input\": \"{big}\"}}\n{{\"id\": \"c\", \"input\": \"after\"}}\n"
        );
        write(tmp.path(), "d/cases.jsonl", &lines);
        let set = load(tmp.path());
        let ids: Vec<&str> = set.cases.heads().map(|h| h.id).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(set.cases.store.long.len(), 1);
        assert_eq!(set.cases.get(0).unwrap().input.as_text(), big);
        assert_eq!(set.cases.get(0).unwrap().line, Some(2));
        assert_eq!(set.cases.get(1).unwrap().input.as_text(), "short");
        assert_eq!(set.cases.get(2).unwrap().input.as_text(), "after");
    }

    #[test]
    fn cases_either_side_of_a_dataset_boundary_keep_their_dataset() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            "a/cases.jsonl",
            "{\"id\": \"z\", \"input\": \"az\"}\n{\"id\": \"y\", \"input\": \"ay\"}\n",
        );
        // A dataset with no case between two with some.
        std::fs::create_dir_all(tmp.path().join("evals/datasets/b")).unwrap();
        write(
            tmp.path(),
            "c/cases.jsonl",
            "{\"id\": \"b\", \"input\": \"cb\"}\n{\"id\": \"a\", \"input\": \"ca\"}\n",
        );
        let set = load(tmp.path());
        assert_eq!(set.datasets, ["a", "b", "c"]);
        let keys: Vec<String> = set.cases.heads().map(|h| h.key()).collect();
        assert_eq!(keys, ["a/y", "a/z", "c/a", "c/b"]);
        let inputs: Vec<String> = set
            .cases
            .iter()
            .map(|c| {
                let c = c.unwrap();
                format!("{}:{}:{:?}", c.dataset, c.input.as_text(), c.line)
            })
            .collect();
        assert_eq!(
            inputs,
            [
                "a:ay:Some(2)",
                "a:az:Some(1)",
                "c:ca:Some(2)",
                "c:cb:Some(1)"
            ]
        );
        assert_eq!(set.cases.datasets(), ["a", "c"]);
        let split: Vec<String> = set
            .cases
            .by_dataset()
            .into_iter()
            .map(|(d, cases)| format!("{d}: {}", cases.heads().map(|h| h.id).collect::<String>()))
            .collect();
        assert_eq!(split, ["a: yz", "c: ab"]);
        let tail = set.cases.filter(|h| h.id != "y");
        assert_eq!(tail.datasets(), ["a", "c"]);
        assert_eq!(tail.head(0).dataset, "a");
        assert_eq!(tail.head(1).dataset, "c");
    }

    #[test]
    fn tags_on_few_cases_or_on_most_read_as_each_line_has_them() {
        for tagged in [1, 3, 9] {
            let tmp = tempfile::tempdir().unwrap();
            let lines: String = (0..10)
                .map(|i| {
                    let tags = match i {
                        i if i >= tagged => String::new(),
                        i if i % 2 == 0 => r#", "tags": ["even", "t"]"#.to_string(),
                        _ => r#", "tags": ["odd"]"#.to_string(),
                    };
                    format!("{{\"id\": \"{}\", \"input\": \"x\"{tags}}}\n", 9 - i)
                })
                .collect();
            write(tmp.path(), "d/cases.jsonl", &lines);
            let set = load(tmp.path());
            let dense = matches!(set.cases.store.tags, super::Tags::Dense(_));
            assert_eq!(dense, tagged > 5, "{tagged} tagged");
            for (i, head) in set.cases.heads().enumerate() {
                assert_eq!(head.tags, set.cases.get(i).unwrap().tags, "{tagged}: {i}");
            }
            let even = select(
                &set,
                &Selection {
                    tags: vec!["t".into()],
                    ..Default::default()
                },
            )
            .unwrap();
            let ids: Vec<&str> = even.heads().map(|h| h.id).collect();
            let want: Vec<String> = (0..tagged)
                .rev()
                .filter(|i| i % 2 == 0)
                .map(|i| (9 - i).to_string())
                .collect();
            assert_eq!(ids, want, "{tagged} tagged");
        }
    }

    #[test]
    fn folder_cases_and_two_files_in_one_dataset_interleave_by_id() {
        let tmp = tempfile::tempdir().unwrap();
        let ds = tmp.path().join("evals/datasets/d");
        for (variant, text) in [("b", "folder b"), ("e", "folder e")] {
            std::fs::create_dir_all(ds.join("cases").join(variant)).unwrap();
            std::fs::write(ds.join("cases").join(variant).join("input.txt"), text).unwrap();
        }
        write(
            tmp.path(),
            "d/one.jsonl",
            "{\"id\": \"d\", \"input\": \"one d\"}\n\n{\"id\": \"a\", \"input\": \"one a\", \"tags\": [\"t\"]}\n",
        );
        write(
            tmp.path(),
            "d/two.jsonl",
            "{\"id\": \"c\", \"input\": \"two c\"}\n{\"id\": \"f\", \"input\": \"two f\"}\n",
        );
        let set = load(tmp.path());
        let got: Vec<String> = set
            .cases
            .heads()
            .map(|h| {
                let file = h.source.strip_prefix(&ds).unwrap().display().to_string();
                format!("{} {} {file} {:?} {:?}", h.id, h.variant, h.line, h.tags)
            })
            .collect();
        assert_eq!(
            got,
            [
                r#"a a one.jsonl Some(3) ["t"]"#,
                "b b cases/b/input.txt None []",
                "c c two.jsonl Some(1) []",
                "d d one.jsonl Some(1) []",
                "e e cases/e/input.txt None []",
                "f f two.jsonl Some(2) []",
            ]
        );
        let inputs: Vec<String> = set
            .cases
            .iter()
            .map(|c| c.unwrap().input.as_text().to_string())
            .collect();
        assert_eq!(
            inputs,
            ["one a", "folder b", "two c", "one d", "folder e", "two f"]
        );
        // A duplicate across the two files and the folder is named where each loaded.
        write(
            tmp.path(),
            "d/two.jsonl",
            "{\"id\": \"c\", \"input\": \"two c\"}\n{\"id\": \"e\", \"input\": \"two e\"}\n{\"id\": \"d\", \"input\": \"two d\"}\n",
        );
        let e = load_cases(&tmp.path().join("evals"), tmp.path(), tmp.path())
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "duplicate case id 'e' in dataset 'd': evals/datasets/d/cases/e/input.txt and evals/datasets/d/two.jsonl:2; give one of them another id"
        );
    }

    #[test]
    fn a_permutation_applied_by_swaps_puts_each_item_where_its_order_says() {
        let items: Vec<u32> = (0..50).map(|i| i * 7 % 50 + 100).collect();
        let order: Vec<u32> = (0..50).map(|i| (i * 13 + 5) % 50).collect();
        let want: Vec<u32> = order.iter().map(|&j| items[j as usize]).collect();
        let (mut got, mut o) = (items.clone(), order.clone());
        super::permute(&mut o, |a, b| got.swap(a, b));
        assert_eq!(got, want);
        let mut none: Vec<u32> = Vec::new();
        super::permute(&mut none, |_, _| unreachable!());
    }
}
