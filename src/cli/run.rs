//! `run`, `compare` and `record`: plan, resolve the cassette mode and keys, execute, report,
//! save the snapshot.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::args::{Format, RunArgs};
use super::output::Out;
use super::report_file::ReportFile;
use crate::cassette::{CassetteOptions, LiveClient, Mode, Transport};
use crate::error::{Error, Result, exit};
use crate::report::{Report, json::Json, terminal::Terminal};
use crate::results::{ExperimentResult, RunInfo, RunResult, SNAPSHOT_FORMAT};
use crate::runner::{self, RunContext, RunPlan};
use crate::suite::Suite;

/// Runs a command end to end and returns its exit code.
pub fn run(suite: &Suite, a: &RunArgs, command: &str, out: &Out) -> Result<i32> {
    // `record` refreshes recordings: it reports thresholds but never gates on them.
    let gates = command != "record";
    if !gates && (a.min_score.is_some() || a.min_pass_rate.is_some()) {
        return Err(Error::Usage(
            "--min-score and --min-pass-rate gate run, compare and check; record does not gate (run `evals check` after it)".into(),
        ));
    }
    let (run, _) = execute(suite, a, command, out)?;
    // Thresholds gate every run, by the rule `check` applies (with no baseline).
    let failed = crate::gate::threshold_failures(&run);
    let passed = run.total_errors() == 0 && (!gates || failed.is_empty());
    let code = exit::of_run(&run.run.status, passed);
    use crate::suite::config::Display;
    match suite.config.results.display {
        // `display: none` prints no leaderboard; a file or JSON asked for is still written.
        Some(Display::None) if a.output.is_none() && a.format == Format::Tui => {}
        display => {
            if let Some(d @ (Display::Browser | Display::Both)) = display {
                let name = if d == Display::Browser {
                    "browser"
                } else {
                    "both"
                };
                out.note(&format!(
                    "note: results.display: {name} in {}: evals opens no browser yet, so this run prints the terminal leaderboard (as `display: tui` does); for the HTML report now, add `--format html -o report.html`",
                    suite.display_path
                ));
            }
            let view = View {
                breakdown: command == "run",
                totals: a.totals,
            };
            emit(&run, a.format, a.output.as_deref(), view, out)?;
        }
    }
    if run.total_errors() > 0 {
        out.warn(&format!(
            "{} cases errored (no score; see the errors column)",
            run.total_errors()
        ));
        if command != "run" {
            // `run` prints each error in its breakdown; elsewhere, say what went wrong here.
            let errors: Vec<String> = run
                .experiments
                .iter()
                .flat_map(|e| {
                    e.cases.iter().filter_map(move |c| {
                        c.error.as_ref().map(|err| {
                            format!(
                                "  {} · {} · {}: {}",
                                e.contender.id,
                                e.dataset,
                                c.case,
                                err.lines().next().unwrap_or("")
                            )
                        })
                    })
                })
                .collect();
            for line in errors.iter().take(10) {
                out.note(line);
            }
            if errors.len() > 10 {
                out.note(&format!(
                    "  and {} more; `evals run` prints every case with its error",
                    errors.len() - 10
                ));
            }
        }
    }
    if !failed.is_empty() {
        if gates {
            out.error("thresholds failed:");
        } else {
            out.warn("thresholds failed (record does not gate; `evals check` will):");
        }
        for line in failed.iter().take(10) {
            out.note(&format!("  {line}"));
        }
        if failed.len() > 10 {
            out.note(&format!(
                "  and {} more; `evals run` marks each failing case, `evals check --markdown FILE` lists them all",
                failed.len() - 10
            ));
        }
    }
    // Last, the run's own verdict: the leaderboard covers only the cases that ran.
    if let Some(s) = crate::gate::stopped(&run) {
        out.error(&format!("evals {command}: {}", s.text()));
    }
    Ok(code)
}

