//! The library's entry point: a suite in, the assembled [`RunResult`] out (weighted scores,
//! run info, fingerprints), exactly what `evals run` stores and reports. The CLI runs its
//! commands through [`Prepared`]; a Rust caller can use [`evaluate`] alone.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::control::{Cancel, Control, OnStreak, Quiet};
use super::events::{Event, Sinks};
use super::execute::{RunContext, cassette_key_of};
use super::plan::RunPlan;
use crate::adapter::Adapter;
use crate::adapter::exec::StderrTo;
use crate::cassette::{CassetteContender, CassetteOptions, LiveClient, Mode, Tally, Transport};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::provider::Registry;
use crate::results::CaseLog;
use crate::results::{
    CaseKeys, Command, ContenderInfo, ExperimentResult, Limits, RunInfo, RunResult, Selection,
    Settings,
};
use crate::score::{Scorer, ScorerChoice};
use crate::suite::{Overrides, Suite, lineup};

/// Where a run's warnings, notes and `-v` lines go: the caller's choice
/// ([`RunOptions::notices`]). The CLI prints them to stderr through the egress scrubber;
/// [`StderrNotices`] does the same for a library caller, [`CollectedNotices`] keeps them,
/// and the default, [`NoNotices`], drops them (a library prints nothing unless asked).
pub trait Notices: Send + Sync {
    /// Something the user should act on (`OPENROUTER_API_KEY is not set: replaying ...`).
    fn warn(&self, msg: &str);
    /// What the run did (`wrote 12 cassettes ...`).
    fn note(&self, msg: &str);
    /// What was found where, and why (the CLI's `-v`); ignored by default.
    fn verbose(&self, _msg: &str) {}
}

/// Warnings (`warning: ...`) and notes on stderr, every secret in play scrubbed; no verbose
/// lines.
#[derive(Debug, Clone, Copy, Default)]
pub struct StderrNotices;

impl Notices for StderrNotices {
    fn warn(&self, msg: &str) {
        eprintln!(
            "warning: {}",
            crate::text::visible(&crate::secrets::scrub(msg))
        );
    }

    fn note(&self, msg: &str) {
        eprintln!("{}", crate::text::visible(&crate::secrets::scrub(msg)));
    }
}

/// Drops every notice: [`RunOptions`]'s default, so a library run prints nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoNotices;

impl Notices for NoNotices {
    fn warn(&self, _msg: &str) {}

    fn note(&self, _msg: &str) {}
}

/// Keeps every notice, scrubbed, in the order given: for a caller that shows them its own
/// way (a log, a UI) once the run is done.
#[derive(Debug, Default)]
pub struct CollectedNotices(std::sync::Mutex<Vec<Notice>>);

/// One notice a run gave ([`CollectedNotices`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// Something to act on.
    Warning(String),
    /// What the run did.
    Note(String),
    /// Where something was found, and why (`-v`).
    Verbose(String),
}

impl CollectedNotices {
    /// Nothing collected yet.
    pub fn new() -> CollectedNotices {
        CollectedNotices::default()
    }

    /// What was collected so far.
    pub fn notices(&self) -> Vec<Notice> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Notice>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Notices for CollectedNotices {
    fn warn(&self, msg: &str) {
        let msg = crate::secrets::scrub(msg).into_owned();
        self.lock().push(Notice::Warning(msg));
    }

    fn note(&self, msg: &str) {
        let msg = crate::secrets::scrub(msg).into_owned();
        self.lock().push(Notice::Note(msg));
    }

    fn verbose(&self, msg: &str) {
        let msg = crate::secrets::scrub(msg).into_owned();
        self.lock().push(Notice::Verbose(msg));
    }
}

/// How a run is made. [`RunOptions::default`] replays the recorded cassettes with the
/// config's scorers and never stops to ask. Build it with the chained setters
/// (`RunOptions::default().mode(..).provider(..)`); the fields are public to read, and new
/// ones may come (`#[non_exhaustive]`).
#[non_exhaustive]
pub struct RunOptions {
    /// The cassette mode, as it acts: pick it with [`crate::cassette::mode::choose`] (the
    /// flag, the command's default, and `auto` as `replay` on CI).
    /// Default: [`Mode::Replay`], so a library run calls nothing; fake and mock contenders
    /// answer offline in every mode.
    pub mode: Mode,
    /// The config's scorers, or yours instead of them or beside them.
    pub scorer: ScorerChoice,
    /// What to do after 100 failed live calls in a row. Default: go on (a library cannot
    /// ask).
    pub on_streak: OnStreak,
    /// The command the run is stored under (`run`, `compare`, `record`, `check`).
    pub command: Command,
    /// The git branch to record; `None`: what [`RunOptions::env`]'s git source says (CI's
    /// variables, then `git` when it is to be asked; nothing for the default environment).
    pub branch: Option<String>,
    /// What the flags narrowed, for the run's settings.
    pub selection: Selection,
    /// `--min-score`/`--min-pass-rate`, stored so a later report gates the run the same.
    pub limits: Limits,
    /// The providers contenders are served by: the built-ins ([`Registry::default`]), and
    /// yours, which a config section names with `kind:`.
    pub providers: Registry,
    /// Your adapter in place of the config's `adapter:` (whose templates are then not
    /// read); `None`: the config's.
    pub adapter: Option<Box<dyn Adapter>>,
    /// The environment, as the caller read it (the CLI: [`Env::from_process`]): redirects
    /// for live calls, the backoff's test scale, the git branch and commit (and whether to
    /// ask `git`), the argv recorded, where API keys are looked up before the suite's
    /// `env_files`. Default: [`Env::default`], which reads nothing from the process and
    /// starts no `git`.
    pub env: Env,
    /// Your sinks (a tracker, a live view): told every event of the run. Default: none.
    pub sinks: Sinks,
    /// Trip it to stop the run: nothing new starts, in-flight calls are cancelled, and what
    /// finished comes back with the status `interrupted`. The library installs no signal
    /// handler; the CLI trips its token on Ctrl-C and SIGTERM. Default: a token nobody
    /// trips.
    pub cancel: Cancel,
    /// Where [`evaluate`]'s warnings and notes go (a missing key that turned the run into a
    /// replay, what was recorded). Default: [`NoNotices`], nowhere; [`StderrNotices`]
    /// prints them, [`CollectedNotices`] keeps them. ([`Prepared`] takes its notices per
    /// call instead.)
    pub notices: Arc<dyn Notices>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("mode", &self.mode)
            .field("command", &self.command)
            .field("branch", &self.branch)
            .field("selection", &self.selection)
            .field("limits", &self.limits)
            .field("providers", &self.providers)
            .field("env", &self.env)
            .field("cancel", &self.cancel)
            .finish_non_exhaustive()
    }
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            mode: Mode::Replay,
            scorer: ScorerChoice::Config,
            on_streak: OnStreak::GoOn,
            command: Command::Run,
            branch: None,
            selection: Selection::default(),
            limits: Limits::default(),
            providers: Registry::default(),
            adapter: None,
            env: Env::default(),
            sinks: Sinks::new(),
            cancel: Cancel::new(),
            notices: Arc::new(NoNotices),
        }
    }
}

/// Chained setters, each naming the field it sets: `RunOptions::default().mode(Mode::Record)
/// .provider("atlas", Atlas::new()).notices(Arc::new(StderrNotices))`.
impl RunOptions {
    /// Sets [`RunOptions::mode`].
    pub fn mode(mut self, mode: Mode) -> RunOptions {
        self.mode = mode;
        self
    }

