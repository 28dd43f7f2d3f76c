use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::control::Control;
use super::events::{Event, Sinks};
use super::plan::RunPlan;
use crate::adapter::{Adapter, AdapterSession, CaseModel, EMPTY_REPLY};
use crate::cassette::{CassetteKey, Limit, Route, SessionMeta, Transport};
use crate::provider::{Provider, Registry};
use crate::results::CaseLog;
use crate::results::aggregate::Aggregator;
use crate::results::{
    CaseError, CaseErrorKind, CaseResult, Diagnostic, ExperimentResult, Outcome, Reply, RunStatus,
};
use crate::score::Scorer;
use crate::suite::{Case, Cases, Contender, case_fingerprint};

/// What the runner needs beyond the plan: the transport, keys, scorer, adapter, providers.
pub struct RunContext {
    pub transport: Arc<Transport>,
    /// API key values by environment variable name (absent in replay).
    pub keys: HashMap<String, String>,
    pub scorer: Arc<dyn Scorer>,
    pub adapter: Arc<dyn Adapter>,
    /// The providers a contender's kind is resolved in.
    pub providers: Arc<Registry>,
    /// Told as each experiment starts, each case finishes and each experiment finishes.
    pub sinks: Sinks,
}

/// What a run produced: the experiments with at least one finished case (their figures;
/// their `cases` empty), how it ended, and the case results themselves, on disk.
pub struct RunOutcome {
    pub experiments: Vec<ExperimentResult>,
    pub status: RunStatus,
    /// The experiments' case results, in the order of `experiments`.
    pub cases: CaseLog,
}

/// Runs every experiment of the plan and returns them in plan order (contender, dataset),
/// each case result written to the outcome's [`CaseLog`] as it finishes (none is held).
/// The caller's cancel token (on `control`; the CLI trips it on Ctrl-C or SIGTERM) stops
/// it: nothing new starts, in-flight calls are cancelled (their
/// cassettes are never half-written: a cancelled case writes nothing), and what finished
/// is returned with the status `Interrupted`.
/// `cases` are the plan's cases, moved in (the plan's own list is not read); each is
/// parsed as a worker starts it, and dropped when it is done.
///
/// Safe from any context: inside a caller's tokio runtime the run gets a thread and a
/// runtime of its own ([`execute_async`] runs it on the caller's runtime instead).
pub fn execute(
    plan: &RunPlan,
    cases: Cases,
    ctx: RunContext,
    control: Control,
) -> crate::error::Result<RunOutcome> {
    crate::blocking::outside_runtime(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| crate::error::Error::Failed(format!("cannot start the runtime: {e}")))?;
        let out = rt.block_on(execute_async(plan, cases, ctx, control));
        // Nothing of the run outlives it: every task it spawned was joined.
        drop(rt);
        out
    })
}

/// [`execute`] on the caller's runtime: every task it spawns is joined before it returns.
pub async fn execute_async(
    plan: &RunPlan,
    cases: Cases,
    ctx: RunContext,
    control: Control,
) -> crate::error::Result<RunOutcome> {
    let ctx = Arc::new(ctx);
    let control = Arc::new(control);
    // Each dataset's cases once, shared by every contender's experiment.
    let by_dataset = cases.by_dataset();
    let sizes: Vec<usize> = plan
        .lineup
        .contenders
        .iter()
        .flat_map(|_| by_dataset.iter().map(|(_, cases)| cases.len()))
        .collect();
    let log = Arc::new(CaseLog::new(&sizes)?);
    ctx.adapter
        .start_run()
        .await
        .map_err(crate::error::Error::Failed)?;
    let watcher = on_cancel(control.clone());
    let out = run_all(plan, &by_dataset, ctx.clone(), control.clone(), log.clone()).await;
    // Every session is gone (an exec adapter's workers with them): end what they left
    // behind and write the last of their stderr before anything reports.
    ctx.adapter.finish_run().await;
    watcher.abort();
    // The watcher holds the control, not the log; it is gone before the run's result is.
    let _ = watcher.await;
    let experiments = out?;
    let status = control.status();
    // Every task that held the log was joined (each experiment, its workers, their cases).
    let cases = Arc::try_unwrap(log)
        .map_err(|_| crate::error::Error::Failed("a case task outlived the run".into()))?;
    let experiments = if status == RunStatus::Completed {
        // Every planned case has a result (a crash included, as its error): a completed
        // run that holds fewer is a bug, said as one rather than gated as a pass.
        if let Some((e, planned)) = experiments
            .iter()
            .zip(&sizes)
            .find(|(e, planned)| e.cases_total != **planned)
        {
            return Err(crate::error::Error::Failed(format!(
                "the run lost cases: {} on {} holds {} of its {planned} planned cases",
                e.contender.id, e.dataset, e.cases_total
            )));
        }
        experiments
    } else {
        let keep: Vec<bool> = experiments.iter().map(|e| e.cases_total > 0).collect();
        cases.retain(&keep);
        experiments
            .into_iter()
            .filter(|e| e.cases_total > 0)
            .collect()
    };
    Ok(RunOutcome {
        experiments,
        status,
        cases,
    })
}

