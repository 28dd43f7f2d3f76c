//! The exec adapter: your production prompt builder and parser, in any language.
//!
//! `evals` starts `command` (an argv list, never a shell string) as up to `-p` worker
//! processes per experiment. A worker reads one JSON line per case on stdin,
//! `{"id", "case": {"id", "dataset", "variant", "input", "metadata"}, "model": {"id",
//! "provider", "effort", "temperature", "max_tokens"}}` (never the expected answer), and
//! prints one JSON line back, `{"id", "output", "raw", "usage", "error"}`. It calls the model
//! through the gateway (`OPENAI_BASE_URL`, with its own token as `OPENAI_API_KEY`). A worker
//! that exits, answers with something that is not the protocol, or takes too long is an
//! error of that case (no score) and is replaced for the next case.
//!
//! # What a worker gets
//!
//! Its environment is built from nothing (`env_clear`), never inherited whole, so keys in
//! evals' environment (`GITHUB_TOKEN`, `ANTHROPIC_API_KEY`, the suite's own) stay there:
//!
//! - from evals' environment, when set: [`BASIC_ENV`] (`PATH`, `HOME`, `USER`, `LOGNAME`,
//!   `SHELL`, `LANG`, `LANGUAGE`, `TZ`, `TMPDIR`, `TERM`, the XDG base folders; `SYSTEMROOT`
//!   and friends on Windows) and every `LC_*`, none of them secret-named;
//! - the variables the config names in `adapter.pass_env` (copied from evals' environment
//!   when set; never one of the suite's API key variables);
//! - the adapter's `env:` map, as written;
//! - `OPENAI_BASE_URL` and `EVALS_BASE_URL` (the gateway) and `OPENAI_API_KEY` (the
//!   worker's own gateway token, worthless anywhere else); for Anthropic's and Google's
//!   SDKs the same token as `ANTHROPIC_API_KEY` and `GEMINI_API_KEY`, and the gateway's
//!   root as `ANTHROPIC_BASE_URL` and `GOOGLE_GEMINI_BASE_URL`.
//!
//! Its stderr is piped, read line by line, scrubbed of every known secret and credential
//! pattern ([`crate::secrets::scrub`]) and written to the run's
//! `log/<command>.warnings.<stamp>.log` (or evals' own stderr while progress bars draw,
//! which is that same log). It runs in its own process group; when it stops (the end of its
//! experiment, a crash, a timeout, Ctrl-C) that group is killed, and on Linux everything it
//! started is found and ended too, even a descendant that left the group with `setsid`
//! (see `reap.rs`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use super::gateway::{Binding, Gateway, Spent};
use super::{Adapter, AdapterSession, BoxFuture, CaseModel};
use crate::results::{CaseError, CaseErrorKind, Reply, Usage};
use crate::suite::{Case, Contender, Suite};

/// Variables a worker gets from evals' environment whatever the config says (when set),
/// besides every `LC_*`: where programs and home are, who it runs as, locale, time zone,
/// temp folder, terminal type. None holds a secret.
pub const BASIC_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TERM",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    #[cfg(windows)]
    "SYSTEMROOT",
    #[cfg(windows)]
    "SYSTEMDRIVE",
    #[cfg(windows)]
    "WINDIR",
    #[cfg(windows)]
    "COMSPEC",
    #[cfg(windows)]
    "PATHEXT",
    #[cfg(windows)]
    "TEMP",
    #[cfg(windows)]
    "TMP",
    #[cfg(windows)]
    "USERPROFILE",
    #[cfg(windows)]
    "APPDATA",
    #[cfg(windows)]
    "LOCALAPPDATA",
];

/// Where workers' stderr goes, scrubbed line by line; `shown` is how messages name it.
#[derive(Debug, Clone)]
pub enum StderrTo {
    /// Appended to this file.
    File { path: PathBuf, shown: String },
    /// Written to evals' own stderr (the terminal, or the warnings log while progress bars
    /// draw).
    Stderr { shown: String },
}