    /// Sets [`RunOptions::scorer`].
    pub fn scorer(mut self, scorer: ScorerChoice) -> RunOptions {
        self.scorer = scorer;
        self
    }

    /// Sets [`RunOptions::on_streak`].
    pub fn on_streak(mut self, on_streak: OnStreak) -> RunOptions {
        self.on_streak = on_streak;
        self
    }

    /// Sets [`RunOptions::command`].
    pub fn command(mut self, command: Command) -> RunOptions {
        self.command = command;
        self
    }

    /// Sets [`RunOptions::branch`].
    pub fn branch(mut self, branch: impl Into<String>) -> RunOptions {
        self.branch = Some(branch.into());
        self
    }

    /// Sets [`RunOptions::selection`].
    pub fn selection(mut self, selection: Selection) -> RunOptions {
        self.selection = selection;
        self
    }

    /// Sets [`RunOptions::limits`].
    pub fn limits(mut self, limits: Limits) -> RunOptions {
        self.limits = limits;
        self
    }

    /// Sets [`RunOptions::providers`].
    pub fn providers(mut self, providers: Registry) -> RunOptions {
        self.providers = providers;
        self
    }

    /// Registers one provider more in [`RunOptions::providers`], under the `kind:` a
    /// config section names.
    pub fn provider(
        mut self,
        kind: impl Into<String>,
        provider: impl crate::provider::Provider + 'static,
    ) -> RunOptions {
        self.providers.register(kind, provider);
        self
    }

    /// Sets [`RunOptions::adapter`].
    pub fn adapter(mut self, adapter: Box<dyn Adapter>) -> RunOptions {
        self.adapter = Some(adapter);
        self
    }

    /// Sets [`RunOptions::env`].
    pub fn env(mut self, env: Env) -> RunOptions {
        self.env = env;
        self
    }

    /// Adds a sink to [`RunOptions::sinks`].
    pub fn sink(mut self, sink: Arc<dyn super::Sink>) -> RunOptions {
        self.sinks.push(sink);
        self
    }

    /// Sets [`RunOptions::cancel`].
    pub fn cancel(mut self, cancel: Cancel) -> RunOptions {
        self.cancel = cancel;
        self
    }

    /// Sets [`RunOptions::notices`].
    pub fn notices(mut self, notices: Arc<dyn Notices>) -> RunOptions {
        self.notices = notices;
        self
    }
}

/// Runs every contender of the suite's lineup over every case it loaded and returns the
/// assembled result: the same [`RunResult`] the CLI stores, snapshots and reports (render
/// it with any [`crate::report::Report`], such as [`crate::report::terminal::Terminal`]).
/// Nothing is stored in the history and no snapshot is written.
///
/// Tripping [`RunOptions::cancel`] stops the run (what finished is returned, with the
/// status `interrupted`); no signal handler is installed, so Ctrl-C is the program's to
/// handle. Warnings and notes go where [`RunOptions::notices`] says (nowhere by default);
/// nothing is read from the process's environment but what [`RunOptions::env`] holds.
/// Use [`Prepared`] to run a narrower plan, or to hang progress hooks on it.
///
/// Safe to call from any context, a tokio runtime's thread included (the run then gets a
/// thread and a runtime of its own); in `async` code, [`evaluate_async`] runs it on the
/// caller's runtime.
///
/// ```no_run
/// use llm_evals::runner::{RunOptions, evaluate};
/// use llm_evals::suite::Suite;
///
/// let cwd = std::env::current_dir()?;
/// let suite = Suite::load(&cwd.join("evals/.llm-evals.config.yml"), &cwd)?;
/// let run = evaluate(&suite, RunOptions::default())?;
/// println!("{} experiments, {} errors", run.experiments.len(), run.total_errors());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn evaluate(suite: &Suite, options: RunOptions) -> Result<RunResult> {
    let notices = options.notices.clone();
    prepare(suite, options, notices.as_ref())?.run(Hooks::default(), notices.as_ref())
}

/// [`evaluate`], awaited on the caller's runtime (inside `#[tokio::main]`, an axum handler,
/// a test's runtime): the run's tasks are spawned there and joined before it returns.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// use llm_evals::runner::{RunOptions, evaluate_async};
/// use llm_evals::suite::{Locate, Suite};
///
/// let toy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/toy");
/// let suite = Suite::locate(&toy, &Locate::default())?;
/// let run = evaluate_async(&suite, RunOptions::default()).await?;
/// assert_eq!(run.total_errors(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })
/// # }
/// ```
pub async fn evaluate_async(suite: &Suite, options: RunOptions) -> Result<RunResult> {
    let notices = options.notices.clone();
    prepare(suite, options, notices.as_ref())?
        .run_async(Hooks::default(), notices.as_ref())
        .await
}

/// The whole lineup over every case the suite loaded, checked and ready to call.
fn prepare<'s>(
    suite: &'s Suite,
    options: RunOptions,
    notices: &dyn Notices,
) -> Result<Prepared<'s>> {
    let lineup = lineup::expand(&suite.config, &Overrides::default(), &options.providers);
    let plan = RunPlan::new(suite, lineup, suite.cases.cases.clone(), None, None)?;
    Prepared::new(suite, plan, options, notices)
}

/// What the CLI hangs on a run while it executes: progress bars and where an exec
/// adapter's workers write their stderr. All optional.
#[derive(Default)]
pub struct Hooks {
    /// Sinks told every event after those of [`RunOptions::sinks`] (the progress bars).
    pub sinks: Sinks,
    /// How the runner prints its own notices (the streak question) while bars draw.
    pub quiet: Option<Quiet>,
    /// Where exec workers' stderr goes; `None`: the adapter's default log file.
    pub exec_stderr: Option<StderrTo>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("exec_stderr", &self.exec_stderr)
            .finish_non_exhaustive()
    }
}

/// A run checked and ready to call: the scorer built and every selected case verified
/// against it, the API keys read, the transport built. [`Prepared::run`] executes it.
pub struct Prepared<'s> {
    suite: &'s Suite,
    plan: RunPlan,
    options: RunOptions,
    scorer: Arc<dyn Scorer>,
    adapter: Box<dyn Adapter>,
    providers: Arc<Registry>,
    keys: HashMap<String, String>,
    transport: Arc<Transport>,
}

impl std::fmt::Debug for Prepared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("suite", &self.suite.name)
            .field("plan", &self.plan)
            .field("mode", &self.options.mode)
            .finish_non_exhaustive()
    }
}