/// Interrupts the run when the caller's [`super::Cancel`] trips (the CLI trips it on
/// Ctrl-C or SIGTERM; the library installs no signal handler of its own), and returns the
/// task that waits for it.
fn on_cancel(control: Arc<Control>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        control.interrupted().await;
        control.notice(
            "interrupted: stopping; in-flight calls are cancelled and what finished is reported",
        );
        control.interrupt();
    })
}

async fn run_all(
    plan: &RunPlan,
    by_dataset: &[(String, Cases)],
    ctx: Arc<RunContext>,
    control: Arc<Control>,
    log: Arc<CaseLog>,
) -> crate::error::Result<Vec<ExperimentResult>> {
    let experiments_gate = Arc::new(Semaphore::new(
        plan.concurrency.unwrap_or(Semaphore::MAX_PERMITS),
    ));
    let primary = ctx
        .scorer
        .metrics()
        .into_iter()
        .find(|m| m.primary)
        .map(|m| m.name)
        .unwrap_or_default();
    let mut handles = Vec::new();
    let mut index = 0usize;
    for contender in &plan.lineup.contenders {
        for (dataset, cases) in by_dataset {
            let dataset = dataset.clone();
            let cases = cases.clone();
            let gate = experiments_gate.clone();
            let shared = Shared {
                suite: plan.suite.clone(),
                ctx: ctx.clone(),
                control: control.clone(),
                log: log.clone(),
                repeat: plan.repeat,
            };
            let contender = contender.clone();
            let p = plan.parallelism;
            let primary = primary.clone();
            let idx = index;
            index += 1;
            handles.push(tokio::spawn(async move {
                let _permit = gate.acquire_owned().await.ok();
                let sinks = shared.ctx.sinks.clone();
                sinks.emit(Event::ExperimentStarted {
                    index: idx,
                    contender: &contender.info,
                    dataset: &dataset,
                    cases: cases.len(),
                });
                let agg = run_experiment(idx, &contender, cases, p, &primary, shared).await;
                let result = agg.finish(contender.info.clone(), dataset);
                sinks.emit(Event::ExperimentFinished {
                    index: idx,
                    result: &result,
                });
                result
            }));
        }
    }
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(
            h.await
                .map_err(|e| crate::error::Error::Failed(format!("an experiment crashed: {e}")))?,
        );
    }
    Ok(out)
}

/// What every experiment of a run shares.
struct Shared {
    suite: Arc<crate::suite::Suite>,
    ctx: Arc<RunContext>,
    control: Arc<Control>,
    log: Arc<CaseLog>,
    /// Tries per case (`--repeat K`).
    repeat: usize,
}

