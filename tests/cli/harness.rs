//! A builder for one `evals` invocation in a temp project (after ripgrep's `tests/util.rs`
//! and just's `tests/test.rs`): write files, set env and cwd, run, assert.
//!
//! Assert whole output where it is stable: `stdout_is`/`stderr_is` compare exactly and show a
//! diff (ripgrep's `eqnice!`), and `Run::exact` makes every stream the test leaves unchecked
//! have to be empty (just's `Test`, whose stdout and stderr default to `""`), so a stray line
//! fails. `_has` is for output that is inherently variable.
//!
//! Two rules keep the suite honest on any checkout. A fixture is copied as git has it
//! (`copy_tree`): what a user's demo run left in `fixtures/` (`.evals/`, `evals/results/`,
//! `log/`, `*.partial`, anything `.gitignore` names) never reaches a test, which makes the
//! state it needs itself. And every process a test starts runs under a deadline (`Started`,
//! `Bounded`, `Run::deadline`): past it the process and its process group are killed and the
//! test fails naming itself and the command, so a wedged build fails in seconds, never
//! hangs `cargo test`.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::{BufRead, ErrorKind, Read};
use std::path::{Component, Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

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

    /// Runs git in the project (a test identity, no signing, `main` for a new repository,
    /// the outer checkout's `GIT_DIR` ignored), asserts it succeeded and returns its stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args([
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(self.path())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output_bounded()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).expect("git prints utf-8")
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
    /// How long the process may run before it is killed and the test fails.
    deadline: Duration,
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
        Run {
            cmd,
            exact: false,
            deadline: deadline(),
        }
    }

    /// How long this invocation may run (default [`deadline`]): past it the process is
    /// killed and the test fails, naming itself and the command.
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
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

    /// Starts the process without waiting, its output captured (for concurrent runs);
    /// killed if the test drops it unwaited.
    pub fn spawn(mut self) -> Running {
        let child = self
            .cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn_bounded()
            .expect("spawn evals");
        Running {
            child,
            deadline: self.deadline,
        }
    }

    /// Runs and returns the output, whatever the exit code (stdin is null, as with
    /// `Command::output`); past the deadline the process is killed and the test fails.
    pub fn output(mut self) -> Done {
        let out: Output = self.cmd.output_within(self.deadline).expect("spawn evals");
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

/// A started `evals` process (killed, with its process group, if dropped unwaited).
pub struct Running {
    child: Started,
    deadline: Duration,
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

    /// Waits for the process (within its deadline) and returns its output.
    pub fn wait(self) -> Done {
        Done::from(self.child.wait_within(self.deadline))
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

/// A copy of the project `from` at `to`, less its `evals/results` and `evals/cassettes`
/// (and whatever [`copy_tree`] never copies).
pub fn copy_dir(from: &Path, to: &Path) {
    copy_tree(from, to, &["evals/results", "evals/cassettes"]);
}

/// A copy of the tree `from` at `to` as git has it, less the paths (relative to `from`)
/// under `skip`. Only what git tracks, or would (not ignored), is copied, and never what
/// evals writes as it runs ([`is_state`]): a demo run in `fixtures/` leaves a history, run
/// snapshots and logs there, which a test must not see. Where the repository is no git
/// checkout (an unpacked `cargo package`, no git), the tree is walked instead, less what
/// its `.gitignore` files name.
pub fn copy_tree(from: &Path, to: &Path, skip: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listing = if from.starts_with(root) {
        static REPO: OnceLock<Option<BTreeSet<PathBuf>>> = OnceLock::new();
        REPO.get_or_init(|| git_listing(root)).as_ref()
    } else {
        None
    };
    match listing {
        Some(files) => copy_listed(root, files, from, to, skip),
        None => copy_walked(
            if from.starts_with(root) { root } else { from },
            from,
            to,
            skip,
        ),
    }
}

/// Whether `rel` (a path inside a project) is what evals writes as it runs: the history
/// (`.evals/`), run snapshots and reports (`evals/results/`), the warnings logs (a `log/`
/// folder outside `evals/`), a killed write's temp file (`*.partial`).
pub fn is_state(rel: &Path) -> bool {
    let parts: Vec<&str> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => p.to_str(),
            _ => None,
        })
        .collect();
    let folders = &parts[..parts.len().saturating_sub(1)];
    let in_evals = |i: usize| parts[..i].contains(&"evals");
    parts.contains(&".evals")
        || parts.windows(2).any(|w| w == ["evals", "results"])
        || folders
            .iter()
            .enumerate()
            .any(|(i, p)| *p == "log" && !in_evals(i))
        || parts.last().is_some_and(|n| n.ends_with(".partial"))
}

/// The files git tracks under `root`, or would track (untracked and not ignored, so a
/// fixture file not yet added still counts), relative to `root`; `None` where `root` is in
/// no git checkout (or one that ignores it) or git cannot run.
pub fn git_listing(root: &Path) -> Option<BTreeSet<PathBuf>> {
    use std::os::unix::ffi::OsStrExt;
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output_within(deadline())
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let files: BTreeSet<PathBuf> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect();
    // Nothing listed: `root` sits in a checkout that ignores it (an unpacked package under
    // `target/package/`), which is no listing of it.
    (!files.is_empty()).then_some(files)
}

/// Copies the files of `listed` (relative to `root`) that are under `from` to `to`.
pub fn copy_listed(root: &Path, listed: &BTreeSet<PathBuf>, from: &Path, to: &Path, skip: &[&str]) {
    let base = from
        .strip_prefix(root)
        .expect("`from` is inside the repository");
    std::fs::create_dir_all(to).unwrap();
    for path in listed {
        let Ok(rel) = path.strip_prefix(base) else {
            continue;
        };
        let src = from.join(rel);
        // Tracked but deleted in the work tree: as git would check it out now, absent.
        if skip.iter().any(|s| rel.starts_with(s)) || is_state(rel) || !src.exists() {
            continue;
        }
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&src, &dest)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", src.display(), dest.display()));
    }
}