impl<'s> Prepared<'s> {
    /// Checks the plan before any call: a lineup with a contender, a case selected, a
    /// scorer that can judge every selected case, a registered provider for every
    /// contender, the keys the mode needs. In `auto`, a
    /// missing key while every cassette exists turns the run into a replay (with a warning).
    pub fn new(
        suite: &'s Suite,
        plan: RunPlan,
        mut options: RunOptions,
        notices: &dyn Notices,
    ) -> Result<Prepared<'s>> {
        for r in &plan.lineup.refused {
            notices.warn(&r.to_string());
        }
        if plan.lineup.contenders.is_empty() {
            return Err(Error::Usage(format!(
                "no contender to run: the lineup in {} is empty or every entry was refused",
                suite.display_path
            )));
        }
        if plan.cases.is_empty() {
            return Err(Error::Usage(
                "no case selected: check -d/-c, or run `evals cases`".into(),
            ));
        }
        let scorer = crate::score::build_with(suite, &options.scorer)?;
        // A case the scorer cannot judge (no expected.json, a value the schema forbids, a
        // bad regex) would be scored against nothing: refuse the run instead, naming each
        // problem. A template a case cannot fill stays an error of that case alone.
        let bad = super::problems(suite, &plan.cases, scorer.as_ref(), None, false);
        if !bad.is_empty() {
            return Err(Error::Config(format!(
                "{}\nfix these first (`evals verify` lists every problem)",
                bad.join("\n")
            )));
        }
        let providers = Arc::new(std::mem::take(&mut options.providers));
        for c in &plan.lineup.contenders {
            providers
                .resolve(&c.kind, &c.info.provider)
                .map_err(|e| Error::Config(format!("{}: {e}", suite.display_path)))?;
        }
        let adapter = match options.adapter.take() {
            Some(a) => a,
            None => crate::adapter::build(suite, &options.env)?,
        };
        // The judges the config's scorer asks: resolved and keyed like the contenders.
        let judges = match &options.scorer {
            crate::score::ScorerChoice::Replace(_) => vec![],
            _ => crate::score::judges(suite),
        };
        for j in &judges {
            providers
                .resolve(&j.kind, &j.info.provider)
                .map_err(|e| Error::Config(format!("{}: scorer.judge: {e}", suite.display_path)))?;
        }
        let (keys, mode) = resolve_keys(
            &plan,
            options.mode,
            suite,
            &options.env,
            &providers,
            notices,
            &judges,
        )?;
        let transport = Arc::new(build_transport(suite, mode, &keys, &options.env)?);
        let options = RunOptions { mode, ..options };
        Ok(Prepared {
            suite,
            plan,
            options,
            scorer,
            adapter,
            providers,
            keys,
            transport,
        })
    }

    /// The plan it will run.
    pub fn plan(&self) -> &RunPlan {
        &self.plan
    }

    /// The mode it runs in (`auto` may have become `replay` for a missing key).
    pub fn mode(&self) -> Mode {
        self.options.mode
    }

    /// Whether the run uses an exec adapter (whose workers' stderr [`Hooks`] can route).
    pub fn uses_exec(&self) -> bool {
        self.adapter.runs_workers()
    }

    /// Executes the plan and assembles the result: the weighted score per dataset table,
    /// the metrics (primary first), the run info (fingerprint, git, settings, status), every
    /// case result in it (read back from the run's [`CaseLog`]).
    pub fn run(self, hooks: Hooks, notices: &dyn Notices) -> Result<RunResult> {
        let Streamed { mut run, cases } = self.run_streamed(hooks, notices)?;
        cases.fill(&mut run)?;
        Ok(run)
    }

    /// [`Prepared::run`] without holding the cases: the result's experiments have their
    /// figures and no `cases`, which stay on disk in the [`CaseLog`] returned beside it
    /// (what the sinks read at `RunFinished`). Memory stays flat however many cases run.
    ///
    /// Safe to call from any context: inside a caller's tokio runtime the run gets a thread
    /// and a runtime of its own. From `async` code, [`Prepared::run_streamed_async`] runs it
    /// on the caller's runtime instead.
    pub fn run_streamed(self, hooks: Hooks, notices: &dyn Notices) -> Result<Streamed> {
        let (begun, work) = self.begin(hooks);
        let outcome = super::execute(&begun.plan, work.cases, work.ctx, work.control)?;
        begun.finish(outcome, notices)
    }

    /// [`Prepared::run_streamed`], awaited on the caller's runtime (a multi-threaded one
    /// or not): every task it spawns is joined before it returns.
    pub async fn run_streamed_async(self, hooks: Hooks, notices: &dyn Notices) -> Result<Streamed> {
        let (begun, work) = self.begin(hooks);
        let outcome = super::execute_async(&begun.plan, work.cases, work.ctx, work.control).await?;
        begun.finish(outcome, notices)
    }

    /// [`Prepared::run`], awaited on the caller's runtime.
    pub async fn run_async(self, hooks: Hooks, notices: &dyn Notices) -> Result<RunResult> {
        let Streamed { mut run, cases } = self.run_streamed_async(hooks, notices).await?;
        cases.fill(&mut run)?;
        Ok(run)
    }

    /// Everything before the cases run: the run's id and start, the sinks told, the
    /// executor's context and control built, git asked (on a thread, while the cases run).
    fn begin(self, hooks: Hooks) -> (Begun<'s>, Work) {
        let Prepared {
            suite,
            mut plan,
            options,
            scorer,
            mut adapter,
            providers,
            keys,
            transport,
        } = self;
        let mode = options.mode;
        if let Some(to) = hooks.exec_stderr {
            adapter.route_stderr(to);
        }
        let started_at = crate::results::time::now();
        // Taken at the start, so ids order runs by when they started (baselines rely on it).
        let id = uuid::Uuid::now_v7().to_string();
        let mut sinks = options.sinks.clone();
        sinks.extend(hooks.sinks);
        sinks.emit(Event::RunStarted {
            id: &id,
            experiments: plan.lineup.contenders.len() * plan.datasets().len(),
        });
        let ctx = RunContext {
            transport: transport.clone(),
            keys,
            scorer: scorer.clone(),
            adapter: Arc::from(adapter),
            providers,
            sinks: sinks.clone(),
        };
        let mut control = Control::new(
            suite.config.errors.abort_after,
            options.on_streak,
            plan.lineup
                .contenders
                .iter()
                .map(|c| c.id().to_string())
                .collect(),
            plan.datasets(),
            plan.cases.len(),
        )
        .with_live_calls(mode != Mode::Replay)
        .with_cancel(options.cancel.clone());
        if let Some(quiet) = hooks.quiet {
            control = control.with_quiet(quiet);
        }
        // What the run info needs of the cases, taken before they move into the executor
        // (held once, not once more by the plan).
        let datasets = plan.datasets();
        let case_keys = {
            // Named when written, from the cases the suite holds anyway.
            let cases = plan.cases.clone();
            CaseKeys::streamed(cases.len(), move || cases.keys())
        };
        let cases = std::mem::take(&mut plan.cases);
        // The branch and commit asked of git (two processes, ~10 ms each) while the cases
        // run, not after: off the wall time of every run.
        let git = {
            let dir = suite.project_dir.clone();
            let source = options.env.git.clone();
            std::thread::spawn(move || crate::history::git::detect(&dir, &source))
        };
        (
            Begun {
                suite,
                plan,
                options,
                scorer,
                transport,
                sinks,
                mode,
                id,
                started_at,
                datasets,
                case_keys,
                git,
                adapter: ctx.adapter.clone(),
            },
            Work {
                cases,
                ctx,
                control,
            },
        )
    }
}

/// A run under way: what [`Prepared::begin`] kept for [`Begun::finish`].
struct Begun<'s> {
    suite: &'s Suite,
    plan: RunPlan,
    options: RunOptions,
    scorer: Arc<dyn Scorer>,
    transport: Arc<Transport>,
    sinks: Sinks,
    mode: Mode,
    id: String,
    started_at: chrono::DateTime<chrono::Utc>,
    datasets: Vec<String>,
    case_keys: CaseKeys,
    git: std::thread::JoinHandle<crate::history::git::GitInfo>,
    /// The run's adapter, asked for its warnings once the cases ran.
    adapter: Arc<dyn Adapter>,
}

/// What the executor takes of a run under way.
struct Work {
    cases: crate::suite::Cases,
    ctx: RunContext,
    control: Control,
}