/// How to start workers.
#[derive(Debug, Clone)]
pub struct ExecAdapter {
    /// The worker's argv (`adapter.command`), the program first; never a shell string.
    pub command: Vec<String>,
    /// Variables set for every worker (`adapter.env`), as written: over those copied from
    /// evals' environment, under the gateway's three.
    pub env: BTreeMap<String, String>,
    /// Variables copied from evals' environment (`adapter.pass_env`).
    pub pass_env: Vec<String>,
    /// Workers run here (the project folder), so relative paths in `command` work.
    pub cwd: PathBuf,
    /// Where workers' stderr goes.
    pub stderr: StderrTo,
    /// How long a worker may take over one case.
    pub case_timeout: Duration,
    /// The stderr readers of stopped workers, still writing what was left in the pipe.
    readers: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>,
    /// The run's gateway, once [`Adapter::start_run`] started it.
    gateway: std::sync::OnceLock<Arc<Gateway>>,
}

impl ExecAdapter {
    /// The adapter for a suite's `adapter: { kind: exec }`: checks that `command` names a
    /// program here (on `PATH`, or a file relative to the project folder) and sends the
    /// workers' stderr to `log/adapter.<stamp>.log`. Starts nothing yet.
    pub fn new(
        suite: &Suite,
        command: &[String],
        env: &BTreeMap<String, String>,
        pass_env: &[String],
    ) -> crate::error::Result<ExecAdapter> {
        if command.is_empty() || command[0].trim().is_empty() {
            return Err(crate::error::Error::Config(format!(
                "{}: adapter.command is empty: give the program and its arguments as a list, e.g. [python3, evals/adapter.py]",
                suite.display_path
            )));
        }
        let program = &command[0];
        let found = if program.contains('/') {
            suite.project_dir.join(program).is_file()
        } else {
            std::env::var_os("PATH")
                .map(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
                .unwrap_or(false)
        };
        if !found {
            return Err(crate::error::Error::Config(format!(
                "{}: adapter.command: '{program}' is not a program here (not on PATH, nor a file relative to {}); install it or fix the path",
                suite.display_path,
                suite.project_dir.display()
            )));
        }
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let log = PathBuf::from("log").join(format!("adapter.{stamp}.log"));
        Ok(ExecAdapter {
            command: command.to_vec(),
            env: env.clone(),
            pass_env: pass_env.to_vec(),
            cwd: suite.project_dir.clone(),
            stderr: StderrTo::File {
                path: suite.project_dir.join(&log),
                shown: log.display().to_string(),
            },
            case_timeout: Duration::from_secs_f64(
                suite.config.defaults.timeout.unwrap_or(120.0) * 5.0,
            ),
            readers: Arc::default(),
            gateway: std::sync::OnceLock::new(),
        })
    }

    /// A worker's whole environment, from evals' own (`parent`): see the module docs.
    pub(crate) fn worker_env(
        &self,
        parent: impl IntoIterator<Item = (OsString, OsString)>,
        base_url: &str,
        token: &str,
    ) -> BTreeMap<OsString, OsString> {
        let mut out: BTreeMap<OsString, OsString> = parent
            .into_iter()
            .filter(|(k, _)| {
                k.to_str().is_some_and(|k| {
                    let basic = BASIC_ENV.contains(&k) || k.starts_with("LC_");
                    (basic && !crate::secrets::is_secret_name(k))
                        || self.pass_env.iter().any(|p| p == k)
                })
            })
            .collect();
        out.extend(
            self.env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        // Anthropic's and Google's SDKs add their own `/v1` and `/v1beta` to the root.
        let root = base_url.strip_suffix("/v1").unwrap_or(base_url);
        for (k, v) in [
            ("OPENAI_BASE_URL", base_url),
            ("EVALS_BASE_URL", base_url),
            ("OPENAI_API_KEY", token),
            ("ANTHROPIC_BASE_URL", root),
            ("ANTHROPIC_API_KEY", token),
            ("GOOGLE_GEMINI_BASE_URL", root),
            ("GEMINI_API_KEY", token),
        ] {
            out.insert(k.into(), v.into());
        }
        out
    }

    fn spawn(&self, base_url: &str, token: &str) -> Result<Worker, String> {
        let mut cmd = Command::new(&self.command[0]);
        cmd.args(&self.command[1..])
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .env_clear()
            .envs(self.worker_env(std::env::vars_os(), base_url, token));
        // Its own process group, so everything it starts can be stopped with it.
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "adapter: cannot start {:?}: {e}; check adapter.command (it runs from {})",
                self.command,
                self.cwd.display()
            )
        })?;
        #[cfg(target_os = "linux")]
        let ident = child.id().and_then(super::reap::started);
        let stdin = child.stdin.take().ok_or("adapter: no stdin")?;
        let stdout = child.stdout.take().ok_or("adapter: no stdout")?;
        let stderr = child.stderr.take().ok_or("adapter: no stderr")?;
        let (sink, shown) = self.sink();
        let written = Arc::new(AtomicUsize::new(0));
        Ok(Worker {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            token: token.to_string(),
            reader: Some(tokio::spawn(forward_stderr(stderr, sink, written.clone()))),
            stderr_lines: written,
            stderr_shown: shown,
            readers: self.readers.clone(),
            #[cfg(target_os = "linux")]
            ident,
        })
    }

    /// Where one worker's stderr lines go, and how messages name it.
    fn sink(&self) -> (Sink, String) {
        match &self.stderr {
            StderrTo::Stderr { shown } => (Sink::Stderr, shown.clone()),
            StderrTo::File { path, shown } => {
                let file =
                    std::fs::create_dir_all(path.parent().unwrap_or(&self.cwd)).and_then(|_| {
                        std::fs::OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(path)
                    });
                match file {
                    Ok(f) => (Sink::File(f), shown.clone()),
                    // Not lost: evals' own stderr, named as such.
                    Err(e) => (
                        Sink::Stderr,
                        format!("evals' stderr ({shown} could not be opened: {e})"),
                    ),
                }
            }
        }
    }

    /// Ends what is left of the run's workers: on Linux, every descendant evals adopted
    /// (see `reap.rs`); then waits (two seconds at most) for the stderr readers to write
    /// the last lines. Call once every worker is gone, before the run reports.
    pub async fn finish(&self) {
        #[cfg(target_os = "linux")]
        super::reap::sweep();
        let readers = std::mem::take(
            &mut *self
                .readers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        for r in readers {
            let _ = tokio::time::timeout_at(deadline, r).await;
        }
    }
}