/// Copies the tree `from` to `to` without git: every file, less `skip`, [`is_state`] and
/// what the `.gitignore` files from `root` down name (`root` holds `from`).
pub fn copy_walked(root: &Path, from: &Path, to: &Path, skip: &[&str]) {
    let ignores = Gitignores::of(root, from);
    let walk = walkdir::WalkDir::new(from).into_iter().filter_entry(|e| {
        let rel = e.path().strip_prefix(from).unwrap();
        rel.as_os_str().is_empty()
            || !(skip.iter().any(|s| rel.starts_with(s))
                || is_state(rel)
                || ignores.ignored(e.path(), e.file_type().is_dir()))
    });
    for e in walk {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The patterns of the `.gitignore` files that apply to a tree: those from `root` down to
/// it and those inside it. Enough of gitignore's syntax for the fallback copy: `#`
/// comments, `/`-anchored and unanchored patterns, `dir/`; a `!` re-include is not
/// followed (what it names stays out: a test then misses a file, it never sees extra).
struct Gitignores(Vec<(PathBuf, globset::GlobSet, globset::GlobSet)>);

impl Gitignores {
    fn of(root: &Path, tree: &Path) -> Gitignores {
        let mut files: Vec<PathBuf> = tree
            .ancestors()
            .take_while(|d| d.starts_with(root))
            .map(|d| d.join(".gitignore"))
            .collect();
        files.extend(
            walkdir::WalkDir::new(tree)
                .into_iter()
                .flatten()
                .filter(|e| e.file_name() == ".gitignore")
                .map(walkdir::DirEntry::into_path),
        );
        let mut sets = Vec::new();
        for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let (mut any, mut dirs) = (
                globset::GlobSetBuilder::new(),
                globset::GlobSetBuilder::new(),
            );
            for line in text.lines().map(str::trim_end) {
                if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                    continue;
                }
                let (pat, dir_only) = match line.strip_suffix('/') {
                    Some(p) => (p, true),
                    None => (line, false),
                };
                let glob = match pat.strip_prefix('/') {
                    Some(p) => p.to_string(),
                    None if pat.contains('/') => pat.to_string(),
                    None => format!("**/{pat}"),
                };
                let glob = globset::GlobBuilder::new(&glob)
                    .literal_separator(true)
                    .build()
                    .unwrap_or_else(|e| panic!("{}: {line}: {e}", file.display()));
                if dir_only { &mut dirs } else { &mut any }.add(glob);
            }
            let base = file.parent().unwrap().to_path_buf();
            sets.push((base, any.build().unwrap(), dirs.build().unwrap()));
        }
        Gitignores(sets)
    }

    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        self.0.iter().any(|(base, any, dirs)| {
            path.strip_prefix(base)
                .is_ok_and(|rel| any.is_match(rel) || (is_dir && dirs.is_match(rel)))
        })
    }
}

