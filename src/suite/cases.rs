//! Cases from disk (`datasets/<dataset>/cases/<variant>/[NNN/]input.txt`) and from JSONL.

use std::collections::BTreeMap;
use std::fs::FileType;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::case::{Case, CaseInput};
use super::links::{Found, Links, Step};
use super::stored::{CaseHead, Cases, Clash, Dup, Place, SharedFile, Source, Stamp, Store};
use crate::error::{Error, Result};

/// A case that loaded but has a problem `verify` reports (and `run` refuses).
#[derive(Debug, Clone, PartialEq)]
pub struct CaseProblem {
    /// The case's key, `dataset/id` (`dataset/?` when no case could be named).
    pub case: String,
    /// The file or folder at fault (`expected.json`, a looping symlink).
    pub file: PathBuf,
    /// What `verify` prints: the file, what is wrong, the fix.
    pub message: String,
}

/// Every case of a suite, in dataset then id order, plus the problems found loading them.
#[derive(Debug, Clone, Default)]
pub struct CaseSet {
    /// Held compactly, each parsed when read ([`Cases`]).
    pub cases: Cases,
    /// What loading found wrong: a run of a case with one is refused.
    pub problems: Vec<CaseProblem>,
    /// Every dataset folder found, even those with no case.
    pub datasets: Vec<String>,
}