impl Adapter for ExecAdapter {
    fn runs_workers(&self) -> bool {
        true
    }

    fn route_stderr(&mut self, to: StderrTo) {
        self.stderr = to;
    }

    fn start_run(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async {
            let gateway = Gateway::start()
                .await
                .map_err(|e| format!("cannot start the adapter gateway on 127.0.0.1: {e}"))?;
            let _ = self.gateway.set(Arc::new(gateway));
            Ok(())
        })
    }

    /// An experiment's workers: at most `-p`, reused case after case, stopped when the
    /// session is dropped.
    fn start(self: Arc<Self>) -> Arc<dyn AdapterSession> {
        let gateway = self.gateway.get().cloned();
        Arc::new(ExecSession {
            adapter: self,
            gateway,
            pool: Pool::default(),
        })
    }

    fn finish_run(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.finish())
    }
}

/// One experiment of an exec adapter: its idle workers and the run's gateway.
struct ExecSession {
    adapter: Arc<ExecAdapter>,
    gateway: Option<Arc<Gateway>>,
    pool: Pool,
}

impl AdapterSession for ExecSession {
    /// One case through a worker: bind the worker's token to this case's contender and
    /// cassette session, hand it the case, read its answer. `Err` is an error of the case
    /// (a crash, a transport failure or a cassette miss below the gateway).
    fn answer<'a>(
        &'a self,
        model: CaseModel<'a>,
    ) -> BoxFuture<'a, Result<super::Answer, CaseError>> {
        Box::pin(async move {
            let Some(gateway) = &self.gateway else {
                return Err(CaseError::new(
                    CaseErrorKind::Other,
                    "the exec adapter has no gateway in this run",
                ));
            };
            let (contender, case) = (model.contender, model.case);
            let adapter_error = |e: String| CaseError::new(CaseErrorKind::Adapter, e);
            let session = Arc::new(model.open().map_err(CaseError::from)?);
            let mut worker = self
                .pool
                .take(&self.adapter, &gateway.base_url())
                .await
                .map_err(adapter_error)?;
            let spent = Arc::new(std::sync::Mutex::new(Spent::default()));
            gateway.bind(
                &worker.token,
                Binding {
                    contender: contender.clone(),
                    case: case.clone(),
                    provider: model.provider.clone(),
                    session: session.clone(),
                    api_key: model.api_key.clone(),
                    pricing: model.pricing,
                    spent: spent.clone(),
                },
            );
            let answer = worker.ask(case, contender, self.adapter.case_timeout).await;
            gateway.unbind(&worker.token);
            if answer.is_ok() {
                self.pool.put(worker).await;
            }
            let spent = spent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let finished = match Arc::try_unwrap(session) {
                Ok(s) => s.finish().map(|_| ()).map_err(CaseError::from),
                Err(_) => Err(adapter_error(
                    "adapter: answered while one of its calls was still in flight".to_string(),
                )),
            };
            let mut reply = answer?;
            if let Some(e) = spent.error {
                return Err(e);
            }
            finished?;
            if spent.calls > 0 {
                // What the gateway measured (the recording's figures on replay), not what
                // the adapter says it spent.
                reply.usage = spent.usage;
            }
            Ok(super::Answer {
                reply,
                latency_s: (spent.calls > 0).then_some(spent.latency_s),
            })
        })
    }
}