/// Plans and executes; returns the run and the plan. Shared with `check`.
pub fn execute(
    suite: &Suite,
    a: &RunArgs,
    command: &str,
    out: &Out,
) -> Result<(RunResult, RunPlan)> {
    let limits = super::plan::limits(a)?;
    let plan = super::plan::build(suite, a, command)?;
    for r in &plan.lineup.refused {
        out.warn(&r.to_string());
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
    let scorer = crate::score::build(suite)?;
    // A case the scorer cannot judge (no expected.json, a value the schema forbids, a bad
    // regex) would be scored against nothing: refuse the run instead, naming each problem.
    // A template a case cannot fill stays an error of that case alone.
    let bad = super::verify::problems(suite, &plan.cases, scorer.as_ref(), None, false);
    if !bad.is_empty() {
        return Err(Error::Config(format!(
            "{}\nfix these first (`evals verify` lists every problem)",
            bad.join("\n")
        )));
    }
    let (mode, why) = resolve_mode(a.cassettes.as_deref(), command)?;
    out.verbose(&format!("cassettes: {mode} ({why})"));
    let mut adapter = crate::adapter::build(suite)?;
    let (keys, mode) = resolve_keys(&plan, mode, suite, out)?;
    let transport = Arc::new(build_transport(suite, mode, &keys)?);

    let started_at = chrono::Utc::now();
    // Taken at the start, so ids order runs by when they started (baselines rely on it).
    let id = uuid::Uuid::now_v7().to_string();
    // Where stderr goes while progress bars draw, and where an exec adapter's stderr goes.
    let warnings_log = suite.project_dir.join("log").join(format!(
        "{command}.warnings.{}.log",
        started_at.format("%Y%m%dT%H%M%SZ")
    ));
    let progress = super::progress::Progress::new(&plan, &warnings_log);
    if let crate::adapter::Adapter::Exec(exec) = &mut adapter {
        let shown = crate::suite::discovery::display_path(&warnings_log, &suite.cwd);
        exec.stderr = if progress.capturing() {
            // While the bars draw, our stderr is that log already: workers share it.
            crate::adapter::exec::StderrTo::Stderr { shown }
        } else {
            crate::adapter::exec::StderrTo::File {
                path: warnings_log.clone(),
                shown,
            }
        };
    }
    let ctx = RunContext {
        transport: transport.clone(),
        keys,
        scorer: scorer.clone(),
        adapter: Arc::new(adapter),
        on_case: progress.callback(),
    };
    let control = runner::Control::new(
        suite.config.errors.abort_after,
        if a.yes {
            runner::OnStreak::GoOn
        } else {
            runner::OnStreak::Ask
        },
        plan.lineup
            .contenders
            .iter()
            .map(|c| c.id().to_string())
            .collect(),
        plan.datasets(),
        plan.cases.len(),
    )
    .with_live_calls(mode != Mode::Replay)
    .with_quiet(progress.quiet());
    let outcome = runner::execute(&plan, ctx, control)?;
    let unwritten = transport.unwritten_count();
    if unwritten > 0 {
        // Each file was named as it failed (the first few); this is the count, at the end.
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
        out.warn(&format!(
            "{unwritten} {what} could not be written ({named}): {whose} scored; make the \
             cassette folder writable (or free some disk space) and run again to record them"
        ));
    }
    let dir = crate::suite::discovery::display_path(&suite.cassette_dir(), &suite.cwd);
    if let Some(line) = recording_summary(mode, transport.tally(), &dir) {
        out.note(&line);
    }
    if let Some(log) = progress
        .finish()
        .or_else(|| super::progress::tidy_log(&warnings_log))
    {
        out.note(&format!(
            "messages written to stderr during the run (libraries, the adapter) are in {}",
            crate::suite::discovery::display_path(&log, &suite.cwd)
        ));
    }
    let status = outcome.status;
    let mut experiments = outcome.experiments;
    let weights: Vec<(String, f64)> = suite
        .config
        .weighted_score
        .as_ref()
        .map(|w| w.weights.iter().map(|(k, v)| (k.clone(), *v)).collect())
        .unwrap_or_default();
    if !weights.is_empty() {
        // The weighted score is relative to a table: one per dataset. Experiments are moved
        // into each table and back, not cloned (they hold every case result).
        let mut slots: Vec<Option<ExperimentResult>> = experiments.drain(..).map(Some).collect();
        for d in plan.datasets() {
            let idx: Vec<usize> = (0..slots.len())
                .filter(|&i| slots[i].as_ref().is_some_and(|e| e.dataset == d))
                .collect();
            let mut rows: Vec<ExperimentResult> =
                idx.iter().filter_map(|&i| slots[i].take()).collect();
            crate::score::weighted::apply(&mut rows, &weights);
            for (i, r) in idx.into_iter().zip(rows) {
                slots[i] = Some(r);
            }
        }
        experiments = slots.into_iter().flatten().collect();
    }
    let mut metrics = scorer.metrics();
    metrics.sort_by_key(|m| !m.primary);
    let git = crate::history::git::detect(&suite.project_dir);
    let mut settings = serde_json::json!({
        "contenders": plan.lineup.contenders.iter().map(|c| &c.info).collect::<Vec<_>>(),
        "cases": plan.cases.iter().map(|c| c.key()).collect::<Vec<_>>(),
        "parallelism": plan.parallelism,
        "concurrency": plan.concurrency,
        "cassettes": mode.to_string(),
        // What the flags narrowed or changed; a baseline must have selected the same.
        "selection": {
            "models": a.models,
            "datasets": a.select.datasets,
            "cases": a.select.cases,
            "efforts": a.efforts,
            "temperatures": a.temperatures,
            "max_tokens": a.max_tokens,
        },
    });
    if !a.select.tags.is_empty() {
        // Only when given, so the selections of runs made without it stay as they were.
        settings["selection"]["tags"] = serde_json::json!(a.select.tags);
    }
    if !limits.is_empty() {
        // The floors this run was gated by, so a report of it later gates it the same.
        settings["limits"] = serde_json::json!(limits);
    }
    let run = RunResult {
        format: SNAPSHOT_FORMAT,
        run: RunInfo {
            id,
            suite: suite.name.clone(),
            description: suite.config.description.clone(),
            project: suite.config.project.clone(),
            suite_fingerprint: suite.fingerprint(),
            branch: a.branch.clone().or(git.branch),
            commit: git.commit,
            command: command.to_string(),
            mode: mode.to_string(),
            argv: std::env::args().collect(),
            started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            finished_at: Some(
                chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            ),
            status: status.label().into(),
            settings,
            metrics,
            weights,
            refused: plan.lineup.refused.iter().map(|r| r.to_string()).collect(),
        },
        experiments: std::mem::take(&mut experiments),
        comparison: None,
    };
    out.verbose(&format!(
        "history: {} ({})",
        crate::suite::discovery::display_path(
            &history_path(suite, a.history.as_deref()),
            &suite.cwd
        ),
        if a.history.is_none() {
            "the default, <project>/.evals/history.sqlite3"
        } else if std::env::args().any(|x| x == "--history" || x.starts_with("--history=")) {
            "--history"
        } else {
            "EVALS_HISTORY"
        }
    ));
    match store_run(suite, a, &run) {
        Ok(p) => out.note(&format!(
            "stored run {} in {}",
            run.run.id,
            crate::suite::discovery::display_path(&p, &suite.cwd)
        )),
        Err(e) => out.warn(&format!("could not store the run in the history: {e}")),
    }
    if !a.no_autosave && suite.config.results.autosave != Some(false) {
        match save_snapshot(suite, a.destination.as_deref(), &run) {
            Ok(p) => out.note(&format!(
                "saved {}",
                crate::suite::discovery::display_path(&p, &suite.cwd)
            )),
            Err(e) => out.warn(&format!("could not save the JSON snapshot: {e}")),
        }
    }
    Ok((run, plan))
}

/// How the terminal report looks.
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// The per-case breakdown first (`run`).
    pub breakdown: bool,
    pub totals: super::args::TotalsArg,
}