/// Runs one experiment's cases on `parallelism` workers pulling from one queue (a bounded
/// queue: only `-p` cases exist in flight, whatever the suite's size). Each result goes to
/// the case log and the sinks as it finishes, and into the experiment's figures, which
/// come back; cases that never started (a stop) are left out.
async fn run_experiment(
    idx: usize,
    contender: &Contender,
    cases: Cases,
    parallelism: usize,
    primary: &str,
    shared: Shared,
) -> Aggregator {
    let Shared {
        suite,
        ctx,
        control,
        log,
        repeat,
    } = shared;
    // The adapter's session for this experiment (an exec adapter's workers: at most `-p`,
    // reused case after case), ended when the experiment is.
    let exec = ctx.adapter.clone().start();
    let n = cases.len();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let agg = Arc::new(std::sync::Mutex::new(Aggregator::new(primary, parallelism)));
    let finish = Finish {
        idx,
        model: contender.id().to_string(),
        cases: cases.clone(),
        ctx: ctx.clone(),
        control: control.clone(),
        agg: agg.clone(),
        log,
    };
    let mut workers = Vec::with_capacity(parallelism.min(n));
    for _ in 0..parallelism.min(n) {
        let (cases, ctx, suite, control, exec, next, finish) = (
            cases.clone(),
            ctx.clone(),
            suite.clone(),
            control.clone(),
            exec.clone(),
            next.clone(),
            finish.clone(),
        );
        let contender = contender.clone();
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= n || !control.may_start().await {
                    break;
                }
                // Each case in a task of its own, so a bug that panics (a provider, scorer
                // or adapter of the user's) ends that case alone, as an error of it.
                let task = {
                    let (cases, ctx, suite, control, exec, contender) = (
                        cases.clone(),
                        ctx.clone(),
                        suite.clone(),
                        control.clone(),
                        exec.clone(),
                        contender.clone(),
                    );
                    tokio::spawn(async move {
                        let case = match cases.get(i) {
                            Ok(case) => case,
                            Err(changed) => return Some(unreadable(&cases.head(i), &changed)),
                        };
                        tokio::select! {
                            r = run_tries(&contender, &case, &suite, &ctx, exec.as_ref(), repeat) => Some(r),
                            _ = control.cancelled() => None,
                        }
                    })
                };
                let r = match task.await {
                    Ok(Some(r)) => r,
                    // Cancelled: the run is stopping.
                    Ok(None) => break,
                    Err(e) => crashed(
                        &cases.head(i),
                        format!("the case crashed: {}", panic_message(e)),
                    ),
                };
                finish.case(i, r).await;
            }
        }));
    }
    // A worker that itself ended early (a sink of the user's that panicked) took the case
    // it held with it: said below as that case's error, with what ended it.
    let mut died = None;
    for w in workers {
        if let Err(e) = w.await {
            died.get_or_insert_with(|| panic_message(e));
        }
    }
    // A run that was not stopped holds every planned case: one without a result is an
    // error of the case, never left out (a run that lost a case is never "completed").
    if !control.stopped() {
        let missing: Vec<usize> = lock(&agg).missing(n).collect();
        for i in missing {
            let why = match &died {
                Some(m) => format!("the case ended without a result: its worker crashed: {m}"),
                None => "the case ended without a result".to_string(),
            };
            finish.case(i, crashed(&cases.head(i), why)).await;
        }
    }
    std::mem::take(&mut *lock(&agg))
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where a finished case goes (the case log, the experiment's figures, the sinks, the run's
/// stop rules): one path, whether the case was scored, errored or crashed.
#[derive(Clone)]
struct Finish {
    idx: usize,
    model: String,
    cases: Cases,
    ctx: Arc<RunContext>,
    control: Arc<Control>,
    agg: Arc<std::sync::Mutex<Aggregator>>,
    log: Arc<CaseLog>,
}

impl Finish {
    async fn case(&self, i: usize, r: CaseResult) {
        // A cassette auto mode could not write: said once per file, and the case was
        // scored all the same.
        for why in self.ctx.transport.take_unwritten() {
            self.control.notice(&format!(
                "warning: {why}; the answer was scored but not recorded"
            ));
        }
        self.log.push(self.idx, i, &r);
        lock(&self.agg).add(i, &r);
        self.ctx.sinks.emit(Event::CaseFinished {
            experiment: self.idx,
            position: i,
            case: &r,
        });
        self.control
            .finished(&self.model, self.cases.dataset(i), &r)
            .await;
    }
}

/// What a panic said (its `&str` or `String` payload), or how the task ended otherwise.
fn panic_message(e: tokio::task::JoinError) -> String {
    if !e.is_panic() {
        return e.to_string();
    }
    let payload = e.into_panic();
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned());
    match text {
        Some(t) => format!("panicked: {t}"),
        None => "panicked (with no message)".to_string(),
    }
}