/// Where a worker's stderr lines are written.
enum Sink {
    File(std::fs::File),
    Stderr,
}

impl Sink {
    fn write(&mut self, line: &[u8]) {
        // One write per line, so lines of workers sharing the log never interleave. A
        // write that fails (a full disk) loses that line only.
        let _ = match self {
            Sink::File(f) => f.write_all(line),
            Sink::Stderr => std::io::stderr().lock().write_all(line),
        };
    }
}

/// The longest stderr line scrubbed whole; a longer one is written in pieces this long.
const MAX_LINE: u64 = 1 << 20;

/// Copies a worker's stderr to `sink` line by line, each scrubbed of secrets, until the
/// pipe closes (the worker and everything it started are gone). A last line without a
/// newline is written with one. Counts the lines in `written`.
async fn forward_stderr(stderr: ChildStderr, mut sink: Sink, written: Arc<AtomicUsize>) {
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut buf)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        let text = String::from_utf8_lossy(&buf);
        let mut line = crate::secrets::scrub(&text).into_owned();
        line.push('\n');
        sink.write(line.as_bytes());
        written.fetch_add(1, Ordering::SeqCst);
    }
}

/// One worker process and its gateway token.
pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    pub token: String,
    /// The task copying its stderr, until it is done.
    reader: Option<JoinHandle<()>>,
    stderr_lines: Arc<AtomicUsize>,
    /// Where its stderr goes, as messages name it.
    stderr_shown: String,
    /// The adapter's readers of stopped workers (this one's joins them when it stops).
    readers: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>,
    #[cfg(target_os = "linux")]
    ident: Option<super::reap::Ident>,
}

/// The idle workers of one experiment; at most `-p` exist, since at most `-p` cases run.
pub struct Pool {
    idle: Mutex<Vec<Worker>>,
}