/// Writes the report to stdout or `-o FILE`.
pub fn emit(
    run: &RunResult,
    format: Format,
    output: Option<&Path>,
    view: View,
    out: &Out,
) -> Result<()> {
    let text = match format {
        Format::Json => Json.render(run),
        Format::Html => crate::report::html::Html.render(run),
        Format::Tui => Terminal {
            color: output.is_none() && out.color(),
            breakdown: view.breakdown,
            totals: view.totals.into(),
            width: output.is_none().then(|| out.width()).flatten(),
        }
        .render(run),
    };
    match output {
        Some(p) => {
            let (kind, example) = match format {
                Format::Json => ("JSON report", "run.json"),
                Format::Html => ("HTML report", "report.html"),
                Format::Tui => ("report", "report.txt"),
            };
            ReportFile {
                flag: "-o",
                kind,
                example,
            }
            .write(p, &text)?;
            out.note(&format!("wrote {}", p.display()));
        }
        None => out.text(&text),
    }
    Ok(())
}

/// The mode and why it is that one (for `-v`).
fn resolve_mode(flag: Option<&str>, command: &str) -> Result<(Mode, String)> {
    // clap fills the flag from EVALS_CASSETTES too: the command line says which it was.
    let from_flag = std::env::args().any(|x| x == "--cassettes" || x.starts_with("--cassettes="));
    let mut why = match flag {
        Some(m) if from_flag => format!("--cassettes {m}"),
        Some(m) => format!("EVALS_CASSETTES={m}"),
        None => format!("the default of `{command}`"),
    };
    let mode = match flag {
        Some(m) => m.parse::<Mode>().map_err(|_| {
            Error::Usage(format!(
                "--cassettes {m}: expected one of replay, record, auto, live"
            ))
        })?,
        None => match command {
            "record" => Mode::Record,
            "check" => Mode::Replay,
            _ => Mode::Auto,
        },
    };
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0");
    let resolved = mode.resolve(ci);
    if resolved != mode {
        why = format!("{why} is {mode}, which acts as {resolved} because CI is set");
    }
    Ok((resolved, why))
}