/// A case that crashed or ended without a result: an error of kind crashed (no score),
/// named by what the suite holds of it, its message scrubbed as every case's is.
fn crashed(head: &crate::suite::CaseHead<'_>, why: String) -> CaseResult {
    let mut r = without_result(
        head,
        CaseError::new(
            CaseErrorKind::Crashed,
            format!(
                "{why}; the code that panicked is a provider, adapter or scorer given to the \
                 run (or evals itself): fix it, `RUST_BACKTRACE=1` shows where"
            ),
        ),
    );
    r.scrub_secrets();
    r
}

/// A case whose JSONL file changed after the suite loaded: an error of the case (not run,
/// no score), named by what the suite holds of it.
fn unreadable(head: &crate::suite::CaseHead<'_>, changed: &crate::suite::Changed) -> CaseResult {
    without_result(
        head,
        CaseError::new(CaseErrorKind::Other, changed.to_string()),
    )
}

/// A case that has no result of its own, only `error`: named by what the suite holds of it.
fn without_result(head: &crate::suite::CaseHead<'_>, error: CaseError) -> CaseResult {
    CaseResult {
        case: head.id.to_string(),
        variant: head.variant.to_string(),
        fingerprint: String::new(),
        score: None,
        metrics: BTreeMap::new(),
        passed: None,
        failed_thresholds: vec![],
        error: Some(error),
        reply_error: None,
        truncated: false,
        output: None,
        raw: None,
        diagnostics: vec![],
        usage: Default::default(),
        latency_s: None,
        duration_s: 0.0,
        tags: head.tags.to_vec(),
        weight: 1.0,
        repeats: vec![],
        judge_usage: Default::default(),
        input: None,
        expected: None,
        trajectory: vec![],
        tool_calls: None,
        warnings: vec![],
        components: None,
    }
}

/// One case for one contender: the adapter's session answers it (calling the contender's
/// provider through the cassette session), and the reply is scored.
pub async fn run_case(
    contender: &Contender,
    case: &Case,
    suite: &crate::suite::Suite,
    ctx: &RunContext,
    adapter: &dyn AdapterSession,
) -> CaseResult {
    // What a worker printed (its output, raw text, errors) and what the scorer made of it is
    // scrubbed here, once, before any sink or renderer sees it: an HTML or Markdown escape
    // of a secret would no longer match at the way out.
    let mut result = run_case_unscrubbed(contender, case, suite, ctx, adapter, None, None).await;
    result.scrub_secrets();
    result
}

/// [`run_case`] `repeat` times (`--repeat K`), the tries sharing the case's cassette (try
/// `r` replays its `r`-th recording of each request; record keeps every try's), written
/// once all are done; their results are merged by [`merge_tries`]. Once is [`run_case`].
async fn run_tries(
    contender: &Contender,
    case: &Case,
    suite: &crate::suite::Suite,
    ctx: &RunContext,
    adapter: &dyn AdapterSession,
    repeat: usize,
) -> CaseResult {
    if repeat <= 1 {
        return run_case(contender, case, suite, ctx, adapter).await;
    }
    let repeats = crate::cassette::Repeats::new();
    // The judge's cassettes are shared by the tries too, as the contender's is.
    let judged = crate::score::JudgeCassettes::default();
    let mut tries = Vec::with_capacity(repeat);
    for r in 0..repeat {
        let mut t = run_case_unscrubbed(
            contender,
            case,
            suite,
            ctx,
            adapter,
            Some(repeats.clone()),
            Some(&judged),
        )
        .await;
        if let Some(e) = &mut t.error
            && e.kind == CaseErrorKind::Miss
            && r > 0
        {
            // The first tries replayed: the cassette holds fewer tries than asked for.
            e.message = format!(
                "repeat {} of {repeat}: {}; the cassette holds fewer tries: record them with \
                 `evals record --repeat {repeat}`",
                r + 1,
                e.message
            );
        }
        tries.push(t);
    }
    let mut result = merge_tries(tries);
    let written = ctx
        .transport
        .finish_repeats(&repeats)
        .and(judged.finish(&ctx.transport))
        .map_err(CaseError::from);
    if let (Err(e), None) = (written, &result.error) {
        result.score = None;
        result.passed = None;
        result.error = Some(e);
    }
    result.scrub_secrets();
    result
}

