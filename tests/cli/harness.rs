//! A builder for one `evals` invocation in a temp project (after ripgrep's `tests/util.rs`
//! and just's `tests/test.rs`): write files, set env and cwd, run, assert.
//!
//! Assert whole output where it is stable: `stdout_is`/`stderr_is` compare exactly and show a
//! diff (ripgrep's `eqnice!`), and `Run::exact` makes every stream the test leaves unchecked
//! have to be empty (just's `Test`, whose stdout and stderr default to `""`), so a stray line
//! fails. `_has` is for output that is inherently variable.

use std::cell::Cell;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The toy fixture suite shipped in the repo.
pub fn toy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/toy")
}

/// LLMEvalForge's README example as a suite: its dataset and template, the mock provider.
pub fn forge_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/seeds/llmevalforge")
}

/// The first line of stderr of every command on the toy suite: the suite it found.
pub const TOY_FOUND: &str = "suite: toy (evals/.llm-evals.config.yml)\n";

/// The toy suite's warning, on stderr, about the contender its lineup refuses.
pub const TOY_REFUSED: &str =
    "warning: typesafe/jev-latest refused: needs typesafe; this suite produces prompt\n";

/// What a run says on stderr once it is stored in the project's history (`redact_run_ids`).
pub const STORED: &str = "stored run [run id] in .evals/history.sqlite3\n";

/// Environment variables a test must not inherit from the machine running it.
const SCRUBBED: &[&str] = &[
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "TYPESAFE_API_KEY",
    "CI",
    "COLUMNS",
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "GITHUB_SHA",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_ACTIONS",
    "GITHUB_TOKEN",
    "GITHUB_REPOSITORY",
    "GITHUB_EVENT_PATH",
    "GITHUB_API_URL",
    "DATABASE_URL",
    "PGPASSWORD",
    "PGCONNECT_TIMEOUT",
    "EVALS_PG_STATEMENT_TIMEOUT",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_ATTEMPT",
    // A tracker's key would choose it, and send the test's runs to it.
    "BRAINTRUST_API_KEY",
    "BRAINTRUST_API_URL",
    "BRAINTRUST_PROJECT_ID",
    "LOGFIRE_TOKEN",
    "LOGFIRE_BASE_URL",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
];

pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// An empty temp project.
    pub fn new() -> Self {
        Project {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// A temp copy of `fixtures/toy`.
    pub fn toy() -> Self {
        let p = Project::new();
        copy_dir(&toy_dir(), p.path());
        p
    }

    /// A temp copy of `fixtures/seeds/llmevalforge` (LLMEvalForge's example project).
    pub fn forge() -> Self {
        let p = Project::new();
        copy_dir(&forge_dir(), p.path());
        p
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `contents` to `rel` (creating folders).
    pub fn file(self, rel: &str, contents: &str) -> Self {
        self.write(rel, contents);
        self
    }

    pub fn write(&self, rel: &str, contents: &str) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }

    pub fn dir(self, rel: &str) -> Self {
        std::fs::create_dir_all(self.path().join(rel)).unwrap();
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// The `suite:` line commands print first for a suite at `evals/` with no `suite:` name
    /// (then named after the project's folder, a temp dir's random name here).
    pub fn found(&self) -> String {
        let name = self.path().file_name().unwrap().to_string_lossy();
        format!("suite: {name} (evals/.llm-evals.config.yml)\n")
    }

    /// An `evals` invocation with this project as cwd.
    pub fn evals(&self, args: &[&str]) -> Run {
        Run::new(self.path(), args)
    }
}

pub struct Run {
    cmd: Command,
    exact: bool,
}

impl Run {
    pub fn new(cwd: &Path, args: &[&str]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_evals"));
        cmd.args(args).current_dir(cwd).env("NO_COLOR", "1");
        for k in SCRUBBED {
            cmd.env_remove(k);
        }
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("EVALS_") {
                cmd.env_remove(k);
            }
        }
        // Retry backoff (1, 2, 4, 8 s) is scaled down so fault tests stay fast.
        cmd.env("EVALS_BACKOFF_SCALE", "0.01");
        Run { cmd, exact: false }
    }

    /// Every output stream the test does not check (`_is`, `_has`) must be empty: checked
    /// when the `Done` is dropped, so a stray line on either stream fails the test.
    pub fn exact(mut self) -> Self {
        self.exact = true;
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.cmd.env(k, v);
        self
    }

    /// One more argument.
    pub fn arg(mut self, arg: &str) -> Self {
        self.cmd.arg(arg);
        self
    }

    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    /// The prepared command (cwd, scrubbed environment), for a test that drives a
    /// long-running process itself (`evals dashboard`).
    pub fn into_command(self) -> Command {
        self.cmd
    }

    /// Starts the process without waiting, its output captured (for concurrent runs).
    pub fn spawn(mut self) -> Running {
        use std::process::Stdio;
        let child = self
            .cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn evals");
        Running { child }
    }

    /// Runs and returns the output, whatever the exit code.
    pub fn output(mut self) -> Done {
        let out: Output = self.cmd.output().expect("spawn evals");
        let mut d = Done::from(out);
        if self.exact {
            d.unchecked.streams = Some([d.stdout.clone(), d.stderr.clone()]);
        }
        d
    }

    /// Runs and asserts the exit code.
    pub fn code(self, want: i32) -> Done {
        let d = self.output();
        assert_eq!(
            d.code, want,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            d.stdout, d.stderr
        );
        d
    }

    pub fn ok(self) -> Done {
        self.code(0)
    }
}

/// A started `evals` process.
pub struct Running {
    child: std::process::Child,
}

impl Running {
    /// Sends SIGINT (what Ctrl-C sends) to the process.
    pub fn interrupt(&self) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -INT {}", self.child.id());
    }

    /// Waits for the process and returns its output.
    pub fn wait(self) -> Done {
        Done::from(self.child.wait_with_output().expect("wait for evals"))
    }
}