/// Reads every API key the run will need; a missing one fails before any call, naming it.
/// In `auto`, a key that is missing while every cassette exists turns the run into a replay:
/// a request that no longer matches its recording is then an error, never a keyless call.
fn resolve_keys(
    plan: &RunPlan,
    mode: Mode,
    suite: &Suite,
    out: &Out,
) -> Result<(HashMap<String, String>, Mode)> {
    let mut keys = HashMap::new();
    let mut mode = mode;
    let cassette_dir = suite.cassette_dir();
    let mut told = std::collections::HashSet::new();
    for c in &plan.lineup.contenders {
        let Some(var) = c.kind.key_env() else {
            continue;
        };
        let from_env = std::env::var(var).is_ok_and(|v| !v.is_empty());
        let found = match suite.env(var) {
            Some(_) if from_env => "found in the environment".to_string(),
            Some(_) => format!("found in env_files ({})", suite.config.env_files.join(", ")),
            None => "not set".to_string(),
        };
        if told.insert(var) {
            out.verbose(&format!("key {var}: {found} (for {})", c.id()));
        }
        match suite.env(var) {
            Some(v) => {
                check_key_value(suite, var, &v)?;
                keys.insert(var.to_string(), v);
            }
            // A provider with a key but no recordings (typesafe) cannot replay: it needs
            // its key whatever the mode.
            None if !c.kind.records() => {
                return Err(Error::Usage(format!(
                    "{var} is not set: {} needs it (export {var}=...)",
                    c.id()
                )));
            }
            None => {
                let needed = match mode {
                    Mode::Replay => false,
                    Mode::Record | Mode::Live => true,
                    Mode::Auto => plan.cases.iter().any(|case| {
                        !cassette_dir
                            .join(runner::cassette_key(c, case).relative_path())
                            .is_file()
                    }),
                };
                if needed {
                    return Err(Error::Usage(format!(
                        "{var} is not set: {} needs it for live calls (export {var}=..., or replay recorded cassettes with --cassettes replay)",
                        c.id()
                    )));
                }
                if mode == Mode::Auto {
                    out.warn(&format!(
                        "{var} is not set: replaying the recorded cassettes only (a request that no longer matches its recording is an error; set {var} to record it)"
                    ));
                    mode = Mode::Replay;
                    out.verbose(&format!(
                        "cassettes: replay ({var} is not set and every case of {} is recorded)",
                        c.id()
                    ));
                }
            }
        }
    }
    Ok((keys, mode))
}

/// A key goes into a header: whitespace in it (a trailing newline from `$(cat key)`, a
/// space pasted with it) is a config error naming the variable, never a call that fails
/// five times with "failed to parse header value".
fn check_key_value(suite: &Suite, var: &str, value: &str) -> Result<()> {
    let Some(bad) = value.chars().find(|c| c.is_whitespace() || c.is_control()) else {
        return Ok(());
    };
    let what = match bad {
        '\n' | '\r' => "a newline",
        '\t' => "a tab",
        ' ' => "a space",
        _ if bad.is_control() => "a control character",
        _ => "whitespace",
    };
    let place = if value.starts_with(bad) {
        "at its start"
    } else if value.ends_with(bad) {
        "at its end"
    } else {
        "inside it"
    };
    let from = if std::env::var(var).is_ok_and(|v| !v.is_empty()) {
        "the environment".to_string()
    } else {
        format!("the env_files of {}", suite.display_path)
    };
    Err(Error::Config(format!(
        "{var} (from {from}) has {what} {place}: an API key must not contain whitespace; set it again without it (e.g. export {var}=\"$(tr -d '[:space:]' < keyfile)\")"
    )))
}