/// One case's tries as one result: each try's score, pass and error in `repeats`; the
/// score the mean of the tries' (each metric likewise), passed when most tries passed
/// (rule 2 and the flaky list read the tries themselves), the reply and diagnostics the
/// first try's, the usage and time the tries' sum. A try that errored errors the case
/// (no score: its error, naming the repeat).
pub fn merge_tries(tries: Vec<CaseResult>) -> CaseResult {
    let repeats: Vec<crate::results::Repeat> = tries
        .iter()
        .map(|t| crate::results::Repeat {
            score: t.score,
            passed: t.passed,
            error: t.error.as_ref().map(|e| e.message.clone()),
        })
        .collect();
    let n = tries.len();
    let mut tries = tries.into_iter();
    let Some(first) = tries.next() else {
        unreachable!("a repeated case has at least one try")
    };
    let rest: Vec<CaseResult> = tries.collect();
    let all = || std::iter::once(&first).chain(rest.iter());
    let error = all().find_map(|t| t.error.clone());
    let mut metrics = BTreeMap::new();
    for name in first.metrics.keys() {
        let vals: Vec<f64> = all()
            .filter_map(|t| t.metrics.get(name).copied().flatten())
            .collect();
        let mean = (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64);
        metrics.insert(name.clone(), mean);
    }
    let mut usage = crate::results::Usage::default();
    let mut judge_usage = crate::results::Usage::default();
    for t in all() {
        usage.add(&t.usage);
        judge_usage.add(&t.judge_usage);
    }
    let lats: Vec<f64> = all().filter_map(|t| t.latency_s).collect();
    let duration_s = all().map(|t| t.duration_s).sum();
    let passes = repeats.iter().filter(|r| r.passed == Some(true)).count();
    let failed_thresholds = all()
        .find(|t| t.passed == Some(false))
        .map(|t| t.failed_thresholds.clone())
        .unwrap_or_default();
    let mut out = first.clone();
    if error.is_some() {
        out.score = None;
        out.passed = None;
        out.metrics = BTreeMap::new();
    } else {
        let scores: Vec<f64> = all().filter_map(|t| t.score).collect();
        out.score = Some(scores.iter().sum::<f64>() / scores.len().max(1) as f64);
        out.metrics = metrics;
        out.passed = Some(2 * passes >= n);
    }
    out.failed_thresholds = if out.passed == Some(false) {
        failed_thresholds
    } else {
        vec![]
    };
    out.error = error;
    out.usage = usage;
    out.judge_usage = judge_usage;
    out.latency_s = (!lats.is_empty()).then(|| lats.iter().sum::<f64>() / lats.len() as f64);
    out.duration_s = duration_s;
    out.repeats = repeats;
    out
}