/// Loads the cases under `<root>/datasets`. `project` is the folder holding `evals/`: a
/// symlink is followed while its target stays inside it (or inside `root`). `base` is what
/// paths in messages are relative to.
pub fn load_cases(root: &Path, project: &Path, base: &Path) -> Result<CaseSet> {
    let links = Links::new(project, root, base);
    let mut set = CaseSet::default();
    let mut store = Store::default();
    let mut above = links.steps_to(root);
    let datasets_dir = root.join("datasets");
    match links.resolve(&datasets_dir, &above, false)? {
        Found::Dir(real) => above.push(Step {
            real,
            shown: datasets_dir.clone(),
        }),
        Found::Loop(message) => {
            set.problems.push(CaseProblem {
                case: "?".into(),
                file: datasets_dir,
                message,
            });
            return Ok(set);
        }
        Found::Absent | Found::File => return Ok(set),
    }
    let mut dataset_dirs: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (path, own) in sorted_entries(&datasets_dir)? {
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        match links.resolve_typed(&path, own, &above, false)? {
            Found::Dir(real) => dataset_dirs.push((path, real)),
            Found::Loop(message) => set.problems.push(CaseProblem {
                case: format!("{}/?", file_name(&path)),
                file: path,
                message,
            }),
            Found::Absent | Found::File => {}
        }
    }
    for (dir, real) in dataset_dirs {
        let dataset = file_name(&dir);
        set.datasets.push(dataset.clone());
        above.push(Step {
            real,
            shown: dir.clone(),
        });
        let cases_dir = dir.join("cases");
        let mut inputs = Vec::new();
        match links.resolve(&cases_dir, &above, false)? {
            Found::Dir(real) => {
                above.push(Step {
                    real,
                    shown: cases_dir.clone(),
                });
                find_inputs(
                    &dataset,
                    &cases_dir,
                    &links,
                    &mut above,
                    &mut inputs,
                    &mut set.problems,
                )?;
                above.pop();
            }
            Found::Loop(message) => set.problems.push(CaseProblem {
                case: format!("{dataset}/?"),
                file: cases_dir.clone(),
                message,
            }),
            Found::Absent | Found::File => {}
        }
        let mut disk = Vec::new();
        load_disk_cases(
            &dataset,
            &cases_dir,
            &inputs,
            &links,
            base,
            &mut disk,
            &mut set.problems,
        )?;
        store.begin(&dataset);
        for c in disk {
            store.push_parsed(c);
        }
        for (file, own) in sorted_entries(&dir)? {
            if file.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            match links.resolve_typed(&file, own, &above, true)? {
                Found::File => load_jsonl(&dataset, &file, base, &mut store)?,
                Found::Loop(message) => set.problems.push(CaseProblem {
                    case: format!("{dataset}/?"),
                    file: file.clone(),
                    message,
                }),
                Found::Absent | Found::Dir(_) => {}
            }
        }
        above.pop();
        // In id order, and a case's duplicates beside it in the order they loaded.
        match store.end() {
            Ok(()) => {}
            Err(Clash::Id(dup)) => return Err(duplicate(&store, &dataset, &dup, base)),
            Err(Clash::File(shared)) => return Err(shared_file(&store, &dataset, &shared, base)),
        }
    }
    store.done().map_err(|e| {
        Error::Failed(format!(
            "cannot keep the suite's case index in a temporary file: {}: {e}; set TMPDIR to a folder it can write to, with room",
            std::env::temp_dir().display()
        ))
    })?;
    set.cases = Cases::new(store);
    Ok(set)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The entries of `dir` with their own types (a symlink's is "symlink"), sorted by name.
fn sorted_entries(dir: &Path) -> Result<Vec<(PathBuf, FileType)>> {
    let mut entries: Vec<(PathBuf, FileType)> = std::fs::read_dir(dir)
        .map_err(|e| Error::input(dir, e))?
        .map(|e| {
            let e = e.map_err(|e| Error::input(dir, e))?;
            let path = e.path();
            let own = e.file_type().map_err(|err| Error::input(&path, err))?;
            Ok((path, own))
        })
        .collect::<Result<_>>()?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// Every `input.txt` below `dir` (whose real folder is the last of `above`), depth first
/// by name, through symlinks that stay inside the project; a loop is a problem.
fn find_inputs(
    dataset: &str,
    dir: &Path,
    links: &Links,
    above: &mut Vec<Step>,
    out: &mut Vec<PathBuf>,
    problems: &mut Vec<CaseProblem>,
) -> Result<()> {
    for (path, own) in sorted_entries(dir)? {
        let is_input = path.file_name().is_some_and(|n| n == "input.txt");
        match links.resolve_typed(&path, own, above, is_input)? {
            Found::File if is_input => out.push(path),
            Found::Dir(real) => {
                above.push(Step {
                    real,
                    shown: path.clone(),
                });
                find_inputs(dataset, &path, links, above, out, problems)?;
                above.pop();
            }
            Found::Loop(message) => problems.push(CaseProblem {
                case: format!("{dataset}/?"),
                file: path,
                message,
            }),
            Found::File | Found::Absent => {}
        }
    }
    Ok(())
}

fn rel(path: &Path, base: &Path) -> String {
    super::discovery::display_path(path, base)
}

/// The cases of the `inputs` found below `cases_dir`: each with the expected.json and
/// metadata.json beside it.
fn load_disk_cases(
    dataset: &str,
    cases_dir: &Path,
    inputs: &[PathBuf],
    links: &Links,
    base: &Path,
    out: &mut Vec<Case>,
    problems: &mut Vec<CaseProblem>,
) -> Result<()> {
    for input_path in inputs {
        let input_path = input_path.as_path();
        let folder = input_path.parent().unwrap_or(cases_dir);
        let folder_name = folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if folder == cases_dir {
            problems.push(CaseProblem {
                case: format!("{dataset}/?"),
                file: input_path.to_path_buf(),
                message: format!(
                    "{}: input.txt must sit in a variant folder (cases/<variant>/input.txt)",
                    rel(input_path, base)
                ),
            });
            continue;
        }
        let (variant, id) = if folder_name.chars().all(|c| c.is_ascii_digit()) {
            let variant = folder
                .parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (variant.clone(), format!("{variant}/{folder_name}"))
        } else {
            (folder_name.clone(), folder_name)
        };
        let key = format!("{dataset}/{id}");
        let input = crate::fs::read_text(input_path, &rel(input_path, base))?;
        if input.trim().is_empty() {
            problems.push(CaseProblem {
                case: key.clone(),
                file: input_path.to_path_buf(),
                message: format!(
                    "{}: input is empty; write the text the model should read",
                    rel(input_path, base)
                ),
            });
        }
        // A case file that is a loop is reported like any other unreadable one.
        let mut beside = |name: &str| -> Result<Option<PathBuf>> {
            let path = folder.join(name);
            Ok(match links.resolve(&path, &[], true)? {
                Found::File => Some(path),
                Found::Loop(message) => {
                    problems.push(CaseProblem {
                        case: key.clone(),
                        file: path,
                        message,
                    });
                    None
                }
                Found::Absent | Found::Dir(_) => None,
            })
        };
        let expected_file = beside("expected.json")?;
        let meta_file = beside("metadata.json")?;
        let expected_path = folder.join("expected.json");
        let expected = if expected_file.is_some() {
            let text = crate::fs::read_text(&expected_path, &rel(&expected_path, base))?;
            match serde_json::from_str::<Value>(&text) {
                Ok(v) => Some(v),
                Err(e) => {
                    problems.push(CaseProblem {
                        case: key.clone(),
                        file: expected_path.clone(),
                        message: format!(
                            "{}:{}:{}: not valid JSON: {}",
                            rel(&expected_path, base),
                            e.line(),
                            e.column(),
                            strip_position(&e.to_string())
                        ),
                    });
                    None
                }
            }
        } else {
            None
        };
        let mut metadata = Map::new();
        let meta_path = folder.join("metadata.json");
        if meta_file.is_some() {
            let text = crate::fs::read_text(&meta_path, &rel(&meta_path, base))?;
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(m)) => metadata = m,
                Ok(_) => {
                    return Err(Error::Config(format!(
                        "{}: metadata.json must hold a JSON object",
                        rel(&meta_path, base)
                    )));
                }
                Err(e) => {
                    return Err(Error::Config(format!(
                        "{}:{}:{}: not valid JSON: {}",
                        rel(&meta_path, base),
                        e.line(),
                        e.column(),
                        strip_position(&e.to_string())
                    )));
                }
            }
        }
        let minimum_scores = take_thresholds(&mut metadata, &meta_path, base)?;
        out.push(Case {
            id,
            dataset: dataset.to_string(),
            variant,
            input: CaseInput::Text(input),
            expected,
            expect: metadata.remove("expect"),
            expected_components: metadata.remove("expected_components"),
            tags: vec![],
            weight: 1.0,
            metadata,
            minimum_scores,
            mock_response: None,
            source: input_path.to_path_buf(),
            line: None,
        });
    }
    Ok(())
}

/// `minimum_scores` in metadata.json are the case's thresholds, not metadata.
fn take_thresholds(
    meta: &mut Map<String, Value>,
    path: &Path,
    base: &Path,
) -> Result<BTreeMap<String, f64>> {
    match meta.remove("minimum_scores") {
        None => Ok(BTreeMap::new()),
        Some(v) => serde_json::from_value(v).map_err(|e| {
            Error::Config(format!(
                "{}: minimum_scores must map metric names to numbers: {e}",
                rel(path, base)
            ))
        }),
    }
}

fn strip_position(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonlCase {
    id: Value,
    input: CaseInput,
    #[serde(default)]
    expected: Option<Value>,
    #[serde(default)]
    expect: Option<Value>,
    #[serde(default)]
    expected_components: Option<Value>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    weight: Option<f64>,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    minimum_scores: BTreeMap<String, f64>,
    #[serde(default)]
    mock_response: Option<Value>,
}

const JSONL_KEYS: &[&str] = &[
    "id",
    "input",
    "expected",
    "expect",
    "expected_components",
    "tags",
    "weight",
    "metadata",
    "minimum_scores",
    "mock_response",
];

fn load_jsonl(dataset: &str, path: &Path, base: &Path, store: &mut Store) -> Result<()> {
    use std::io::BufRead;
    let shown = rel(path, base);
    let file = std::fs::File::open(path).map_err(|e| Error::input(&shown, e))?;
    let stamp = Stamp::of(&file).map_err(|e| Error::input(&shown, e))?;
    // Read a line at a time (the file is never held whole); each line is checked now and
    // only where it is kept: it is read again, and parsed the same way, when a case runs.
    let mut reader =
        std::io::BufReader::new(file.try_clone().map_err(|e| Error::input(&shown, e))?);
    let file_index = store.file(Source {
        path: path.to_path_buf(),
        file,
        stamp,
    });
    let mut buf = Vec::new();
    let mut head = Vec::new();
    let (mut at, mut lineno) = (0u64, 0usize);
    // The first error in a line's content; a file that is not UTF-8 is said instead, as
    // when the file was read whole, so the rest is still read for that.
    let mut first: Option<Error> = None;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::input(&shown, e))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        if head.len() < 2 {
            head.extend(buf.iter().take(2 - head.len()));
        }
        let start = at;
        at += n as u64;
        let mut line = buf.as_slice();
        if let Some(l) = line.strip_suffix(b"\n") {
            line = l.strip_suffix(b"\r").unwrap_or(l);
        }
        let line = match std::str::from_utf8(line) {
            Ok(l) => l,
            Err(e) => {
                return Err(Error::Config(crate::fs::not_utf8_line(
                    &shown,
                    &head,
                    lineno,
                    start,
                    e.valid_up_to(),
                )));
            }
        };
        if first.is_some() || line.trim().is_empty() {
            continue;
        }
        match parse_line(dataset, path, lineno, line, base) {
            Ok(case) => store.push_line(
                file_index,
                &case.id,
                case.tags,
                lineno as u32,
                start,
                line.len() as u64,
            ),
            Err(e) => first = Some(e),
        }
    }
    match first {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The case of line `lineno` (`line`, not blank) of a JSONL `file`, or what is wrong with
/// it. `base` is what the file is named relative to in messages.
pub(super) fn parse_line(
    dataset: &str,
    file: &Path,
    lineno: usize,
    line: &str,
    base: &Path,
) -> Result<Case> {
    let at = format!("{}:{lineno}", rel(file, base));
    let value: Value = serde_json::from_str(line).map_err(|e| {
        Error::Config(format!(
            "{at}:{}: not valid JSON: {}",
            e.column(),
            strip_position(&e.to_string())
        ))
    })?;
    let Value::Object(obj) = &value else {
        return Err(Error::Config(format!(
            "{at}: each line must be a JSON object with an `id` and an `input`"
        )));
    };
    for k in obj.keys() {
        if !JSONL_KEYS.contains(&k.as_str()) {
            let hint = crate::suggest::did_you_mean(k, JSONL_KEYS)
                .map(|s| format!(" (did you mean '{s}'?)"))
                .unwrap_or_else(|| format!(" (known keys: {})", JSONL_KEYS.join(", ")));
            return Err(Error::Config(format!("{at}: unknown key '{k}'{hint}")));
        }
    }
    for required in ["id", "input"] {
        if !obj.contains_key(required) {
            return Err(Error::Config(format!(
                "{at}: missing key '{required}': every case needs an id and an input"
            )));
        }
    }
    let c: JsonlCase =
        serde_json::from_value(value).map_err(|e| Error::Config(format!("{at}: {e}")))?;
    jsonl_case(dataset, file, lineno, c, || at.clone())
}

/// A line read again ([`super::stored`]): straight into its fields, which gives what the
/// checked way above gives for any line that passed it; a line that does not parse this
/// way (a key given twice: the value keeps the last) goes the checked way.
pub(super) fn reparse_line(dataset: &str, file: &Path, lineno: usize, line: &str) -> Result<Case> {
    match serde_json::from_str::<JsonlCase>(line) {
        Ok(c) => jsonl_case(dataset, file, lineno, c, || file.display().to_string()),
        Err(_) => parse_line(dataset, file, lineno, line, Path::new("")),
    }
}

/// The case of a parsed line, or what is wrong with its id or weight.
/// `at` names the line in a message (only made for one).
fn jsonl_case(
    dataset: &str,
    file: &Path,
    lineno: usize,
    c: JsonlCase,
    at: impl Fn() -> String,
) -> Result<Case> {
    let id = match c.id {
        Value::String(s) if !s.trim().is_empty() => s,
        Value::Number(n) => n.to_string(),
        _ => {
            return Err(Error::Config(format!(
                "{}: `id` must be a non-empty string",
                at()
            )));
        }
    };
    if id.split('/').any(|p| p.is_empty() || p == "." || p == "..") {
        return Err(Error::Config(format!(
            "{}: id '{id}' has an empty, `.` or `..` part",
            at()
        )));
    }
    if let Some(w) = c.weight
        && !(w.is_finite() && w > 0.0)
    {
        return Err(Error::Config(format!(
            "{}: weight {w} must be a positive number (it scales the case in the means; leave it out for 1)",
            at()
        )));
    }
    let variant = id.split('/').next().unwrap_or(&id).to_string();
    Ok(Case {
        id,
        dataset: dataset.to_string(),
        variant,
        input: c.input,
        expected: c.expected,
        expect: c.expect,
        expected_components: c.expected_components,
        tags: c.tags,
        weight: c.weight.unwrap_or(1.0),
        metadata: c.metadata,
        minimum_scores: c.minimum_scores,
        mock_response: match c.mock_response {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => Some(other.to_string()),
        },
        source: file.to_path_buf(),
        line: Some(lineno),
    })
}

/// Where a case loaded, as messages name it: `file:line`, or a folder case's file.
fn located(place: Place<'_>, base: &Path) -> String {
    match place {
        Place::Folder(c) => match c.line {
            Some(l) => format!("{}:{l}", rel(&c.source, base)),
            None => rel(&c.source, base),
        },
        Place::Line(file, line) => format!("{}:{line}", rel(&file.path, base)),
    }
}

/// The error of a duplicate id: the first case to have loaded after a case with its id,
/// with that case, each where it loaded.
fn duplicate(store: &Store, dataset: &str, dup: &Dup, base: &Path) -> Error {
    let (first, second) = store.places(dup);
    Error::Config(format!(
        "duplicate case id '{}' in dataset '{dataset}': {} and {}; give one of them another id",
        dup.id,
        located(first, base),
        located(second, base)
    ))
}

/// The error of two ids naming one cassette file (`x\y` and `x/y`): each would overwrite
/// the other's recordings.
fn shared_file(store: &Store, dataset: &str, shared: &SharedFile, base: &Path) -> Error {
    Error::Config(format!(
        "case ids '{}' ({}) and '{}' ({}) in dataset '{dataset}' share one cassette file, \
         <contender>/{}: a `\\` in an id is a `/` there, and an empty level (`//`, a leading \
         or trailing `/`) is left out; give one of them another id",
        shared.ids.0,
        located(store.place(shared.first), base),
        shared.ids.1,
        located(store.place(shared.second), base),
        shared.file.display()
    ))
}

/// `-d`, `-c` and `--tag` selection.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `-d`: only these datasets.
    pub datasets: Vec<String>,
    /// `-c`: only these cases (an id, a variant, an id prefix or `dataset/id`).
    pub cases: Vec<String>,
    /// A case carrying any of these tags is selected.
    pub tags: Vec<String>,
}

impl Selection {
    /// Whether it selects everything.
    pub fn is_empty(&self) -> bool {
        self.datasets.is_empty() && self.cases.is_empty() && self.tags.is_empty()
    }
}

/// Keeps the cases the selection names (sharing the set's cases, not copying them);
/// naming something that does not exist is an error.
pub fn select(set: &CaseSet, sel: &Selection) -> Result<Cases> {
    for d in &sel.datasets {
        if !set.datasets.contains(d) {
            let known: Vec<&str> = set.datasets.iter().map(String::as_str).collect();
            let hint = crate::suggest::did_you_mean(d, &known)
                .map(|s| format!("did you mean '{s}'?"))
                .unwrap_or_else(|| format!("datasets: {}", known.join(", ")));
            return Err(Error::Usage(format!("no dataset '{d}' ({hint})")));
        }
    }
    let matches_case = |c: &CaseHead<'_>, s: &str| {
        let s = s.trim_end_matches('/');
        c.id == s
            || c.variant == s
            || c.id.starts_with(&format!("{s}/"))
            || s.strip_prefix(c.dataset)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|id| id == c.id)
    };
    let picked = set.cases.filter(|c| {
        (sel.datasets.is_empty() || sel.datasets.iter().any(|d| d == c.dataset))
            && (sel.cases.is_empty() || sel.cases.iter().any(|s| matches_case(c, s)))
            && (sel.tags.is_empty() || c.tags.iter().any(|t| sel.tags.contains(t)))
    });
    if picked.is_empty() {
        // Tags are free-form, and any of them selects: one no case carries is named only
        // when nothing was selected at all (the likely typo).
        let mut known: Vec<&str> = set
            .cases
            .heads()
            .flat_map(|c| c.tags.iter().map(String::as_str))
            .collect();
        known.sort_unstable();
        known.dedup();
        if let Some(t) = sel.tags.iter().find(|t| !known.contains(&t.as_str())) {
            let hint = match crate::suggest::did_you_mean(t, &known) {
                Some(s) => format!("did you mean '{s}'? tags: {}", known.join(", ")),
                None if known.is_empty() => {
                    "no case has tags; a JSONL line carries them as \"tags\": [...]".to_string()
                }
                None => format!("tags: {}", known.join(", ")),
            };
            return Err(Error::Usage(format!("no case carries tag '{t}' ({hint})")));
        }
    }
    if !sel.cases.is_empty() {
        for s in &sel.cases {
            if !set.cases.heads().any(|c| matches_case(&c, s)) {
                return Err(Error::Usage(format!(
                    "no case matches '-c {s}'; run `evals cases` to list them"
                )));
            }
        }
    }
    Ok(picked)
}