/// What the run spent and recorded, so a prompt edit never calls a model silently: in
/// record "wrote 12 cassettes (3 new, 9 changed), 0 unchanged, in DIR: 12 live calls"; in
/// auto (only when something went live) "recorded 3 new cassettes in DIR: 3 live calls";
/// in live the calls. Nothing in replay, which calls nothing.
fn recording_summary(mode: Mode, t: crate::cassette::Tally, dir: &str) -> Option<String> {
    let n = |count: usize, one: &str, many: &str| {
        format!("{count} {}", if count == 1 { one } else { many })
    };
    let calls = n(t.live_calls, "live call", "live calls");
    match mode {
        Mode::Replay => None,
        Mode::Live if t.live_calls == 0 => None,
        Mode::Live => Some(format!("{calls}; nothing recorded (--cassettes live)")),
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
                (new, 0) => format!(
                    "{} new {}",
                    new,
                    if new == 1 { "cassette" } else { "cassettes" }
                ),
                (0, changed) => format!(
                    "{changed} changed {}",
                    if changed == 1 {
                        "cassette"
                    } else {
                        "cassettes"
                    }
                ),
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

/// The cassette transport for this run, with the live client below it.
pub fn build_transport(
    suite: &Suite,
    mode: Mode,
    keys: &HashMap<String, String>,
) -> Result<Transport> {
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
    let timeout =
        Duration::from_secs_f64(suite.config.defaults.timeout.unwrap_or(120.0).max(0.001));
    let redirects = std::env::var("EVALS_REDIRECT")
        .ok()
        .map(|v| {
            v.split(',')
                .filter_map(|pair| {
                    pair.split_once('=')
                        .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
                })
                .collect()
        })
        .unwrap_or_default();
    let max_response_bytes = suite
        .config
        .cassettes
        .max_response_bytes
        .unwrap_or(crate::cassette::DEFAULT_MAX_RESPONSE_BYTES);
    let live = LiveClient::new(timeout, redirects)
        .map_err(|e| Error::Failed(e.to_string()))?
        .with_max_response_bytes(max_response_bytes);
    // Keys named by the suite but not needed by this run are still scrubbed if set.
    let mut secrets = suite.secret_values();
    // And every other secret in play (GITHUB_TOKEN, another provider's key, env_files).
    secrets.extend(crate::secrets::known());
    for v in keys.values() {
        if !secrets.contains(v) {
            secrets.push(v.clone());
        }
    }
    Ok(Transport::new(
        mode,
        CassetteOptions {
            // Relative to the working directory when inside it, so messages stay short.
            dir: {
                let d = suite.cassette_dir();
                d.strip_prefix(&suite.cwd)
                    .map(|p| p.to_path_buf())
                    .unwrap_or(d)
            },
            ignore_fields: suite.config.cassettes.ignore_fields.clone(),
            redact,
            secrets,
            max_response_bytes,
        },
        Arc::new(crate::runner::Scheduled::new(
            Arc::new(live),
            crate::runner::retry::RetryPolicy::from_env(),
        )),
    ))
}

/// Where the history store is: `--history`/`EVALS_HISTORY`, else `<project>/.evals/`.
pub fn history_path(suite: &Suite, flag: Option<&Path>) -> PathBuf {
    match flag {
        Some(p) => suite.cwd.join(p),
        None => crate::history::History::default_path(&suite.project_dir),
    }
}

fn store_run(suite: &Suite, a: &RunArgs, run: &RunResult) -> Result<PathBuf> {
    let path = history_path(suite, a.history.as_deref());
    crate::history::History::open(&path)?.insert(run)?;
    Ok(path)
}

fn save_snapshot(suite: &Suite, dest: Option<&Path>, run: &RunResult) -> Result<PathBuf> {
    let dir = super::target::results_dir(suite, dest);
    let path = dir.join(super::target::stamped_name(&run.run.command, run, "json"));
    crate::error::write_atomic(&path, Json.render(run).as_bytes())?;
    Ok(path)
}