/// How long one process a test starts may run before the harness kills it and fails the
/// test: 120 s, or `EVALS_TEST_DEADLINE` seconds (a slow machine; never needed on CI).
pub fn deadline() -> Duration {
    static DEADLINE: OnceLock<Duration> = OnceLock::new();
    *DEADLINE.get_or_init(|| match std::env::var("EVALS_TEST_DEADLINE") {
        Ok(s) => Duration::from_secs(s.trim().parse().unwrap_or_else(|_| {
            panic!(
                "EVALS_TEST_DEADLINE={s:?}: expected whole seconds, e.g. EVALS_TEST_DEADLINE=300"
            )
        })),
        Err(_) => Duration::from_secs(120),
    })
}

/// The running test's name (libtest names each test's thread after it).
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("an unnamed thread")
        .to_string()
}

/// The text of a caught panic (`std::panic::catch_unwind`'s error).
pub fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    match e.downcast::<String>() {
        Ok(s) => *s,
        Err(e) => e.downcast_ref::<&str>().map_or_else(
            || "a panic without a message".to_string(),
            |s| s.to_string(),
        ),
    }
}

/// The panic of `f`, which must fail (panic) within `limit`: how a test proves that a
/// deadline fires, and in time.
pub fn fails_within(limit: Duration, f: impl FnOnce()) -> String {
    let started = Instant::now();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let elapsed = started.elapsed();
    let text = panic_text(caught.expect_err("it should have failed at its deadline"));
    assert!(
        elapsed < limit,
        "failed after {elapsed:?}, not within {limit:?}: {text}"
    );
    text
}