impl Default for Pool {
    fn default() -> Self {
        Pool {
            idle: Mutex::new(Vec::new()),
        }
    }
}

impl Pool {
    /// An idle worker, or a new one.
    pub async fn take(&self, adapter: &ExecAdapter, base_url: &str) -> Result<Worker, String> {
        if let Some(w) = self.idle.lock().await.pop() {
            return Ok(w);
        }
        let token = format!("evals-{}", uuid::Uuid::now_v7().simple());
        adapter.spawn(base_url, &token)
    }

    /// Back to the pool after a clean answer (a broken worker is dropped, which kills it).
    pub async fn put(&self, w: Worker) {
        self.idle.lock().await.push(w);
    }
}

/// What a worker prints for a case.
#[derive(Debug, Deserialize)]
struct Answer {
    id: Value,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<String>,
}

/// The line a worker reads for a case: never the expected answer.
pub fn request_line(case: &Case, contender: &Contender) -> String {
    json!({
        "id": case.key(),
        "case": {
            "id": case.id,
            "dataset": case.dataset,
            "variant": case.variant,
            "input": case.input.to_value(),
            "metadata": case.metadata,
        },
        "model": {
            "id": contender.info.id,
            "provider": contender.info.provider,
            "effort": contender.info.effort,
            "temperature": contender.temperature,
            "max_tokens": contender.info.max_tokens,
        },
    })
    .to_string()
}

impl Drop for Worker {
    /// Stops the worker and everything it started: at the end of an experiment, after a
    /// crash or a timeout, and on Ctrl-C. Its stderr reader finishes on its own (the pipe
    /// closes once they are all gone) and is joined by [`ExecAdapter::finish`].
    fn drop(&mut self) {
        self.kill_all();
        if let Some(r) = self.reader.take() {
            self.readers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(r);
        }
    }
}

impl Worker {
    /// Sends a case and reads the answer. `Err` is a crashed or broken worker (an error of
    /// the case of kind `adapter`) or one that gave no answer in time (`timeout`). An
    /// answer with `error` is the model's failure (scored 0).
    pub async fn ask(
        &mut self,
        case: &Case,
        contender: &Contender,
        timeout: Duration,
    ) -> Result<Reply, CaseError> {
        let broken = |e: String| CaseError::new(CaseErrorKind::Adapter, e);
        let line = request_line(case, contender);
        let write = async {
            self.stdin.write_all(line.as_bytes()).await?;
            self.stdin.write_all(b"\n").await?;
            self.stdin.flush().await
        };
        if let Err(e) = write.await {
            return Err(broken(
                self.crashed(&format!("could not write the case to the adapter: {e}"))
                    .await,
            ));
        }
        // The worker's exit is watched, not only its output: a child it started (and that
        // outlives it) holds the pipe open, and the crash would wait for the timeout.
        // Closed output wins a tie (`biased`): a worker's files close before it exits.
        let read = tokio::time::timeout(timeout, async {
            tokio::select! {
                biased;
                line = self.lines.next_line() => (line, false),
                _ = self.child.wait() => {
                    // An answer printed just before exiting is still read.
                    let line = tokio::time::timeout(
                        Duration::from_millis(200),
                        self.lines.next_line(),
                    )
                    .await
                    .unwrap_or(Ok(None));
                    (line, true)
                }
            }
        })
        .await;
        let text = match read {
            Err(_) => {
                let stderr = self.stop().await;
                return Err(CaseError::new(
                    CaseErrorKind::Timeout,
                    format!(
                        "adapter: no answer within {}s; it was stopped ({stderr})",
                        timeout.as_secs()
                    ),
                ));
            }
            Ok((Err(e), _)) => {
                return Err(broken(
                    self.crashed(&format!("could not read the adapter's answer: {e}"))
                        .await,
                ));
            }
            Ok((Ok(None), false)) => {
                return Err(broken(self.crashed("the adapter closed its output").await));
            }
            Ok((Ok(None), true)) => {
                return Err(broken(self.crashed("the adapter exited").await));
            }
            Ok((Ok(Some(t)), _)) => t,
        };
        let answer: Answer = serde_json::from_str(&text).map_err(|e| {
            // Scrubbed before it is cut: a key across the cut would keep its first half.
            let shown: String = crate::secrets::scrub(&text).chars().take(120).collect();
            broken(format!(
                "adapter: its answer is not the protocol's JSON line ({e}): {shown}"
            ))
        })?;
        let wanted = case.key();
        if answer.id.as_str() != Some(wanted.as_str()) {
            return Err(broken(format!(
                "adapter: answered id {} for case {wanted}",
                answer.id
            )));
        }
        Ok(Reply {
            output: answer.output,
            raw: answer.raw,
            error: answer.error,
            usage: answer.usage.unwrap_or_default(),
        })
    }