impl Begun<'_> {
    /// Everything after the cases ran: the notes, the weighted score, the run info, the
    /// sinks told the run finished.
    fn finish(
        self,
        outcome: super::execute::RunOutcome,
        notices: &dyn Notices,
    ) -> Result<Streamed> {
        let Begun {
            suite,
            plan,
            options,
            scorer,
            transport,
            sinks,
            mode,
            id,
            started_at,
            datasets,
            case_keys,
            git,
            adapter,
        } = self;
        for warning in adapter.take_warnings() {
            notices.warn(&warning);
        }
        let unwritten = transport.unwritten_count();
        if unwritten > 0 {
            notices.warn(&unwritten_warning(unwritten));
        }
        let dir = crate::suite::discovery::display_path(&suite.cassette_dir(), &suite.cwd);
        let errored = outcome.experiments.iter().map(|e| e.errors).sum();
        if let Some(line) = recording_summary(mode, transport.tally(), errored, &dir) {
            notices.note(&line);
        }
        let weights: Vec<(String, f64)> = suite
            .config
            .weighted_score
            .as_ref()
            .map(|w| w.weights.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default();
        let experiments = weigh(outcome.experiments, &datasets, &weights);
        let mut metrics = scorer.metrics();
        metrics.sort_by_key(|m| !m.primary);
        let git = git
            .join()
            .unwrap_or_else(|_| crate::history::git::detect(&suite.project_dir, &options.env.git));
        let settings = Settings {
            contenders: plan
                .lineup
                .contenders
                .iter()
                .map(|c| c.info.clone())
                .collect(),
            cases: case_keys,
            parallelism: plan.parallelism,
            concurrency: plan.concurrency,
            cassettes: Some(mode),
            // What the flags narrowed or changed; a baseline must have selected the same.
            selection: Some(options.selection),
            // The floors this run was gated by, so a report of it later gates it the same.
            limits: (!options.limits.is_empty()).then_some(options.limits),
        };
        let run = RunResult {
            run: RunInfo {
                id,
                suite: suite.name.clone(),
                description: suite.config.description.clone(),
                project: suite.config.project.clone(),
                suite_fingerprint: suite.fingerprint(),
                branch: options.branch.or(git.branch),
                commit: git.commit,
                command: options.command,
                mode,
                argv: options.env.argv.clone(),
                started_at,
                finished_at: Some(crate::results::time::now()),
                status: outcome.status,
                settings,
                metrics,
                weights,
                refused: plan.lineup.refused.iter().map(|r| r.to_string()).collect(),
            },
            experiments,
        };
        sinks.emit(Event::RunFinished {
            run: &run,
            cases: &outcome.cases,
        });
        Ok(Streamed {
            run,
            cases: outcome.cases,
        })
    }
}

/// A run whose case results stay on disk: [`Prepared::run_streamed`].
#[derive(Debug)]
pub struct Streamed {
    /// The run, its experiments' `cases` empty.
    pub run: RunResult,
    /// Every case result, by experiment (in `run.experiments` order), in case order.
    pub cases: CaseLog,
}

/// The weighted score is relative to a table: one per dataset. Experiments are moved into
/// each table and back, not cloned. `evals merge` weighs a merged run by it too.
pub(super) fn weigh(
    mut experiments: Vec<ExperimentResult>,
    datasets: &[String],
    weights: &[(String, f64)],
) -> Vec<ExperimentResult> {
    if weights.is_empty() {
        return experiments;
    }
    let mut slots: Vec<Option<ExperimentResult>> = experiments.drain(..).map(Some).collect();
    for d in datasets {
        let idx: Vec<usize> = (0..slots.len())
            .filter(|&i| slots[i].as_ref().is_some_and(|e| &e.dataset == d))
            .collect();
        let mut rows: Vec<ExperimentResult> = idx.iter().filter_map(|&i| slots[i].take()).collect();
        crate::score::weighted::apply(&mut rows, weights);
        for (i, r) in idx.into_iter().zip(rows) {
            slots[i] = Some(r);
        }
    }
    slots.into_iter().flatten().collect()
}

/// Each file was named as it failed (the first few); this is the count, at the end.
fn unwritten_warning(unwritten: usize) -> String {
    let named = if unwritten > crate::cassette::UNWRITTEN_NAMED {
        format!(
            "the first {} are named above",
            crate::cassette::UNWRITTEN_NAMED
        )
    } else {
        "named above".to_string()
    };
    let (what, whose) = if unwritten == 1 {
        ("cassette", "its case is not recorded, but its answer was")
    } else {
        (
            "cassettes",
            "their cases are not recorded, but their answers were",
        )
    };
    format!(
        "{unwritten} {what} could not be written ({named}): {whose} scored; make the \
         cassette folder writable (or free some disk space) and run again to record them"
    )
}

/// Reads every API key the run will need; a missing one fails before any call, naming it.
/// In `auto`, a key that is missing while every cassette exists turns the run into a replay:
/// a request that no longer matches its recording is then an error, never a keyless call.
fn resolve_keys(
    plan: &RunPlan,
    mode: Mode,
    suite: &Suite,
    env: &Env,
    providers: &Registry,
    notices: &dyn Notices,
    judges: &[crate::suite::Contender],
) -> Result<(HashMap<String, String>, Mode)> {
    let mut keys = HashMap::new();
    let mut mode = mode;
    let cassette_dir = suite.cassette_dir();
    let mut told: std::collections::HashSet<String> = std::collections::HashSet::new();
    let asked = plan.lineup.contenders.iter().map(|c| (c, false));
    for (c, is_judge) in asked.chain(judges.iter().map(|j| (j, true))) {
        // How messages name it: a judge is not one of the lineup.
        let who = if is_judge {
            format!("the judge {}", c.id())
        } else {
            c.id().to_string()
        };
        // Every contender's provider was resolved before the keys are read.
        let Ok(provider) = providers.resolve(&c.kind, &c.info.provider) else {
            continue;
        };
        let Some(var) = provider.key_env(c) else {
            continue;
        };
        let var = var.as_str();
        // The variable that holds it: `var`, or the one it falls back to (GOOGLE_API_KEY).
        let held = suite.key_var(env, var);
        let also = if held == var {
            String::new()
        } else {
            format!(" as {held}")
        };
        let found = match suite.var(env, held) {
            Some(_) if env.var(held).is_some() => format!("found in the environment{also}"),
            Some(_) => format!(
                "found in env_files{also} ({})",
                suite.config.env_files.join(", ")
            ),
            None => "not set".to_string(),
        };
        if told.insert(var.to_string()) {
            notices.verbose(&format!("key {var}: {found} (for {who})"));
        }
        match suite.var(env, held) {
            Some(v) => {
                check_key_value(suite, env, held, &v)?;
                // The suite's own key variables are known to the egress scrubber since it
                // loaded; a registered provider may name another.
                crate::secrets::register([v.clone()]);
                keys.insert(var.to_string(), v);
            }
            // A provider with a key but no recordings (typesafe) cannot replay: it needs
            // its key whatever the mode.
            None if !provider.sends() => {
                return Err(Error::missing_key(var, who, false));
            }
            None => {
                let needed = match mode {
                    Mode::Replay => false,
                    Mode::Record | Mode::Live => true,
                    Mode::Auto if is_judge => plan.lineup.contenders.iter().any(|k| {
                        plan.cases.heads().any(|case| {
                            !crate::score::judge_cassette_key(c, k, case.dataset, &case.id)
                                .path_in(&cassette_dir)
                                .is_file()
                        })
                    }),
                    Mode::Auto => plan.cases.heads().any(|case| {
                        !cassette_key_of(c, case.dataset, &case.id)
                            .path_in(&cassette_dir)
                            .is_file()
                    }),
                };
                if needed {
                    return Err(Error::missing_key(var, who, true));
                }
                if mode == Mode::Auto {
                    // A note, not a warning: nothing is wrong while every case is recorded
                    // (a first run of a checked-out suite), and a stale one is an error.
                    notices.note(&format!(
                        "{var} is not set: replaying the recorded cassettes only (set {var} to record)"
                    ));
                    mode = Mode::Replay;
                    notices.verbose(&format!(
                        "cassettes: replay ({var} is not set and every case of {who} is recorded)"
                    ));
                }
            }
        }
    }
    check_upstream_keys(suite, env)?;
    Ok((keys, mode))
}

