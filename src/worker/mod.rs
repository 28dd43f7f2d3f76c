//! Long-lived worker processes speaking JSON lines: the exec adapter's and the exec
//! scorer's. One machinery for both, so both get the same isolation.
//!
//! A worker is started from an argv (never a shell string) with an environment its owner
//! builds from nothing (the allow-list [`BASIC_ENV`] through [`basic_env`], plus what the
//! config names), in its own process group. It reads one line per request on stdin and
//! prints one line back (or answers on its owner's other channel,
//! [`Worker::exchange_with`]); a stdout line that is not the answer is stray output, written
//! where its stderr goes and counted. Its stderr is piped, read line by line, scrubbed of every known
//! secret and credential pattern ([`crate::secrets::scrub`]) and written where [`StderrTo`]
//! says (a line over [`MAX_LINE`] cut there: the rest never reaches a terminal or a log).
//! Its answer lines are read with a bounded buffer: one over [`Launch::max_answer`] (the
//! suite's `cassettes.max_response_bytes`) is a failure of the exchange that names the
//! limit, and at most the limit and one read buffer are ever held. When it stops (its owner is done, a crash, a timeout, Ctrl-C) its group is killed,
//! and on Linux everything it started is found and ended too, even a descendant that left
//! the group with `setsid` (see `reap.rs`).

#[cfg(target_os = "linux")]
pub(crate) mod reap;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

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

/// The part of a worker's environment taken from evals' own (`parent`): [`BASIC_ENV`] and
/// every `LC_*` (never a secret-named one), and the variables `pass_env` names.
pub fn basic_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    pass_env: &[String],
) -> BTreeMap<OsString, OsString> {
    parent
        .into_iter()
        .filter(|(k, _)| {
            k.to_str().is_some_and(|k| {
                let basic = BASIC_ENV.contains(&k) || k.starts_with("LC_");
                (basic && !crate::secrets::is_secret_name(k)) || pass_env.iter().any(|p| p == k)
            })
        })
        .collect()
}

/// Where workers' stderr goes, scrubbed line by line; `shown` is how messages name it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StderrTo {
    /// Appended to this file.
    File {
        /// The file.
        path: PathBuf,
        /// How messages name it (relative to the project).
        shown: String,
    },
    /// Written to evals' own stderr (the terminal, or the warnings log while progress bars
    /// draw).
    Stderr {
        /// How messages name it.
        shown: String,
    },
}

/// How to start one kind of worker: what it runs, where, and where its stderr goes.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Who the workers are in messages: `adapter`, `scorer`.
    pub role: &'static str,
    /// The config key of the argv, for messages: `adapter.command`.
    pub key: &'static str,
    /// The argv, the program first.
    pub command: Vec<String>,
    /// Workers run here (the project folder), so relative paths in `command` work.
    pub cwd: PathBuf,
    /// Where workers' stderr goes.
    pub stderr: StderrTo,
    /// The stderr readers of stopped workers, still writing what was left in the pipe.
    pub readers: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>,
    /// The longest answer line a worker may print, in bytes (the suite's
    /// `cassettes.max_response_bytes`): a longer one fails the exchange.
    pub max_answer: u64,
}

/// A failed exchange with a worker: it crashed or broke the protocol, took too long, or
/// printed an answer over [`Launch::max_answer`]. Either way it was stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// It gave no answer in time.
    pub timeout: bool,
    /// Its answer line was over the limit.
    pub too_large: bool,
    /// What happened, naming the role and where its stderr went.
    pub message: String,
}