async fn run_case_unscrubbed(
    contender: &Contender,
    case: &Case,
    suite: &crate::suite::Suite,
    ctx: &RunContext,
    adapter: &dyn AdapterSession,
    repeats: Option<Arc<crate::cassette::Repeats>>,
    judged: Option<&crate::score::JudgeCassettes>,
) -> CaseResult {
    let thresholds = suite.thresholds(case);
    let mut result = CaseResult {
        case: case.id.clone(),
        variant: case.variant.clone(),
        fingerprint: case_fingerprint(case, &thresholds),
        score: None,
        metrics: BTreeMap::new(),
        passed: None,
        failed_thresholds: vec![],
        error: None,
        reply_error: None,
        truncated: false,
        output: None,
        raw: None,
        diagnostics: vec![],
        usage: Default::default(),
        latency_s: None,
        duration_s: 0.0,
        tags: case.tags.clone(),
        weight: case.weight,
        repeats: vec![],
        judge_usage: Default::default(),
        // Kept in the result (and so the case log and the snapshot, on disk), not in the
        // run: the HTML report reads them back with the cases.
        input: Some(case.input.to_value()),
        expected: case.expected.clone().or_else(|| case.expect.clone()),
        trajectory: vec![],
        tool_calls: None,
        warnings: vec![],
        components: None,
    };
    // Resolved when the run was prepared: a kind missing here is a bug, said as an error
    // of the case.
    let provider = match ctx
        .providers
        .resolve(&contender.kind, &contender.info.provider)
    {
        Ok(p) => p,
        Err(e) => {
            result.error = Some(CaseError::new(CaseErrorKind::Other, e));
            return result;
        }
    };
    let model = CaseModel {
        contender,
        case,
        api_key: provider
            .key_env(contender)
            .and_then(|k| ctx.keys.get(&k))
            .cloned(),
        pricing: pricing(suite, contender, provider.as_ref()),
        key: cassette_key(contender, case),
        meta: session_meta(contender, case, provider.as_ref()),
        transport: &ctx.transport,
        provider,
        repeats,
    };
    match adapter.answer(model).await {
        Ok(answer) => {
            result.latency_s = answer.latency_s;
            result.duration_s = answer.latency_s.unwrap_or(0.0);
            let mut reply = answer.reply;
            result.trajectory = reply.trajectory.clone().unwrap_or_default();
            result.tool_calls = reply.tool_calls.clone();
            result.components = reply.components.clone();
            result.warnings = answer.warnings;
            if let Some(note) = answer.truncated {
                // Said where the reader looks: a reply cut short reads "cut at max_tokens
                // (512): not JSON: EOF while parsing", not a bare parse error.
                result.truncated = true;
                reply.error = match reply.error {
                    Some(e) if e == EMPTY_REPLY => Some(note),
                    Some(e) => Some(format!("{note}: {e}")),
                    None => None,
                };
            }
            // A scorer that could not judge the reply (a crashed exec scorer) makes it an
            // error of the case, never a 0.
            // A judge's calls go through the run's cassette layer, under the case's judge key.
            // One case's judge cassettes are written once it is scored (every try's, by
            // `run_tries`, when it has tries).
            let own = crate::score::JudgeCassettes::default();
            let scoring = crate::score::ScoreContext::new(
                contender,
                &ctx.transport,
                &ctx.keys,
                &ctx.providers,
                judged.unwrap_or(&own),
            );
            let mut scored = ctx.scorer.score_in(case, &reply, &scoring).await;
            result.judge_usage = scoring.judge_usage();
            if judged.is_none()
                && let Err(e) = own.finish(&ctx.transport)
                && scored.is_ok()
            {
                scored = Err(CaseError::from(e));
            }
            match scored {
                Ok(score) => apply_score(&mut result, reply, &thresholds, score),
                Err(e) => result.error = Some(e),
            }
        }
        Err(e) => result.error = Some(e),
    }
    result
}

fn session_meta(contender: &Contender, case: &Case, provider: &dyn Provider) -> SessionMeta {
    SessionMeta {
        case: case.key(),
        contender: (&contender.info).into(),
        hint: {
            // The contender's own effort and temperature, so the hint records this one.
            let mut settings = String::new();
            if let Some(e) = &contender.info.effort {
                settings.push_str(&format!(" -e {}", crate::text::shell_word(e)));
            }
            if let Some(t) = &contender.info.temperature {
                settings.push_str(&format!(" -t {}", crate::text::shell_word(t)));
            }
            format!(
                "run `evals record -d {} -c {} -m {}{settings}` to record it",
                crate::text::shell_word(&case.dataset),
                crate::text::shell_word(&case.id),
                crate::text::shell_word(contender.id())
            )
        },
        route: route(contender, provider),
        base_url: provider.base_url(contender).unwrap_or_default(),
    }
}