    async fn crashed(&mut self, what: &str) -> String {
        let status = match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(Ok(s)) => format!(" ({s})"),
            _ => String::new(),
        };
        let stderr = self.stop().await;
        format!("adapter crashed: {what}{status}; {stderr}")
    }

    /// Stops the worker and what it started, lets its stderr reader write the last lines
    /// (a second at most), and says where they went.
    async fn stop(&mut self) -> String {
        self.kill_all();
        if let Some(r) = self.reader.as_mut()
            && tokio::time::timeout(Duration::from_secs(1), r)
                .await
                .is_ok()
        {
            self.reader = None;
        }
        match self.stderr_lines.load(Ordering::SeqCst) {
            0 => "it wrote nothing on stderr".to_string(),
            n => format!(
                "its stderr ({}) went to {}",
                crate::text::plural(n, "line", "lines"),
                self.stderr_shown
            ),
        }
    }

    /// Kills the worker's process group and, on Linux, its whole lineage (`reap.rs`).
    fn kill_all(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(ident) = self.ident {
            super::reap::stop(ident, &self.token);
            return;
        }
        #[cfg(unix)]
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) with a negative pid signals that process group; it has no
            // memory effects. The group is the worker's own (process_group(0) at spawn),
            // and it is still alive (tokio has not reaped it: `id()` is `Some`).
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_environment_is_the_allow_list_pass_env_env_and_the_gateway() {
        let adapter = ExecAdapter {
            command: vec!["w".into()],
            env: [("FROM_CONFIG".to_string(), "1".to_string())].into(),
            pass_env: vec!["MY_SETTING".into()],
            cwd: PathBuf::from("."),
            stderr: StderrTo::Stderr {
                shown: "the terminal".into(),
            },
            case_timeout: Duration::from_secs(1),
            readers: Arc::default(),
            gateway: std::sync::OnceLock::new(),
        };
        let parent = [
            ("PATH", "/bin"),
            ("LC_ALL", "C"),
            ("LC_SECRET_TOKEN", "x"),
            ("MY_SETTING", "on"),
            ("GITHUB_TOKEN", "t"),
            ("OPENAI_API_KEY", "sk-real"),
            ("UNLISTED", "u"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = adapter.worker_env(parent, "http://127.0.0.1:1/v1", "evals-token");
        let got: Vec<(&str, &str)> = env
            .iter()
            .map(|(k, v)| (k.to_str().unwrap(), v.to_str().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                ("ANTHROPIC_API_KEY", "evals-token"),
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1"),
                ("EVALS_BASE_URL", "http://127.0.0.1:1/v1"),
                ("FROM_CONFIG", "1"),
                ("GEMINI_API_KEY", "evals-token"),
                ("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1"),
                ("LC_ALL", "C"),
                ("MY_SETTING", "on"),
                ("OPENAI_API_KEY", "evals-token"),
                ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
                ("PATH", "/bin"),
            ]
        );
    }
}