#[derive(Debug)]
pub struct Done {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    unchecked: Unchecked,
}

impl From<Output> for Done {
    fn from(out: Output) -> Self {
        Done {
            code: out.status.code().expect("exit code"),
            stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
            stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
            unchecked: Unchecked::default(),
        }
    }
}

const STDOUT: usize = 0;
const STDERR: usize = 1;
const STREAMS: [&str; 2] = ["stdout", "stderr"];

/// Under `Run::exact`, the streams as the process wrote them and which ones the test
/// checked; on drop, an unchecked stream that is not empty fails the test. (Its own copy of
/// the text, so a test may still move `stdout` out of its `Done`.)
#[derive(Debug, Default)]
struct Unchecked {
    streams: Option<[String; 2]>,
    checked: [Cell<bool>; 2],
}

impl Drop for Unchecked {
    fn drop(&mut self) {
        // A failing assertion is already unwinding: a second panic would abort the test binary.
        if std::thread::panicking() {
            return;
        }
        let Some(streams) = &self.streams else {
            return;
        };
        for (i, text) in streams.iter().enumerate() {
            let name = STREAMS[i];
            assert!(
                self.checked[i].get() || text.is_empty(),
                "{name} was left unchecked and is not empty (check it with {name}_is, or \
                 {name}_has where it is inherently variable)\n--- {name}\n{text}"
            );
        }
    }
}

impl Done {
    fn check(&self, stream: usize) {
        self.unchecked.checked[stream].set(true);
    }

    /// Asserts that stdout is exactly `want`, showing a line diff if not.
    pub fn stdout_is(&self, want: &str) -> &Self {
        self.check(STDOUT);
        same("stdout", want, &self.stdout);
        self
    }

    /// Asserts that stderr is exactly `want`, showing a line diff if not.
    pub fn stderr_is(&self, want: &str) -> &Self {
        self.check(STDERR);
        same("stderr", want, &self.stderr);
        self
    }

    /// The same output with each run id (a UUIDv7, new every run) written `[run id]`, for
    /// the `stored run ... in ...` line a run prints.
    pub fn redact_run_ids(mut self) -> Self {
        let id =
            regex::Regex::new(r"\b[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\b")
                .unwrap();
        self.stdout = id.replace_all(&self.stdout, "[run id]").into_owned();
        self.stderr = id.replace_all(&self.stderr, "[run id]").into_owned();
        self
    }

    pub fn stderr_has(&self, s: &str) -> &Self {
        self.check(STDERR);
        holds("stderr", &self.stderr, s, true);
        self
    }

    /// Asserts that stderr does not hold `s`. Not a check of the stream under `Run::exact`:
    /// an absence alone would pass on an empty stream.
    pub fn stderr_lacks(&self, s: &str) -> &Self {
        holds("stderr", &self.stderr, s, false);
        self
    }

    pub fn stdout_has(&self, s: &str) -> &Self {
        self.check(STDOUT);
        holds("stdout", &self.stdout, s, true);
        self
    }

    /// Asserts that stdout does not hold `s` (not a check of the stream, as `stderr_lacks`).
    pub fn stdout_lacks(&self, s: &str) -> &Self {
        holds("stdout", &self.stdout, s, false);
        self
    }

    pub fn first_stderr_line(&self) -> &str {
        self.stderr.lines().next().unwrap_or("")
    }

    /// The cells of the table row whose second cell (after `#`) or first cell is `key`.
    pub fn row(&self, key: &str) -> Vec<String> {
        self.stdout
            .lines()
            .map(cells)
            .find(|c| {
                c.first().map(String::as_str) == Some(key)
                    || c.get(1).map(String::as_str) == Some(key)
            })
            .unwrap_or_else(|| panic!("no row {key:?}\n--- stdout\n{}", self.stdout))
    }

    /// The cell of `key`'s row under column `col`, from the first table holding that row.
    pub fn cell(&self, key: &str, col: &str) -> String {
        let mut header: Option<Vec<String>> = None;
        for line in self.stdout.lines() {
            let c = cells(line);
            if c.is_empty() {
                continue;
            }
            if c.iter().any(|x| x == col) && !c.iter().any(|x| x == key) {
                header = Some(c);
                continue;
            }
            if c.first().map(String::as_str) == Some(key)
                || c.get(1).map(String::as_str) == Some(key)
            {
                let h = header
                    .as_ref()
                    .unwrap_or_else(|| panic!("no header with {col:?}\n{}", self.stdout));
                let i = h.iter().position(|x| x == col).unwrap();
                return c[i].clone();
            }
        }
        panic!("no row {key:?} under {col:?}\n--- stdout\n{}", self.stdout)
    }
}