impl Launch {
    /// Whether `command` names a program here (on `PATH`, or a file relative to `cwd`);
    /// the message says which and how to fix it.
    pub fn check_program(&self, at: &str) -> Result<(), String> {
        let key = self.key;
        if self.command.is_empty() || self.command[0].trim().is_empty() {
            return Err(format!(
                "{at}: {key} is empty: give the program and its arguments as a list, e.g. [python3, evals/{}.py]",
                self.role
            ));
        }
        let program = &self.command[0];
        let found = if program.contains('/') {
            self.cwd.join(program).is_file()
        } else {
            crate::env::process_var_os(crate::env::EnvVars::PATH)
                .map(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
                .unwrap_or(false)
        };
        if found {
            Ok(())
        } else {
            Err(format!(
                "{at}: {key}: '{program}' is not a program here (not on PATH, nor a file relative to {}); install it or fix the path",
                self.cwd.display()
            ))
        }
    }

    /// Starts a worker with exactly `env` as its environment, which must hold `token` in
    /// `token_var`: its descendants inherit it, and are found by it when it stops.
    pub fn spawn(
        &self,
        env: BTreeMap<OsString, OsString>,
        token_var: &str,
        token: &str,
    ) -> Result<Worker, String> {
        let role = self.role;
        let mut cmd = Command::new(&self.command[0]);
        cmd.args(&self.command[1..])
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .env_clear()
            .envs(env);
        // Its own process group, so everything it starts can be stopped with it.
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "{role}: cannot start {:?}: {e}; check {} (it runs from {})",
                self.command,
                self.key,
                self.cwd.display()
            )
        })?;
        #[cfg(target_os = "linux")]
        let ident = child.id().and_then(reap::started);
        let stdin = child.stdin.take().ok_or(format!("{role}: no stdin"))?;
        let stdout = child.stdout.take().ok_or(format!("{role}: no stdout"))?;
        let stderr = child.stderr.take().ok_or(format!("{role}: no stderr"))?;
        let (sink, shown) = self.sink();
        let (stdout_sink, _) = self.sink();
        let written = Arc::new(AtomicUsize::new(0));
        Ok(Worker {
            role,
            child,
            stdin,
            out: Some(BufReader::new(stdout)),
            pending: Vec::new(),
            max_answer: self.max_answer,
            marker: format!("{token_var}={token}"),
            token: token.to_string(),
            reader: Some(tokio::spawn(forward_stderr(stderr, sink, written.clone()))),
            stderr_lines: written,
            stderr_shown: shown,
            stdout_sink,
            stray: Stray::default(),
            label: String::new(),
            stdout_is_stray: false,
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

    /// Waits (two seconds at most) for the stderr readers of stopped workers to write the
    /// last lines. Call once every worker is gone.
    pub async fn join_readers(&self) {
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

/// Ends whatever evals adopted from its workers since the first started (Linux; see
/// `reap.rs`). Call when a run's workers are all gone.
pub fn sweep() {
    #[cfg(target_os = "linux")]
    reap::sweep();
}

/// Kills every live worker, its process group and what it started (Linux; see `reap.rs`),
/// at once and without waiting: for a process about to exit (the CLI's Ctrl-C watchdog),
/// since a worker's own process group never gets the terminal's Ctrl-C.
pub fn kill_all() {
    #[cfg(target_os = "linux")]
    reap::kill_all();
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

/// The longest stderr line written (64 KiB): a longer one is cut there, said so, and the
/// rest of it read and dropped, so a worker printing a 50 MB line costs neither memory nor
/// a 50 MB line in the terminal or the log.
pub const MAX_LINE: u64 = 64 * 1024;

/// Copies a worker's stderr to `sink` line by line, each scrubbed of secrets, until the
/// pipe closes (the worker and everything it started are gone). A last line without a
/// newline is written with one; a line over [`MAX_LINE`] is cut. Counts the lines in
/// `written`.
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
        let cut = if buf.last() == Some(&b'\n') {
            buf.pop();
            None
        } else if buf.len() as u64 == MAX_LINE {
            // A line of exactly the limit leaves only its newline: nothing was cut.
            Some(skip_line(&mut reader).await).filter(|&more| more > 0)
        } else {
            None
        };
        let text = String::from_utf8_lossy(&buf);
        let mut line = crate::secrets::scrub(&text).into_owned();
        if let Some(more) = cut {
            line.push_str(&format!(
                " [cut: {} more of this line not kept; a worker's stderr line is kept to {}]",
                crate::text::human_bytes(more),
                crate::text::human_bytes(MAX_LINE)
            ));
        }
        line.push('\n');
        sink.write(line.as_bytes());
        written.fetch_add(1, Ordering::SeqCst);
    }
}

/// Reads and drops the rest of a line (its newline included), a buffer at a time; returns
/// how many bytes it dropped.
async fn skip_line(reader: &mut (impl AsyncBufRead + Unpin)) -> u64 {
    let mut dropped = 0u64;
    loop {
        let (used, done) = match reader.fill_buf().await {
            Ok([]) | Err(_) => return dropped,
            Ok(buf) => match buf.iter().position(|b| *b == b'\n') {
                Some(at) => (at + 1, true),
                None => (buf.len(), false),
            },
        };
        reader.consume(used);
        dropped += used as u64 - u64::from(done);
        if done {
            return dropped;
        }
    }
}

/// What reading a worker's answer line found.
enum Read {
    /// A whole line (without its newline; a last line without one too).
    Line(String),
    /// The output closed with nothing more.
    Closed,
    /// The line went past the limit before its end (the rest is left unread).
    TooLong,
}

/// Appends `bytes` to `pending` up to one byte past `max` (enough to know the line is too
/// long), growing it by doubling but never past that: a line near the limit does not hold
/// twice the limit.
fn push_bounded(pending: &mut Vec<u8>, bytes: &[u8], max: u64) {
    let ceiling = usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1);
    let take = bytes.len().min(ceiling.saturating_sub(pending.len()));
    let want = pending.len() + take;
    if want > pending.capacity() {
        let grown = (pending.capacity() * 2).max(want).min(ceiling);
        pending.reserve_exact(grown - pending.len());
    }
    pending.extend_from_slice(&bytes[..take]);
}

/// Reads one line from `out` into `pending` (kept across calls, so a read interrupted by a
/// `select!` loses nothing), a buffer at a time: never more than `max` bytes and one read
/// buffer are held, however long the line.
async fn read_answer(
    out: &mut (impl AsyncBufRead + Unpin),
    pending: &mut Vec<u8>,
    max: u64,
) -> std::io::Result<Read> {
    loop {
        let (used, done) = {
            let buf = out.fill_buf().await?;
            if buf.is_empty() {
                if pending.is_empty() {
                    return Ok(Read::Closed);
                }
                break;
            }
            match buf.iter().position(|b| *b == b'\n') {
                Some(at) => {
                    push_bounded(pending, &buf[..at], max);
                    (at + 1, true)
                }
                None => {
                    push_bounded(pending, buf, max);
                    (buf.len(), false)
                }
            }
        };
        out.consume(used);
        if pending.len() as u64 > max {
            pending.clear();
            pending.shrink_to_fit();
            return Ok(Read::TooLong);
        }
        if done {
            break;
        }
    }
    let mut line = std::mem::take(pending);
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(Read::Line)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// What one read of an exchange found.
enum Got<T> {
    Line(String),
    Channel(T),
    Closed,
    TooLong,
}

/// Writes a stray stdout line where the worker's stderr goes, scrubbed and marked as
/// such (with the case it was on), and counts it.
fn note_stray(sink: &mut Sink, stray: &mut Stray, line: &str, label: &str) {
    let clean = crate::secrets::scrub(line);
    let on = if label.is_empty() {
        String::new()
    } else {
        format!(" ({label})")
    };
    sink.write(format!("stdout, not the answer{on}: {clean}\n").as_bytes());
    stray.lines += 1;
    if stray.first.len() < 3 {
        stray.first.push(clean.chars().take(STRAY_SHOWN).collect());
    }
}

/// What a worker printed on stdout that was not its answer, in one exchange.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stray {
    /// How many lines.
    pub lines: usize,
    /// The first few, scrubbed and cut to [`STRAY_SHOWN`] characters, for messages.
    pub first: Vec<String>,
}

/// How long, after an answer on another channel, stdout may stay quiet before the
/// exchange ends: lines already in the pipe are read as the case's stray output.
const STRAY_GRACE: Duration = Duration::from_millis(20);

/// How many characters of a stray stdout line a message shows.
pub const STRAY_SHOWN: usize = 120;

impl Stray {
    /// `1 line … (the first: "Give Feedback / Get Help")`, for messages.
    pub fn described(&self) -> String {
        let first = self
            .first
            .first()
            .map(|l| format!(" (the first: {l:?})"))
            .unwrap_or_default();
        format!(
            "{} on its stdout that {} not its answer{first}",
            crate::text::plural(self.lines, "line", "lines"),
            if self.lines == 1 { "is" } else { "are" }
        )
    }
}

/// What answered an exchange: a line on the worker's stdout, or its owner's other channel.
#[derive(Debug)]
pub enum Answered<T> {
    /// A line on stdout (without its newline).
    Line(String),
    /// What the other channel delivered.
    Channel(T),
}

/// One worker process.
pub struct Worker {
    role: &'static str,
    child: Child,
    stdin: ChildStdin,
    /// Its stdout (taken when it is dropped, to log what was left unread).
    out: Option<BufReader<ChildStdout>>,
    /// The answer line read so far (a read cut short by the worker's exit goes on).
    pending: Vec<u8>,
    /// The longest answer line taken ([`Launch::max_answer`]).
    max_answer: u64,
    /// The entry of its environment that names it (`NAME=token`).
    marker: String,
    /// Its token (the exec adapter's gateway token).
    pub token: String,
    /// The task copying its stderr, until it is done.
    reader: Option<JoinHandle<()>>,
    stderr_lines: Arc<AtomicUsize>,
    /// Where its stderr goes, as messages name it.
    stderr_shown: String,
    /// Where its stray stdout lines go (beside its stderr).
    stdout_sink: Sink,
    /// The stray stdout lines of the exchange under way.
    stray: Stray,
    /// The label of its last exchange (its case), for stray lines read after it.
    label: String,
    /// Set by its owner once the worker answered on another channel: from then on no
    /// stdout line is its answer, every one is stray.
    pub stdout_is_stray: bool,
    /// The launch's readers of stopped workers (this one's joins them when it stops).
    readers: Arc<std::sync::Mutex<Vec<JoinHandle<()>>>>,
    #[cfg(target_os = "linux")]
    ident: Option<reap::Ident>,
}

impl Drop for Worker {
    /// Stops the worker and everything it started: when its owner is done, after a crash
    /// or a timeout, and on Ctrl-C. Its stderr reader finishes on its own (the pipe closes
    /// once they are all gone) and is joined by [`Launch::join_readers`].
    fn drop(&mut self) {
        self.kill_all();
        let mut readers = self
            .readers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(r) = self.reader.take() {
            readers.push(r);
        }
        // What it printed on stdout after its last answer is stray too: logged as its
        // stderr is, by a task joined with the stderr readers.
        if let (Some(mut out), Ok(runtime)) =
            (self.out.take(), tokio::runtime::Handle::try_current())
        {
            let mut pending = std::mem::take(&mut self.pending);
            let mut sink = std::mem::replace(&mut self.stdout_sink, Sink::Stderr);
            let (label, max) = (std::mem::take(&mut self.label), self.max_answer);
            readers.push(runtime.spawn(async move {
                let mut stray = Stray::default();
                while let Ok(Read::Line(t)) = read_answer(&mut out, &mut pending, max).await {
                    note_stray(&mut sink, &mut stray, &t, &label);
                }
            }));
        }
    }
}

impl Worker {
    /// Sends one line and reads the line it answers. A worker that exits, closes its
    /// output or takes longer than `timeout` is stopped, and the failure says so.
    pub async fn exchange(&mut self, line: &str, timeout: Duration) -> Result<String, Failure> {
        let got = self
            .exchange_with(
                line,
                timeout,
                &|_| true,
                std::future::pending::<std::convert::Infallible>(),
                "",
            )
            .await?;
        match got.0 {
            Answered::Line(t) => Ok(t),
            Answered::Channel(never) => match never {},
        }
    }

    /// Sends one line and waits for its answer: the first stdout line `is_answer` takes
    /// (never one once [`Worker::stdout_is_stray`] is set), or what `channel` delivers,
    /// whichever comes first. Every other stdout line is stray: scrubbed, written where its
    /// stderr goes (`stdout, not the answer (<label>): <line>`), and counted in what is
    /// returned beside the answer. A worker that exits, closes its output or takes longer
    /// than `timeout` is stopped, and the failure says so (and names its stray lines).
    pub async fn exchange_with<T>(
        &mut self,
        line: &str,
        timeout: Duration,
        is_answer: &(dyn Fn(&str) -> bool + Sync),
        channel: impl std::future::Future<Output = T>,
        label: &str,
    ) -> Result<(Answered<T>, Stray), Failure> {
        let role = self.role;
        self.stray = Stray::default();
        self.label = label.to_string();
        let write = async {
            self.stdin.write_all(line.as_bytes()).await?;
            self.stdin.write_all(b"\n").await?;
            self.stdin.flush().await
        };
        if let Err(e) = write.await {
            let message = self
                .crashed(&format!("could not write the case to the {role}: {e}"))
                .await;
            return Err(Failure {
                timeout: false,
                too_large: false,
                message,
            });
        }
        // The worker's exit is watched, not only its output: a child it started (and that
        // outlives it) holds the pipe open, and the crash would wait for the timeout.
        // Closed output wins a tie (`biased`): a worker's files close before it exits.
        let max = self.max_answer;
        let only_stray = self.stdout_is_stray;
        let mut channel = std::pin::pin!(channel);
        let Some(out) = self.out.as_mut() else {
            return Err(Failure {
                timeout: false,
                too_large: false,
                message: format!("{role}: its output is gone"),
            });
        };
        let read = tokio::time::timeout(timeout, async {
            loop {
                let (line, exited) = tokio::select! {
                    biased;
                    got = &mut channel => {
                        // What it printed before it answered is that case's: read what
                        // is already there (a line printed after is the next exchange's,
                        // or logged when the worker is dropped).
                        while let Ok(Ok(Read::Line(t))) = tokio::time::timeout(
                            STRAY_GRACE,
                            read_answer(out, &mut self.pending, max),
                        )
                        .await
                        {
                            note_stray(&mut self.stdout_sink, &mut self.stray, &t, label);
                        }
                        return (Ok(Got::Channel(got)), false);
                    }
                    line = read_answer(out, &mut self.pending, max) => (line, false),
                    _ = self.child.wait() => {
                        // An answer printed just before exiting is still read.
                        let line = tokio::time::timeout(
                            Duration::from_millis(200),
                            read_answer(out, &mut self.pending, max),
                        )
                        .await
                        .unwrap_or(Ok(Read::Closed));
                        (line, true)
                    }
                };
                match line {
                    Ok(Read::Line(t)) if only_stray || !is_answer(&t) => {
                        note_stray(&mut self.stdout_sink, &mut self.stray, &t, label);
                    }
                    Ok(Read::Line(t)) => return (Ok(Got::Line(t)), exited),
                    Ok(Read::Closed) => return (Ok(Got::Closed), exited),
                    Ok(Read::TooLong) => return (Ok(Got::TooLong), exited),
                    Err(e) => return (Err(e), exited),
                }
            }
        })
        .await;
        let broken = |message| Failure {
            timeout: false,
            too_large: false,
            message,
        };
        match read {
            Err(_) => {
                let stderr = self.stop().await;
                Err(Failure {
                    timeout: true,
                    too_large: false,
                    message: format!(
                        "{role}: no answer within {}s; it was stopped ({stderr})",
                        timeout.as_secs()
                    ),
                })
            }
            Ok((Err(e), _)) => Err(broken(
                self.crashed(&format!("could not read the {role}'s answer: {e}"))
                    .await,
            )),
            Ok((Ok(Got::TooLong), _)) => {
                let stderr = self.stop().await;
                Err(Failure {
                    timeout: false,
                    too_large: true,
                    message: format!(
                        "{role}: its answer line is over {}, the limit on a worker's answer \
                         (cassettes.max_response_bytes); it was stopped ({stderr}); raise \
                         cassettes.max_response_bytes in the config if this is expected",
                        crate::text::human_bytes(max)
                    ),
                })
            }
            Ok((Ok(Got::Closed), false)) => Err(broken(
                self.crashed(&format!("the {role} closed its output")).await,
            )),
            Ok((Ok(Got::Closed), true)) => {
                Err(broken(self.crashed(&format!("the {role} exited")).await))
            }
            Ok((Ok(Got::Line(t)), _)) => Ok((Answered::Line(t), std::mem::take(&mut self.stray))),
            Ok((Ok(Got::Channel(v)), _)) => {
                Ok((Answered::Channel(v), std::mem::take(&mut self.stray)))
            }
        }
    }

    async fn crashed(&mut self, what: &str) -> String {
        let status = match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(Ok(s)) => format!(" ({s})"),
            _ => String::new(),
        };
        let stderr = self.stop().await;
        format!("{} crashed: {what}{status}; {stderr}", self.role)
    }

    /// Stops the worker and what it started, lets its stderr reader write the last lines
    /// (a second at most), and says where they went.
    pub async fn stop(&mut self) -> String {
        self.kill_all();
        if let Some(r) = self.reader.as_mut()
            && tokio::time::timeout(Duration::from_secs(1), r)
                .await
                .is_ok()
        {
            self.reader = None;
        }
        let stderr = match self.stderr_lines.load(Ordering::SeqCst) {
            0 => "it wrote nothing on stderr".to_string(),
            n => format!(
                "its stderr ({}) went to {}",
                crate::text::plural(n, "line", "lines"),
                self.stderr_shown
            ),
        };
        match self.stray.lines {
            0 => stderr,
            _ => format!(
                "{stderr}; it printed {}, written to {}",
                self.stray.described(),
                self.stderr_shown
            ),
        }
    }

    /// Kills the worker's process group and, on Linux, its whole lineage (`reap.rs`).
    fn kill_all(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(ident) = self.ident {
            reap::stop(ident, &self.marker);
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

/// Idle workers, reused request after request; a broken one is dropped (which kills it).
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
    /// An idle worker, or a new one from `spawn`.
    pub async fn take(
        &self,
        spawn: impl FnOnce() -> Result<Worker, String>,
    ) -> Result<Worker, String> {
        if let Some(w) = self.idle.lock().await.pop() {
            return Ok(w);
        }
        spawn()
    }

    /// Back to the pool after a clean answer.
    pub async fn put(&self, w: Worker) {
        self.idle.lock().await.push(w);
    }

    /// Stops every idle worker (each one's lineage with it).
    pub async fn clear(&self) {
        self.idle.lock().await.clear();
    }
}