/// The suite's `pricing:` for a contender (by id, then by model), else the price shipped
/// with its provider.
pub fn pricing(
    suite: &crate::suite::Suite,
    contender: &Contender,
    provider: &dyn Provider,
) -> Option<crate::suite::config::Pricing> {
    suite
        .config
        .pricing
        .get(contender.id())
        .or_else(|| suite.config.pricing.get(&contender.info.model))
        .copied()
        .or_else(|| provider.pricing())
}

/// Puts a reply and the scorer's verdict on it in the case's result, and applies the
/// thresholds.
pub fn apply_score(
    result: &mut CaseResult,
    reply: Reply,
    thresholds: &BTreeMap<String, f64>,
    score: crate::results::Score,
) {
    result.score = Some(score.value);
    result.metrics = score.metrics;
    result.diagnostics = score.diagnostics;
    // The raw text only where it says more than the output: a reply is not kept twice.
    result.raw = reply
        .raw
        .filter(|raw| !crate::results::raw_is_output(raw, reply.output.as_ref()));
    result.reply_error = reply.error;
    result.output = reply.output;
    result.usage = reply.usage;
    let mut failed = Vec::new();
    if score.passed == Some(false) {
        // A failed check named by a metric of its own (`kind: components`) is said by that
        // name; the rest are the assertions.
        let (named, assertions): (Vec<&Diagnostic>, Vec<&Diagnostic>) = result
            .diagnostics
            .iter()
            .filter(|d| matches!(d.outcome, Outcome::Failed))
            .partition(|d| result.metrics.contains_key(&d.field));
        if !assertions.is_empty() || named.is_empty() {
            failed.push(format!("{} assertion(s) failed", assertions.len()));
        }
        for d in named {
            failed.push(format!("{} check failed", d.field));
        }
    }
    for (metric, min) in thresholds {
        let v = if metric == "score" {
            Some(score.value)
        } else {
            result.metrics.get(metric).copied().flatten()
        };
        // A metric that does not apply to this case cannot fail it.
        if let Some(v) = v
            && v + 1e-12 < *min
        {
            failed.push(format!("{metric} {} < {}", fmt_num(v), fmt_num(*min)));
        }
    }
    result.passed = Some(failed.is_empty());
    result.failed_thresholds = failed;
}

fn fmt_num(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Where a case's exchanges with a contender are recorded.
pub fn cassette_key(contender: &Contender, case: &Case) -> CassetteKey {
    cassette_key_of(contender, &case.dataset, &case.id)
}

/// [`cassette_key`] from a case's dataset and id (read without parsing the case).
pub(crate) fn cassette_key_of(contender: &Contender, dataset: &str, id: &str) -> CassetteKey {
    let c = &contender.info;
    CassetteKey {
        provider: c.provider.clone(),
        model: c.model.clone(),
        // The layout's settings word is the store's: one owner for the whole path.
        settings: crate::cassette::settings_slug(
            c.effort.as_deref(),
            c.temperature.as_deref(),
            c.max_tokens,
        ),
        dataset: dataset.to_string(),
        case_id: id.to_string(),
    }
}

/// How a contender's live calls are scheduled: a retry pauses its vendor (an OpenRouter
/// vendor, or the provider section), and it waits on every rate limit set above it.
pub fn route(contender: &Contender, provider: &dyn Provider) -> Route {
    Route {
        vendor: provider.vendor(contender),
        limits: contender
            .rate_limits
            .iter()
            .map(|(key, rl)| Limit {
                key: key.clone(),
                burst: rl.burst,
                per_minute: rl.per_minute,
            })
            .collect(),
    }
}

/// A word a shell reads back as itself: as it is when it is plain, else single-quoted.
#[cfg(test)]
mod tests {
    use crate::text::shell_word;

    #[test]
    fn hints_quote_what_a_shell_would_split() {
        assert_eq!(shell_word("vague/003"), "vague/003");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }
}