/// Asserts that the output `stream` is `want`, the failure a unified diff of the lines.
fn same(stream: &str, want: &str, got: &str) {
    if want == got {
        return;
    }
    let diff = similar::TextDiff::from_lines(want, got)
        .unified_diff()
        .context_radius(3)
        .header("want", "got")
        .to_string();
    panic!("{stream} differs from what the test wants\n{diff}\n--- {stream}\n{got}");
}

/// Asserts that the output `stream` (`text`) holds `s`, or (`want` false) does not.
fn holds(stream: &str, text: &str, s: &str, want: bool) {
    let verb = if want { "lacks" } else { "has" };
    assert!(
        text.contains(s) == want,
        "{stream} {verb} {s:?}\n--- {stream}\n{text}"
    );
}

/// The cells of a comfy-table row (`│ a ┆ b │`); empty for borders and other lines.
pub fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    if !t.starts_with('│') {
        return Vec::new();
    }
    t.trim_matches('│')
        .split('┆')
        .map(|s| s.trim().to_string())
        .collect()
}

/// A copy of the project `from` at `to`, less its `evals/results` and `evals/cassettes`.
pub fn copy_dir(from: &Path, to: &Path) {
    copy_tree(from, to, &["evals/results", "evals/cassettes"]);
}

/// A copy of the tree `from` at `to`, less the paths (relative to `from`) under `skip`.
pub fn copy_tree(from: &Path, to: &Path, skip: &[&str]) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(from).unwrap();
        if skip.iter().any(|s| rel.starts_with(s)) {
            continue;
        }
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Every file under `dir`, recursively; none while `dir` does not exist (yet).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| match e {
            Ok(e) => Some(e),
            Err(err) if err.io_error().map(std::io::Error::kind) == Some(ErrorKind::NotFound) => {
                None
            }
            Err(err) => panic!("walk {}: {err}", dir.display()),
        })
        .filter(|e| e.file_type().is_file())
        .map(walkdir::DirEntry::into_path)
        .collect()
}

/// A minimal suite config with a fields scorer over one schema field `answer`.
pub const MINI_SCHEMA: &str = "scorer:\n  kind: fields\n  schema:\n    answer: string\n";

/// A small suite: the fake echo model, a fields scorer over `answer`, prompt adapter.
pub fn mini_config(suite: &str) -> String {
    format!(
        "suite: {suite}\nrequest_types: [prompt]\nadapter: {{ kind: prompt, user: \"{{{{ input }}}}\", json: true }}\n{MINI_SCHEMA}fake:\n  models: [echo]\n"
    )
}

/// One JSONL case the echo model answers right.
pub const MINI_CASES: &str = r#"{"id": "one", "input": "say {\"answer\": \"x\"}", "expected": {"answer": "x"}}
"#;

/// A project with the mini suite `suite`, `extra` appended to its config.
pub fn mini_with(suite: &str, extra: &str) -> Project {
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!("{}{extra}", mini_config(suite)),
        )
        .file("evals/datasets/d/cases.jsonl", MINI_CASES)
}

/// A project whose suite `suite` lives at `<prefix>evals/`.
pub fn mini_at(p: Project, prefix: &str, suite: &str) -> Project {
    p.file(
        &format!("{prefix}evals/.llm-evals.config.yml"),
        &mini_config(suite),
    )
    .file(&format!("{prefix}evals/datasets/d/cases.jsonl"), MINI_CASES)
}

#[test]
#[should_panic(expected = "stderr was left unchecked and is not empty")]
fn exact_fails_on_output_the_test_left_unchecked() {
    // `cases` says which suite it found on stderr; checking stdout alone is not enough.
    let d = Project::toy().evals(&["cases"]).exact().ok();
    d.stdout_has("8 cases in 2 datasets\n");
}

#[test]
#[should_panic(expected = "stdout was left unchecked and is not empty")]
fn exact_takes_an_absence_for_no_check() {
    let d = Project::toy().evals(&["cases"]).exact().ok();
    d.stderr_is("suite: toy (evals/.llm-evals.config.yml)\n");
    d.stdout_lacks("no such line");
}

#[test]
#[should_panic(expected = "--- want\n+++ got\n@@ -1 +1,16 @@\n-8 cases in 3 datasets\n+┌─")]
fn stdout_is_shows_a_line_diff() {
    Project::toy()
        .evals(&["cases"])
        .ok()
        .stdout_is("8 cases in 3 datasets\n");
}

#[test]
fn exact_passes_when_every_stream_is_checked_or_empty() {
    let p = Project::toy();
    p.evals(&["verify"])
        .exact()
        .ok()
        .stderr_is("suite: toy (evals/.llm-evals.config.yml)\nverified 8 cases: no problems\n");
}