/// A key goes into a header: whitespace in it (a trailing newline from `$(cat key)`, a
/// space pasted with it) is a config error naming the variable, never a call that fails
/// five times with "failed to parse header value"; so is any character that is not
/// printable ASCII (a zero-width space or a byte order mark copied from a web page or a
/// document, a look-alike Cyrillic letter), which no provider issues and which the server
/// would echo in a form the scrubber cannot know.
fn check_key_value(suite: &Suite, env: &Env, var: &str, value: &str) -> Result<()> {
    let Some(bad) = value.chars().find(|c| !c.is_ascii_graphic()) else {
        return Ok(());
    };
    let what = match bad {
        '\n' | '\r' => "a newline".to_string(),
        '\t' => "a tab".to_string(),
        ' ' => "a space".to_string(),
        _ if bad.is_control() => "a control character".to_string(),
        '\u{200b}' => "a zero-width space (U+200B)".to_string(),
        '\u{200c}' | '\u{200d}' | '\u{2060}' => {
            format!("an invisible joiner (U+{:04X})", u32::from(bad))
        }
        '\u{feff}' => "a byte order mark (U+FEFF)".to_string(),
        _ if bad.is_whitespace() => format!("whitespace (U+{:04X})", u32::from(bad)),
        _ => format!("a non-ASCII character (U+{:04X})", u32::from(bad)),
    };
    let place = if value.starts_with(bad) {
        "at its start"
    } else if value.ends_with(bad) {
        "at its end"
    } else {
        "inside it"
    };
    let from = if env.var(var).is_some() {
        "the environment".to_string()
    } else {
        format!("the env_files of {}", suite.display_path)
    };
    let fix = if bad.is_whitespace() || bad.is_control() {
        format!(
            "an API key must not contain whitespace; set it again without it (e.g. export {var}=\"$(tr -d '[:space:]' < keyfile)\")"
        )
    } else {
        format!(
            "an API key is printable ASCII only (an invisible character or a look-alike letter comes with a key copied from a web page or a document); copy the key again as plain text and set {var} again"
        )
    };
    Err(Error::Config(format!(
        "{var} (from {from}) has {what} {place}: {fix}"
    )))
}

/// The keys of an exec adapter's other APIs (`adapter.upstreams`' `key_env`) go into a
/// header too: checked as the providers' keys are.
fn check_upstream_keys(suite: &Suite, env: &Env) -> Result<()> {
    let Some(crate::suite::config::AdapterConfig::Exec { upstreams, .. }) = &suite.config.adapter
    else {
        return Ok(());
    };
    for var in upstreams.key_vars() {
        if let Some(v) = suite.var(env, var) {
            check_key_value(suite, env, var, &v)?;
        }
    }
    Ok(())
}

/// What the run spent and recorded, so a prompt edit never calls a model silently: in
/// record "wrote 12 cassettes (3 new, 9 changed), 0 unchanged, in DIR: 12 live calls"; in
/// auto (only when something went live) "recorded 3 new cassettes in DIR: 3 live calls";
/// in live the calls. Nothing in replay, which calls nothing. A record that called nothing
/// because its cases errored (`errored` of them) says so, not that no model is called.
fn recording_summary(mode: Mode, t: Tally, errored: usize, dir: &str) -> Option<String> {
    let n = crate::text::plural;
    let calls = n(t.live_calls, "live call", "live calls");
    match mode {
        Mode::Replay => None,
        Mode::Live if t.live_calls == 0 => None,
        Mode::Live => Some(format!("{calls}; nothing recorded (--cassettes live)")),
        Mode::Record if t.live_calls == 0 && t.written() + t.unchanged == 0 && errored > 0 => {
            Some(format!(
                "wrote no cassettes: no call went out ({} errored; see their errors)",
                n(errored, "case", "cases")
            ))
        }
        Mode::Record if t.live_calls == 0 && t.written() + t.unchanged == 0 => Some(
            "wrote no cassettes: no contender calls a model (fake and mock answer offline)".into(),
        ),
        Mode::Record => Some(format!(
            "wrote {} ({} new, {} changed), {} unchanged, in {dir}: {calls}",
            n(t.written(), "cassette", "cassettes"),
            t.new,
            t.changed,
            t.unchanged
        )),
        Mode::Auto if t.live_calls == 0 => None,
        Mode::Auto if t.written() + t.unchanged == 0 => {
            Some(format!("{calls}; no cassette recorded"))
        }
        Mode::Auto => {
            let what = match (t.new, t.changed) {
                (0, 0) => "nothing new".to_string(),
                (new, 0) => n(new, "new cassette", "new cassettes"),
                (0, changed) => n(changed, "changed cassette", "changed cassettes"),
                (new, changed) => format!(
                    "{} ({new} new, {changed} changed)",
                    n(new + changed, "cassette", "cassettes")
                ),
            };
            let same = if t.unchanged > 0 {
                format!(", {} unchanged", t.unchanged)
            } else {
                String::new()
            };
            Some(format!("recorded {what}{same} in {dir}: {calls}"))
        }
    }
}

/// The edge between the run's model and the cassette's file format: a cassette records its
/// contender in its own type, so the results model can change without changing the files.
impl From<&ContenderInfo> for CassetteContender {
    fn from(c: &ContenderInfo) -> CassetteContender {
        CassetteContender {
            id: c.id.clone(),
            provider: c.provider.clone(),
            model: c.model.clone(),
            effort: c.effort.clone(),
            temperature: c.temperature.clone(),
            max_tokens: c.max_tokens,
        }
    }
}