/// Asserts that the process a deadline's failure names (`(pid N, ...`) is gone: killed
/// and reaped.
pub fn assert_killed(failure: &str) {
    let pid = failure
        .split("(pid ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_else(|| panic!("no pid in {failure:?}"));
    assert!(
        !Path::new("/proc").join(pid).exists(),
        "process {pid} is still there: {failure}"
    );
}

/// `Command` under a deadline: what a test starts is started in a process group of its
/// own, killed whole when it runs late or when the test drops it.
pub trait Bounded {
    /// `Command::output` within [`deadline`]: past it the process group is killed and the
    /// test fails naming itself and the command. Stdin is null, stdout and stderr captured.
    fn output_bounded(&mut self) -> std::io::Result<Output>;
    /// [`Bounded::output_bounded`] within `d`.
    fn output_within(&mut self, d: Duration) -> std::io::Result<Output>;
    /// `Command::spawn`, the child a [`Started`]: killed with its process group when dropped.
    fn spawn_bounded(&mut self) -> std::io::Result<Started>;
}

impl Bounded for Command {
    fn output_bounded(&mut self) -> std::io::Result<Output> {
        self.output_within(deadline())
    }

    fn output_within(&mut self, d: Duration) -> std::io::Result<Output> {
        let child = self
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn_bounded()?;
        Ok(child.wait_within(d))
    }

    fn spawn_bounded(&mut self) -> std::io::Result<Started> {
        Started::spawn(self)
    }
}

/// A process a test started, in a process group of its own (so whatever it starts in turn
/// is killed with it), sent SIGTERM if the thread that started it ends first. Its pipes are read by threads as it writes (no pipe fills up and
/// stalls it); waiting for it takes a deadline; dropped before it exits, it is killed.
pub struct Started {
    pid: u32,
    what: String,
    /// Its stdin, when piped.
    pub stdin: Option<ChildStdin>,
    status: Receiver<std::io::Result<ExitStatus>>,
    exited: bool,
    out: Pipe,
    err: Pipe,
}

/// One output pipe of a [`Started`]: the lines its reader thread sent, and what came so far.
struct Pipe {
    lines: Option<Receiver<Vec<u8>>>,
    got: Vec<u8>,
}

impl Pipe {
    fn read(pipe: Option<impl Read + Send + 'static>) -> Pipe {
        let Some(pipe) = pipe else {
            return Pipe {
                lines: None,
                got: Vec::new(),
            };
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = std::io::BufReader::new(pipe);
            loop {
                let mut line = Vec::new();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Pipe {
            lines: Some(rx),
            got: Vec::new(),
        }
    }

    /// Takes what comes until the pipe closes (true) or `until` (false).
    fn drain(&mut self, until: Instant) -> bool {
        let Some(rx) = &self.lines else {
            return true;
        };
        loop {
            match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(line) => self.got.extend(line),
                Err(RecvTimeoutError::Disconnected) => {
                    self.lines = None;
                    return true;
                }
                Err(RecvTimeoutError::Timeout) => return false,
            }
        }
    }
}

impl Started {
    /// Starts `cmd` in a process group of its own.
    pub fn spawn(cmd: &mut Command) -> std::io::Result<Started> {
        use std::os::unix::process::CommandExt;
        let line = std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let what = match cmd.get_current_dir() {
            Some(dir) => format!("`{line}` (in {})", dir.display()),
            None => format!("`{line}`"),
        };
        // In a group of its own, it no longer gets the terminal's Ctrl-C with `cargo test`:
        // SIGTERM when the thread that started it ends (the test's, or the whole test
        // binary on Ctrl-C), so nothing a test started outlives it.
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.process_group(0).spawn()?;
        let (tx, status) = mpsc::channel();
        let stdin = child.stdin.take();
        let (out, err) = (
            Pipe::read(child.stdout.take()),
            Pipe::read(child.stderr.take()),
        );
        let pid = child.id();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        Ok(Started {
            pid,
            what,
            stdin,
            status,
            exited: false,
            out,
            err,
        })
    }

    pub fn id(&self) -> u32 {
        self.pid
    }

    /// The next line it writes on stdout (empty when stdout closes first), waited for
    /// within `d`: past it the process is killed and the test fails.
    pub fn stdout_line(&mut self, d: Duration) -> String {
        let rx = self.out.lines.as_ref().expect("stdout is piped");
        match rx.recv_timeout(d) {
            Ok(line) => String::from_utf8_lossy(&line).into_owned(),
            Err(RecvTimeoutError::Disconnected) => String::new(),
            Err(RecvTimeoutError::Timeout) => self.overdue(d, "wrote no line on stdout"),
        }
    }

    /// Waits for it to exit and for its pipes to close, within `d` (the test fails past
    /// it, naming itself and the command, the process group killed).
    pub fn wait_within(mut self, d: Duration) -> Output {
        let until = Instant::now() + d;
        let status = match self.status.recv_timeout(d) {
            Ok(status) => status.unwrap_or_else(|e| panic!("wait for {}: {e}", self.what)),
            Err(_) => self.overdue(d, "did not exit"),
        };
        self.exited = true;
        // A process it started may hold its pipes past its exit: bounded too.
        let grace = until.max(Instant::now() + Duration::from_secs(2));
        if !(self.out.drain(grace) && self.err.drain(grace)) {
            self.kill_group(libc::SIGKILL);
            panic!(
                "{}: {} exited ({status}) but its output stayed open: a process it started \
                 still holds its stdout or stderr (its process group is killed now)\n{}",
                test_name(),
                self.what,
                self.so_far()
            );
        }
        Output {
            status,
            stdout: std::mem::take(&mut self.out.got),
            stderr: std::mem::take(&mut self.err.got),
        }
    }

    /// `Child::wait_with_output` within [`deadline`].
    pub fn wait_with_output(self) -> std::io::Result<Output> {
        Ok(self.wait_within(deadline()))
    }

    /// Sends `signal` to its process group.
    fn kill_group(&self, signal: i32) {
        // SAFETY: kill(2) with a negative pid signals that process group, the child's own
        // (process_group(0) at spawn); it has no memory effects.
        unsafe {
            libc::kill(-(self.pid as i32), signal);
        }
    }

    /// Ends a process that ran late: SIGTERM to its group (evals then stops its workers),
    /// SIGKILL 3 s later if it is still there; then fails the test with what it wrote.
    fn overdue(&mut self, d: Duration, what_it_did: &str) -> ! {
        self.kill_group(libc::SIGTERM);
        if self.status.recv_timeout(Duration::from_secs(3)).is_err() {
            self.kill_group(libc::SIGKILL);
            let _ = self.status.recv_timeout(Duration::from_secs(10));
        }
        self.exited = true;
        let grace = Instant::now() + Duration::from_secs(2);
        self.out.drain(grace);
        self.err.drain(grace);
        panic!(
            "{}: {} {what_it_did} within its deadline of {} s, so it was killed (pid {}, \
             and its process group): a hung process fails its test instead of hanging the \
             suite; if it is only slow, give it longer (Run::deadline, or \
             EVALS_TEST_DEADLINE=SECONDS)\n{}",
            test_name(),
            self.what,
            d.as_secs_f64(),
            self.pid,
            self.so_far()
        )
    }

    fn so_far(&self) -> String {
        format!(
            "--- stdout so far\n{}\n--- stderr so far\n{}",
            String::from_utf8_lossy(&self.out.got),
            String::from_utf8_lossy(&self.err.got)
        )
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if self.exited {
            return;
        }
        if self.status.try_recv().is_err() {
            self.kill_group(libc::SIGKILL);
            let _ = self.status.recv_timeout(Duration::from_secs(10));
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

/// The files under `dir`, relative to it.
fn relative_files(dir: &Path) -> BTreeSet<PathBuf> {
    files_under(dir)
        .into_iter()
        .map(|f| f.strip_prefix(dir).unwrap().to_path_buf())
        .collect()
}

#[test]
fn a_fixture_copy_leaves_out_what_a_demo_run_left_in_the_fixture() {
    // The toy fixture as a test gets it: exactly what git has of it (less the cassettes
    // `Project::toy` leaves out, and the state no copy takes, which git lists where it is
    // not ignored: an `x.partial`).
    let clean = Project::toy();
    let want = relative_files(clean.path());
    assert!(
        want.contains(Path::new("evals/.llm-evals.config.yml")),
        "{want:?}"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(tracked) = git_listing(root) {
        let toy: BTreeSet<PathBuf> = tracked
            .iter()
            .filter_map(|f| f.strip_prefix("fixtures/toy").ok())
            .filter(|f| !f.starts_with("evals/cassettes") && !is_state(f))
            .map(Path::to_path_buf)
            .collect();
        assert_eq!(want, toy, "Project::toy() is what git has of fixtures/toy");
    }
    // That copy, used as a user would: `evals check` there, then more of what evals and a
    // killed write leave, and a folder the project's .gitignore names.
    let dirty = clean;
    dirty.evals(&["check"]).ok();
    assert!(dirty.path().join(".evals/history.sqlite3").is_file());
    dirty.write("evals/results/run.json", "{}");
    dirty.write("log/run.warnings.1.log", "noise\n");
    dirty.write("x.partial", "half");
    dirty.write("evals/datasets/.evals-tmp-Ab12cd.partial", "half");
    dirty.write(".gitignore", "/scratch/\n*.bak\n");
    dirty.write("scratch/notes.txt", "mine");
    dirty.write("evals/datasets/old.bak", "mine");
    let mut want = want;
    want.insert(PathBuf::from(".gitignore"));
    // Without git: the walk, less evals' state and what .gitignore names.
    let walked = tempfile::tempdir().unwrap();
    copy_walked(dirty.path(), dirty.path(), walked.path(), &[]);
    assert_eq!(relative_files(walked.path()), want, "copied without git");
    // With git: what it tracks (here: added, not committed) or would track.
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(dirty.path())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .output_bounded()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "evals/.llm-evals.config.yml"]);
    let listed = git_listing(dirty.path()).expect("a git checkout");
    // A folder the checkout ignores (as `target/package/` holds an unpacked package) has
    // no listing: it is walked.
    assert_eq!(git_listing(&dirty.path().join("scratch")), None);
    assert!(
        listed.contains(Path::new(".evals/history.sqlite3")),
        "{listed:?}"
    );
    let copied = tempfile::tempdir().unwrap();
    copy_listed(dirty.path(), &listed, dirty.path(), copied.path(), &[]);
    assert_eq!(relative_files(copied.path()), want, "copied with git");
}

#[test]
fn what_evals_writes_as_it_runs_is_state_and_a_case_named_log_is_not() {
    for state in [
        ".evals/history.sqlite3",
        "evals/results/run.json",
        "log/run.warnings.1.log",
        "tax-intake/log/x.log",
        "cassettes/a/.evals-tmp-Xy12ab.partial",
    ] {
        assert!(is_state(Path::new(state)), "{state}");
    }
    for kept in [
        "evals/datasets/d/cases/log/input.txt",
        "evals/datasets/d/cases/partial/input.txt",
        "evals/log",
        "evals/results.md",
    ] {
        assert!(!is_state(Path::new(kept)), "{kept}");
    }
}

#[test]
fn a_process_past_its_deadline_is_killed_and_fails_its_test_naming_both() {
    // The hang this guards against: a test expecting `evals dashboard` to refuse (exit 2),
    // run where a demo left a history, so the dashboard serves until killed.
    let p = Project::toy();
    p.evals(&["check"]).ok();
    let text = fails_within(Duration::from_secs(15), || {
        p.evals(&["dashboard", "--port", "0"])
            .deadline(Duration::from_secs(3))
            .code(2);
    });
    assert!(
        text.starts_with(
            "harness::a_process_past_its_deadline_is_killed_and_fails_its_test_naming_both: "
        ),
        "{text}"
    );
    assert!(text.contains(" dashboard --port 0` (in "), "{text}");
    assert!(
        text.contains("did not exit within its deadline of 3 s"),
        "{text}"
    );
    assert!(
        text.contains("--- stdout so far\nhttp://127.0.0.1:"),
        "{text}"
    );
    assert_killed(&text);
}

#[test]
fn a_process_dies_with_the_test_thread_that_started_it() {
    // As when `cargo test` is stopped with Ctrl-C: the test binary's threads end, and what
    // they started, in process groups of their own, must not run on.
    let pid = std::thread::spawn(|| {
        let child = Command::new("sleep")
            .arg("600")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn_bounded()
            .expect("sleep");
        let pid = child.id();
        // Not dropped (its drop would kill it): the thread's end alone must.
        std::mem::forget(child);
        pid
    })
    .join()
    .unwrap();
    let gone = (0..500).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        !Path::new("/proc").join(pid.to_string()).exists()
    });
    if !gone {
        // SAFETY: kill(2) only signals; the pid is the sleep's, not yet reaped.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        panic!("sleep {pid} outlived the thread that started it");
    }
}

#[test]
fn ci_run_runs_every_demo_the_readme_offers_before_the_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    // The README's and the book's `cd fixtures/x && evals check` (or `cargo run -- check`),
    // and the README's first command, `cargo run -- compare` at the root.
    let mut docs = readme.clone();
    for page in std::fs::read_dir(root.join("docs/src")).unwrap() {
        let page = page.unwrap().path();
        if page.extension().is_some_and(|e| e == "md") {
            docs.push_str(&std::fs::read_to_string(page).unwrap());
        }
    }
    let cd = regex::Regex::new(r"cd (fixtures/[\w/-]+) && (?:evals|cargo run --) (\w+)").unwrap();
    let mut demos: BTreeSet<String> = cd
        .captures_iter(&docs)
        .map(|c| format!(" {} {}", &c[1], &c[2]))
        .collect();
    assert!(readme.contains("cargo run -- compare "));
    demos.insert(" . compare".to_string());
    demos.insert(" fixtures/toy check".to_string());
    assert!(demos.len() >= 5, "{demos:?}");
    let tests = ci.find("\ncargo test\n").expect(".ci/run runs cargo test");
    // The README's second set-up command is the test command .ci/run runs, as it runs it.
    assert!(
        readme.lines().any(|l| l == "cargo test"
            || l.strip_prefix("cargo test ")
                .is_some_and(|r| r.trim_start().starts_with('#'))),
        "README.md must show `cargo test`, the test command .ci/run runs"
    );
    for demo in &demos {
        let at = ci
            .lines()
            .find(|l| l.starts_with("demo ") && l.ends_with(demo.as_str()))
            .and_then(|l| ci.find(l));
        assert!(
            at.is_some_and(|at| at < tests),
            ".ci/run does not run the docs' demo `evals{demo}` before `cargo test`"
        );
    }
}

/// Every `[[bench]]` of Cargo.toml (divan, `harness = false`) runs in .ci/run in its quick
/// mode, `cargo test --bench NAME` (each bench once, untimed), so a bench that no longer
/// builds or panics fails CI; the figures come from `cargo bench` (bench/RESULTS.md).
#[test]
fn ci_run_runs_every_bench_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let benches: Vec<&str> = manifest
        .split("\n[[bench]]\n")
        .skip(1)
        .map(|section| {
            assert!(section.contains("\nharness = false\n"), "{section}");
            section
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .expect("a [[bench]] has a name")
                .trim_matches('"')
        })
        .collect();
    assert!(benches.contains(&"cassettes"), "{benches:?}");
    for name in benches {
        assert!(root.join(format!("benches/{name}.rs")).is_file(), "{name}");
        assert!(
            ci.lines()
                .any(|l| l.starts_with("cargo test") && l.ends_with(&format!(" --bench {name}"))),
            ".ci/run does not run the bench `{name}` once (`cargo test --bench {name}`)"
        );
    }
}