/// What the cassette layer needs of the suite: its folder, what the fingerprint leaves
/// out, the `redact` patterns and every secret in play (the suite's keys, every secret the
/// process knows, and `extra`); a bad `redact` pattern is a config error naming it.
pub(crate) fn cassette_options(suite: &Suite, extra: Vec<String>) -> Result<CassetteOptions> {
    let redact = suite
        .config
        .cassettes
        .redact
        .iter()
        .map(|p| {
            regex::Regex::new(p).map_err(|e| {
                Error::Config(format!(
                    "{}: cassettes.redact: bad pattern '{p}': {e}",
                    suite.display_path
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let redact_query = suite.config.cassettes.redact_query.clone();
    if let Some(bad) = redact_query.iter().find(|n| {
        n.is_empty() || n.contains(['=', '&', '?', '#', ';']) || n.contains(char::is_whitespace)
    }) {
        return Err(Error::Config(format!(
            "{}: cassettes.redact_query: '{bad}' is not a query parameter's name; write the name alone, as it stands before `=` in the URL (e.g. session_key)",
            suite.display_path
        )));
    }
    // The redactor drops duplicates.
    let mut secrets = suite.secret_values();
    secrets.extend(crate::secrets::known());
    secrets.extend(extra);
    Ok(CassetteOptions {
        dir: suite.cassette_dir(),
        ignore_fields: suite.config.cassettes.ignore_fields.clone(),
        redact,
        redact_query,
        secrets,
        max_response_bytes: suite.config.cassettes.response_limit(),
        volatile_fields: crate::cassette::volatile::volatile_fields(
            &suite.config.cassettes.volatile_fields,
        ),
    })
}

/// The cassette transport for this run, with the live client below it.
fn build_transport(
    suite: &Suite,
    mode: Mode,
    keys: &HashMap<String, String>,
    env: &Env,
) -> Result<Transport> {
    // The run's keys beside the suite's (needed by this run or not) and every other secret
    // in play (GITHUB_TOKEN, another provider's key, env_files).
    let mut options = cassette_options(suite, keys.values().cloned().collect())?;
    // Relative to the working directory when inside it, so messages stay short.
    if let Ok(relative) = options.dir.strip_prefix(&suite.cwd) {
        options.dir = relative.to_path_buf();
    }
    let timeout =
        Duration::from_secs_f64(suite.config.defaults.timeout.unwrap_or(120.0).max(0.001));
    let live = LiveClient::new(timeout, env.redirects.clone())
        .map_err(|e| Error::Failed(e.to_string()))?
        .with_max_response_bytes(options.max_response_bytes);
    Ok(Transport::new(
        mode,
        options,
        Arc::new(super::Scheduled::new(
            Arc::new(live),
            super::retry::RetryPolicy::scaled(env.backoff_scale),
        )),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Provider;
    use crate::report::{Report, terminal::Terminal};
    use crate::results::{MetricDef, Reply, RunStatus, Score};
    use crate::suite::Case;

    /// 1 when the raw reply is one line; `primary` as asked.
    struct OneLine {
        name: &'static str,
        primary: bool,
    }

    impl Scorer for OneLine {
        fn metrics(&self) -> Vec<MetricDef> {
            vec![MetricDef {
                name: self.name.into(),
                description: "the reply is one line".into(),
                primary: self.primary,
                higher_is_better: true,
            }]
        }

        fn score(&self, _case: &Case, reply: &Reply) -> Score {
            let one_line = !reply.raw.as_deref().unwrap_or("").contains('\n');
            let value = if one_line { 1.0 } else { 0.0 };
            Score {
                value,
                metrics: [(self.name.to_string(), Some(value))].into(),
                diagnostics: vec![],
                passed: None,
            }
        }

        fn verify(&self, _case: &Case) -> Vec<String> {
            vec![]
        }

        fn summary(&self, _case: &Case) -> String {
            "one line".into()
        }
    }

    fn toy() -> Suite {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        Suite::load(&root.join("fixtures/toy/evals/.llm-evals.config.yml"), root).unwrap()
    }

    fn with(scorer: ScorerChoice) -> RunOptions {
        RunOptions {
            scorer,
            ..RunOptions::default()
        }
    }

    /// echo answers the compact JSON of the input, parrot pretty-prints it.
    fn one_line(name: &'static str, primary: bool) -> Arc<dyn Scorer> {
        Arc::new(OneLine { name, primary })
    }

    #[test]
    fn an_added_scorers_metric_is_in_the_run_result_and_the_leaderboard() {
        let run = evaluate(&toy(), with(ScorerChoice::Add(one_line("one_line", true)))).unwrap();
        assert_eq!(run.run.status, RunStatus::Completed);
        assert_eq!(run.run.mode, Mode::Replay);
        assert_eq!(run.total_errors(), 0);
        // The config's primary still ranks; the added metric joins as a secondary one.
        let names: Vec<(&str, bool)> = run
            .run
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), m.primary))
            .collect();
        assert_eq!(names[0], ("field_accuracy", true));
        assert!(names.contains(&("one_line", false)), "{names:?}");
        // 2 fakes × 2 datasets, every case scored by both scorers.
        assert_eq!(run.experiments.len(), 4);
        for e in &run.experiments {
            assert_eq!(e.cases_total, 4, "{}", e.contender.id);
            for c in &e.cases {
                assert!(
                    c.metrics.contains_key("one_line"),
                    "{}: {:?}",
                    c.case,
                    c.metrics
                );
                assert!(c.metrics.contains_key("field_accuracy"));
            }
            let want = if e.contender.id == "fake/echo" {
                1.0
            } else {
                0.0
            };
            assert_eq!(e.means.get("one_line").copied().flatten(), Some(want));
        }
        // Assembled as the CLI assembles it: the weighted score is there too.
        assert!(run.experiments.iter().all(|e| e.wscore.is_some()));
        let board = Terminal {
            color: false,
            breakdown: false,
            totals: Default::default(),
            width: None,
            explain: true,
        }
        .render(&run, None);
        let header = board
            .lines()
            .find(|l| l.contains("field_accuracy"))
            .unwrap();
        assert!(header.contains("one_line"), "{board}");
        assert!(board.contains("the reply is one line"), "{board}");
    }

    #[test]
    fn a_replacing_scorer_is_the_only_scorer_and_the_config_must_name_its_metrics() {
        let mut suite = toy();
        // The toy's thresholds and weights name the fields scorer's metrics: refused.
        let err = evaluate(
            &suite,
            with(ScorerChoice::Replace(one_line("one_line", true))),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("minimum_scores: unknown metric 'field_accuracy'"),
            "{err}"
        );
        suite.config.minimum_scores.clear();
        suite.config.weighted_score = None;
        let run = evaluate(
            &suite,
            with(ScorerChoice::Replace(one_line("one_line", true))),
        )
        .unwrap();
        let names: Vec<&str> = run.run.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["one_line"]);
        assert!(run.run.metrics[0].primary);
        let echo = run
            .experiments
            .iter()
            .find(|e| e.contender.id == "fake/echo")
            .unwrap();
        assert_eq!(echo.score, Some(1.0));
    }

    fn atlas() -> Suite {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        Suite::load(
            &root.join("fixtures/world-atlas/evals/.llm-evals.config.yml"),
            root,
        )
        .unwrap()
    }

    /// The atlas models, answering in the process: `full` knows every capital, `pocket`
    /// only France's.
    struct Atlas;

    impl Provider for Atlas {
        fn models(&self) -> Option<Vec<String>> {
            Some(vec!["full".into(), "pocket".into()])
        }

        fn answer(
            &self,
            contender: &crate::suite::Contender,
            case: &Case,
            _req: &crate::provider::ChatRequest,
        ) -> std::result::Result<crate::provider::Completion, crate::cassette::CallError> {
            let knows = contender.info.model == "full" || case.id == "france";
            let text = match (&case.expected, knows) {
                (Some(v), true) => v.to_string(),
                _ => "no idea".into(),
            };
            Ok(crate::provider::Completion {
                text,
                ..Default::default()
            })
        }
    }

    #[test]
    fn a_provider_of_your_own_serves_the_sections_that_name_its_kind() {
        let mut providers = Registry::default();
        providers.register("atlas", Atlas);
        let run = evaluate(
            &atlas(),
            RunOptions {
                providers,
                ..RunOptions::default()
            },
        )
        .unwrap();
        assert_eq!(run.run.status, crate::results::RunStatus::Completed);
        assert_eq!(run.total_errors(), 0);
        let score = |id: &str| {
            run.experiments
                .iter()
                .find(|e| e.contender.id == id)
                .and_then(|e| e.score)
        };
        assert_eq!(score("atlas/full"), Some(1.0));
        assert_eq!(score("atlas/pocket"), Some(0.25));
    }

    #[test]
    fn a_kind_no_provider_is_registered_as_stops_the_run_naming_the_fix() {
        // The CLI's providers: the built-ins only.
        let err = evaluate(&atlas(), RunOptions::default()).err().unwrap();
        assert!(err.is_bad_input());
        let text = err.to_string();
        assert!(
            text.ends_with("provider section 'atlas': no provider is registered as 'atlas'; the registered ones are anthropic, custom, fake, gemini, mock, openai, openai-responses, openrouter, typesafe: fix its kind, or register the provider (llm_evals::provider::Registry::register) in the RunOptions of the run"),
            "{text}"
        );
        assert!(text.contains(".llm-evals.config.yml: "), "{text}");
        // A model the provider does not have is named with the ones it has.
        let mut providers = Registry::default();
        providers.register("atlas", Atlas);
        let mut suite = atlas();
        suite.config.providers["atlas"].models = Some(vec![crate::suite::config::ModelEntry {
            model: "ful".into(),
            effort: None,
            temperature: None,
            max_tokens: None,
            rate_limit: None,
        }]);
        let err = evaluate(
            &suite,
            RunOptions {
                providers,
                ..RunOptions::default()
            },
        )
        .err()
        .unwrap()
        .to_string();
        assert_eq!(
            err,
            "atlas/ful: the atlas provider has the models full and pocket; there is no 'ful' (did you mean 'full'?)"
        );
    }

    /// [`Atlas`], with a key of its own.
    struct KeyedAtlas;

    impl Provider for KeyedAtlas {
        fn key_env(&self, _: &crate::suite::Contender) -> Option<String> {
            Some("ATLAS_OWN_API_KEY".into())
        }

        fn answer(
            &self,
            contender: &crate::suite::Contender,
            case: &Case,
            req: &crate::provider::ChatRequest,
        ) -> std::result::Result<crate::provider::Completion, crate::cassette::CallError> {
            Atlas.answer(contender, case, req)
        }
    }

    #[test]
    fn a_key_your_provider_names_is_required_and_never_leaves_the_process() {
        let with = |suite: &Suite| {
            let mut providers = Registry::default();
            providers.register("atlas", KeyedAtlas);
            evaluate(
                suite,
                RunOptions {
                    providers,
                    ..RunOptions::default()
                },
            )
        };
        let mut suite = atlas();
        // It answers in the process, so nothing replays for it: the key is needed in
        // every mode, as TypeSafe's is.
        let err = with(&suite)
            .err()
            .unwrap()
            .message(crate::error::Audience::CommandLine);
        assert_eq!(
            err,
            "ATLAS_OWN_API_KEY is not set: atlas/full needs it (export ATLAS_OWN_API_KEY=...)"
        );
        let key = "atlas-own-key-0123456789abcdef";
        suite
            .env_files
            .insert("ATLAS_OWN_API_KEY".into(), key.into());
        let run = with(&suite).unwrap();
        assert_eq!(run.total_errors(), 0);
        // Not one of the suite's key variables, yet scrubbed from whatever is written.
        assert_eq!(
            crate::secrets::scrub(&format!("sent {key}")),
            "sent [REDACTED]"
        );
    }

    /// The atlas server's API, over HTTP: `POST /lookup {"model", "question"}` answers
    /// `{"answer"}`; `full` knows every capital, `pocket` only France's.
    struct AtlasHttp {
        base_url: String,
    }

    impl Provider for AtlasHttp {
        fn sends(&self) -> bool {
            true
        }

        fn base_url(&self, _: &crate::suite::Contender) -> Option<String> {
            Some(self.base_url.clone())
        }

        fn build_request(
            &self,
            c: &crate::suite::Contender,
            req: &crate::provider::ChatRequest,
            _key: Option<&str>,
        ) -> std::result::Result<crate::cassette::HttpRequest, crate::cassette::CallError> {
            Ok(crate::cassette::HttpRequest {
                method: "POST".into(),
                url: format!("{}/lookup", self.base_url),
                headers: vec![("content-type".into(), "application/json".into())],
                body: Some(serde_json::json!({"model": c.info.model, "question": req.user})),
                raw: None,
            })
        }

        fn read_response(
            &self,
            _: &crate::suite::Contender,
            resp: crate::cassette::HttpResponse,
            _: Option<&crate::suite::config::Pricing>,
        ) -> std::result::Result<crate::provider::Completion, crate::cassette::CallError> {
            Ok(crate::provider::Completion {
                text: resp.body["answer"].as_str().unwrap_or_default().into(),
                latency_s: resp.latency.as_secs_f64(),
                ..Default::default()
            })
        }
    }

    /// Serves the atlas API on 127.0.0.1 on a thread of its own (a run has its own
    /// runtime); counts the calls.
    fn serve_atlas() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = calls.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let app = axum::Router::new().route(
                    "/lookup",
                    axum::routing::post(
                        move |axum::Json(body): axum::Json<serde_json::Value>| async move {
                            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            let q = body["question"].as_str().unwrap_or_default();
                            let full = body["model"] == "full";
                            let capital = [
                                ("France", "Paris"),
                                ("Japan", "Tokyo"),
                                ("Kenya", "Nairobi"),
                                ("Peru", "Lima"),
                            ]
                            .into_iter()
                            .find(|(c, _)| q.contains(c) && (full || *c == "France"))
                            .map(|(_, capital)| capital);
                            let answer = match capital {
                                Some(c) => serde_json::json!({"capital": c}).to_string(),
                                None => "no idea".into(),
                            };
                            axum::Json(serde_json::json!({"answer": answer}))
                        },
                    ),
                );
                let _ = axum::serve(listener, app).await;
            });
        });
        (format!("http://{}", rx.recv().unwrap()), calls)
    }

    #[test]
    fn a_provider_of_your_own_that_sends_is_recorded_and_replays_without_its_server() {
        let (url, calls) = serve_atlas();
        let dir = std::env::temp_dir().join(format!("evals-atlas-{}", uuid::Uuid::now_v7()));
        let mut suite = atlas();
        suite.config.cassettes.dir = Some(dir.display().to_string());
        let with = |base_url: &str, mode: Mode| {
            let mut providers = Registry::default();
            providers.register(
                "atlas",
                AtlasHttp {
                    base_url: base_url.into(),
                },
            );
            let run = evaluate(
                &suite,
                RunOptions {
                    providers,
                    mode,
                    ..RunOptions::default()
                },
            )
            .unwrap();
            assert_eq!(run.total_errors(), 0, "{mode}");
            run.experiments
                .iter()
                .map(|e| (e.contender.id.clone(), e.score))
                .collect::<Vec<_>>()
        };
        let want = vec![
            ("atlas/full".to_string(), Some(1.0)),
            ("atlas/pocket".to_string(), Some(0.25)),
        ];
        assert_eq!(with(&url, Mode::Record), want);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 8);
        // Replayed from the recordings: the server moved (fingerprints are relative to the
        // provider's base URL) and nothing is called.
        assert_eq!(with("http://127.0.0.1:9", Mode::Replay), want);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 8);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Sends each case's input as it is and reads the reply as JSON: the prompt adapter
    /// without templates, written against the trait.
    struct Bare;

    impl crate::adapter::Adapter for Bare {
        fn start(self: Arc<Self>) -> Arc<dyn crate::adapter::AdapterSession> {
            self
        }
    }

    impl crate::adapter::AdapterSession for Bare {
        fn answer<'a>(
            &'a self,
            model: crate::adapter::CaseModel<'a>,
        ) -> crate::adapter::BoxFuture<
            'a,
            std::result::Result<crate::adapter::Answer, crate::results::CaseError>,
        > {
            Box::pin(async move {
                let req = crate::provider::ChatRequest {
                    system: None,
                    user: match model.case.input.to_value() {
                        serde_json::Value::String(text) => text,
                        other => other.to_string(),
                    },
                    json: true,
                    ..Default::default()
                };
                let c = model.complete(&req).await?;
                let output = serde_json::from_str(&c.text).ok();
                Ok(crate::adapter::Answer {
                    reply: Reply {
                        error: output.is_none().then(|| "not JSON".to_string()),
                        output,
                        raw: Some(c.text),
                        usage: c.usage,
                        tool_calls: None,
                        trajectory: None,
                        components: None,
                    },
                    latency_s: Some(c.latency_s),
                    truncated: c.truncated,
                    warnings: vec![],
                })
            })
        }
    }

    #[test]
    fn an_adapter_of_your_own_answers_every_case_through_the_contenders_provider() {
        let run = evaluate(
            &toy(),
            RunOptions {
                adapter: Some(Box::new(Bare)),
                ..RunOptions::default()
            },
        )
        .unwrap();
        assert_eq!(run.total_errors(), 0);
        for e in &run.experiments {
            // echo says the input's answer back as it is; parrot too, reworded.
            assert_eq!(e.score, Some(1.0), "{}", e.contender.id);
        }
    }

    #[test]
    fn a_cassette_writes_its_contender_as_the_results_model_does() {
        let info = ContenderInfo {
            id: "openai/gpt-4o-mini".into(),
            provider: "openrouter".into(),
            model: "openai/gpt-4o-mini".into(),
            effort: Some("low".into()),
            temperature: None,
            max_tokens: Some(64),
        };
        let on_disk = serde_json::to_value(CassetteContender::from(&info)).unwrap();
        assert_eq!(on_disk, serde_json::to_value(&info).unwrap());
        let back: ContenderInfo = serde_json::from_value(on_disk).unwrap();
        assert_eq!(back, info);
    }

    /// Every event, as a line.
    #[derive(Default)]
    struct Recorder(std::sync::Mutex<Vec<String>>);

    impl crate::runner::Sink for Recorder {
        fn event(&self, event: &Event<'_>) {
            let line = match event {
                Event::RunStarted { experiments, .. } => format!("run started: {experiments}"),
                Event::ExperimentStarted {
                    index,
                    contender,
                    dataset,
                    cases,
                } => format!("{index} started: {} {dataset} {cases}", contender.id),
                Event::CaseFinished { experiment, .. } => format!("{experiment} case"),
                Event::ExperimentFinished { index, result } => {
                    format!("{index} finished: {} cases", result.cases_total)
                }
                Event::RunFinished { run, cases } => format!(
                    "run finished: {}, {} experiments, {} cases logged, none held: {}",
                    run.run.status,
                    run.experiments.len(),
                    (0..run.experiments.len())
                        .map(|i| cases.len(i))
                        .sum::<usize>(),
                    run.experiments.iter().all(|e| e.cases.is_empty())
                ),
            };
            self.0.lock().unwrap().push(line);
        }
    }

    #[test]
    fn a_callers_sink_hears_every_event_and_the_run_holds_no_case_until_asked() {
        let recorder = Arc::new(Recorder::default());
        let mut sinks = Sinks::new();
        sinks.push(recorder.clone());
        let options = RunOptions {
            sinks,
            ..RunOptions::default()
        };
        let run = evaluate(&toy(), options).unwrap();
        let lines = recorder.0.lock().unwrap().clone();
        assert_eq!(lines.first().unwrap(), "run started: 4");
        assert_eq!(
            lines.last().unwrap(),
            "run finished: completed, 4 experiments, 16 cases logged, none held: true"
        );
        for i in 0..4 {
            let of = |what: &str| {
                lines
                    .iter()
                    .filter(|l| l.starts_with(&format!("{i} {what}")))
                    .count()
            };
            assert_eq!(
                (of("started"), of("case"), of("finished")),
                (1, 4, 1),
                "{lines:?}"
            );
            let started = lines
                .iter()
                .position(|l| l.starts_with(&format!("{i} started")))
                .unwrap();
            let finished = lines
                .iter()
                .position(|l| l.starts_with(&format!("{i} finished")))
                .unwrap();
            assert!(started < finished);
        }
        // `evaluate` reads the cases back for its caller, in the suite's case order.
        let suite = toy();
        for e in &run.experiments {
            let got: Vec<(&str, &str)> = e
                .cases
                .iter()
                .map(|c| (c.case.as_str(), c.variant.as_str()))
                .collect();
            let heads: Vec<_> = suite
                .cases
                .cases
                .heads()
                .filter(|c| c.dataset == e.dataset)
                .collect();
            let want: Vec<(&str, &str)> = heads
                .iter()
                .map(|c| (c.id.as_str(), c.variant.as_str()))
                .collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_custom_scorer_must_name_one_primary_and_no_metric_of_the_config() {
        let suite = toy();
        let err =
            crate::score::build_with(&suite, &ScorerChoice::Replace(one_line("one_line", false)))
                .err()
                .unwrap()
                .to_string();
        assert!(err.contains("0 primary metrics"), "{err}");
        let err = crate::score::build_with(&suite, &ScorerChoice::Add(one_line("exact", false)))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("the metric 'exact'"), "{err}");
    }

    #[test]
    fn a_case_whose_file_changed_after_the_suite_loaded_is_an_error_of_the_case() {
        let tmp = tempfile::tempdir().unwrap();
        let evals = tmp.path().join("evals");
        std::fs::create_dir_all(evals.join("datasets/d")).unwrap();
        std::fs::write(
            evals.join(".llm-evals.config.yml"),
            "request_types: [prompt]\nadapter: { kind: prompt, user: \"{{ input }}\", json: true }\nscorer: { kind: fields, schema: { a: string } }\nfake: { models: [echo] }\n",
        )
        .unwrap();
        let file = evals.join("datasets/d/cases.jsonl");
        let line = r#"{"id": "one", "input": "{\"a\": \"x\"}", "expected": {"a": "x"}}"#;
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let suite = Suite::load(&evals.join(".llm-evals.config.yml"), tmp.path()).unwrap();
        let run = evaluate(&suite, RunOptions::default()).unwrap();
        assert_eq!(run.experiments[0].cases[0].score, Some(1.0));
        let changed = format!(
            "{}:1: the file changed after the suite loaded (its cases were checked as they were): run again on the file as it is now",
            file.display()
        );
        // Written over in place after the suite loaded: the checks before the run say so.
        std::fs::write(&file, format!("{line}\n{line}\n")).unwrap();
        let err = evaluate(&suite, RunOptions::default()).unwrap_err();
        assert!(matches!(err, Error::Config(_)));
        assert!(err.to_string().starts_with(&changed), "{err}");
        // Written over once the run was checked: the case is an error, and says why.
        std::fs::write(&file, format!("{line}\n")).unwrap();
        let suite = Suite::load(&evals.join(".llm-evals.config.yml"), tmp.path()).unwrap();
        let lineup = lineup::expand(&suite.config, &Overrides::default(), &Registry::default());
        let plan = RunPlan::new(&suite, lineup, suite.cases.cases.clone(), None, None).unwrap();
        let prepared = Prepared::new(&suite, plan, RunOptions::default(), &StderrNotices).unwrap();
        std::fs::write(&file, format!("{line}\n{line}\n")).unwrap();
        let run = prepared.run(Hooks::default(), &StderrNotices).unwrap();
        let case = &run.experiments[0].cases[0];
        assert_eq!((case.case.as_str(), case.score), ("one", None));
        let error = case.error.as_ref().unwrap();
        assert_eq!(error.kind, crate::results::CaseErrorKind::Other);
        assert_eq!(error.message, changed);
    }
}