/// The benchmark scripts are not run by CI (they time release builds): each still parses,
/// `bench/check.sh` times the command CI runs with every report against a `main` baseline
/// (the check job of compare.sh, as `bench/history.sh` does on a grown history), and
/// RESULTS.md keeps the line check.sh writes its table under.
#[test]
fn bench_scripts_parse_and_time_the_check_ci_runs_with_every_report() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bench = root.join("bench");
    let mut scripts = 0;
    for entry in std::fs::read_dir(&bench).unwrap() {
        let path = entry.unwrap().path();
        let checked = match path.extension().and_then(|e| e.to_str()) {
            Some("sh") => Command::new("bash").arg("-n").arg(&path).output(),
            Some("py") => Command::new("python3")
                .args(["-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())"])
                .arg(&path)
                .output(),
            _ => continue,
        }
        .unwrap();
        assert!(
            checked.status.success(),
            "{} does not parse: {}",
            path.display(),
            String::from_utf8_lossy(&checked.stderr)
        );
        scripts += 1;
    }
    assert!(scripts >= 9, "{scripts} scripts under bench/");
    let check = std::fs::read_to_string(bench.join("check.sh")).unwrap();
    assert!(
        check.contains("JOBS=check bash bench/compare.sh"),
        "{check}"
    );
    for script in ["compare.sh", "history.sh"] {
        let text = std::fs::read_to_string(bench.join(script)).unwrap();
        assert!(
            text.contains(r#""check", "--branch", "pr", "--baseline", "main""#),
            "bench/{script} does not time `check --branch pr --baseline main`"
        );
        for flag in ["--json", "--junit", "--markdown", "--html", "--diff"] {
            assert!(
                text.contains(&format!("(\"{flag}\", ")),
                "bench/{script}: {flag}"
            );
        }
    }
    let marker = "<!-- bench/check.sh writes below this line, newest first -->";
    assert!(check.contains(marker));
    let results = std::fs::read_to_string(bench.join("RESULTS.md")).unwrap();
    assert!(
        results.contains(marker),
        "bench/RESULTS.md lost check.sh's marker"
    );
}
