//! Flags resolved once (uv's `*Settings::resolve`, ripgrep's `HiArgs`): a command's clap
//! arguments, where each value came from (clap's [`ValueSource`]: the command line, or the
//! environment variable clap read for it), the suite's config and the process's
//! [`Environment`] become one settled value before anything runs. Nothing after this step
//! re-reads the command line or the environment to learn what a flag said, and a value's
//! precedence is decided here alone: a flag beats its variable, which beats the config,
//! which beats the default.

use std::path::{Path, PathBuf};

use clap::ArgMatches;
use clap::parser::ValueSource;

use super::args::{Format, GateArgs, IncreaseArgs, MissingBaselineArg, RunArgs, TotalsArg};
use llm_evals::cassette::mode::{self, ModeChoice, ModeSource};
use llm_evals::env::{EnvVars, Environment};
use llm_evals::error::{Error, Result};
use llm_evals::gate::{self, CheckPlan, MissingBaseline, Rules};
use llm_evals::history::Location;
use llm_evals::results::Command as RunCommand;
use llm_evals::results::Measure;
use llm_evals::runner::{self, RunPlan};
use llm_evals::suite::config::{Display, GateConfig};
use llm_evals::suite::{Overrides, Suite, cases, lineup};

/// What the command line held for a command: its subcommand's matches, which say where each
/// value came from. `Given::none()` for a caller with no command line (every value then
/// counts as its variable's or its default's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Given<'m>(Option<&'m ArgMatches>);

impl<'m> Given<'m> {
    pub(crate) fn of(matches: &'m ArgMatches) -> Given<'m> {
        Given(Some(matches))
    }

    pub(crate) fn none() -> Given<'static> {
        Given(None)
    }

    /// Whether the argument `id` (its clap id: the field's name) was typed on the command
    /// line, not read from its environment variable nor defaulted.
    pub(crate) fn on_command_line(&self, id: &str) -> bool {
        self.0
            .and_then(|m| m.value_source(id))
            .is_some_and(|s| s == ValueSource::CommandLine)
    }
}

/// Where the history store is, and what said so (for `-v`).
#[derive(Debug, Clone)]
pub(crate) struct HistoryAt {
    pub(crate) location: Location,
    /// `--history`, `EVALS_HISTORY`, `history.url in the config`, `DATABASE_URL`, or the
    /// default.
    pub(crate) source: &'static str,
}

impl HistoryAt {
    /// First found: `--history`, `EVALS_HISTORY` (clap reads both into `flag`; `given` says
    /// which), the config's `history.url`, `DATABASE_URL` when it is a PostgreSQL or MySQL URL, else
    /// `<project>/.evals/history.sqlite3`.
    pub(crate) fn resolve(
        suite: &Suite,
        flag: Option<&Path>,
        given: Given<'_>,
        env: &Environment,
    ) -> HistoryAt {
        let at = |location, source| HistoryAt { location, source };
        if let Some(p) = flag {
            let source = if given.on_command_line("history") {
                "--history"
            } else {
                EnvVars::EVALS_HISTORY
            };
            return at(Location::parse(&p.to_string_lossy(), &suite.cwd), source);
        }
        if let Some(url) = &suite.config.history.url {
            return at(
                Location::parse(url, &suite.project_dir),
                "history.url in the config",
            );
        }
        if let Some(url) = env.var(EnvVars::DATABASE_URL)
            && llm_evals::history::url::is_database(&url)
        {
            return at(
                Location::parse(&url, &suite.project_dir),
                EnvVars::DATABASE_URL,
            );
        }
        at(
            Location::Sqlite(llm_evals::history::History::default_path(
                &suite.project_dir,
            )),
            "the default, <project>/.evals/history.sqlite3",
        )
    }
}

/// How a finished run is shown: the format and where it goes (stdout or `-o FILE`), the
/// totals, and whether a leaderboard prints at all.
#[derive(Debug, Clone)]
pub(crate) struct Shown {
    pub(crate) format: Format,
    pub(crate) output: Option<PathBuf>,
    pub(crate) totals: TotalsArg,
    /// `--display`, else `results.display`.
    pub(crate) display: Option<Display>,
    /// The HTML report for the browser when the run ends (`--open`, `display: browser|both`).
    pub(crate) browser: bool,
    /// `--no-open`: that report written, not opened.
    pub(crate) no_open: bool,
}

/// `run`, `compare`, `record` and `check`, settled: everything a run is made and shown by.
#[derive(Debug)]
pub(crate) struct RunSettings {
    pub(crate) command: RunCommand,
    /// `--min-score`, `--min-pass-rate`.
    pub(crate) limits: gate::Limits,
    /// The cassette mode and why (the flag, `EVALS_CASSETTES`, the command's default, CI).
    pub(crate) cassettes: ModeChoice,
    pub(crate) history: HistoryAt,
    /// `--branch`; `None`: what CI or git says.
    pub(crate) branch: Option<String>,
    pub(crate) on_streak: runner::OnStreak,
    /// What the flags narrowed, as the run stores it (the plan adds the shard).
    pub(crate) selection: runner::Selection,
    /// Where the run's JSON snapshot is saved; `None`: not saved (`--no-autosave`,
    /// `results.autosave: false`).
    pub(crate) snapshots: Option<PathBuf>,
    /// The results folder (`--destination`, `results.destination`): the browser report's.
    pub(crate) results_dir: PathBuf,
    pub(crate) shown: Shown,
    /// The remote tracker and why; `--project`.
    #[cfg(feature = "trackers")]
    pub(crate) tracker: (llm_evals::tracker::Choice, llm_evals::tracker::Flags),
}

impl RunSettings {
    /// Settles a run's flags: the thresholds, the plan (the lineup, the cases, the shard),
    /// the cassette mode, the tracker, the history, the outputs, in that order (the first
    /// bad one is the error).
    pub(crate) fn resolve(
        suite: &Suite,
        a: &RunArgs,
        given: Given<'_>,
        command: RunCommand,
        env: &Environment,
    ) -> Result<(RunSettings, RunPlan)> {
        let limits = limits(a)?;
        let plan = plan(suite, a)?;
        let cassettes = a.cassettes.as_deref().map(|m| {
            let source = if given.on_command_line("cassettes") {
                ModeSource::Flag
            } else {
                ModeSource::Env
            };
            (m, source)
        });
        let cassettes = mode::choose(cassettes, command.default_mode(), command.as_str(), env.ci)
            .map_err(|e| match cassettes {
            // The variable is named as it was set: the flag was not given.
            Some((m, ModeSource::Env)) => Error::Usage(format!(
                "{}={m}: not a cassette mode; set it to replay, record, auto or live, or unset it",
                EnvVars::EVALS_CASSETTES
            )),
            _ => e.into(),
        })?;
        #[cfg(feature = "trackers")]
        let tracker = (
            llm_evals::tracker::choose(
                a.tracker.as_deref(),
                a.local,
                suite.config.tracker,
                &suite.display_path,
                &|name| suite.var(env, name),
            )?,
            llm_evals::tracker::Flags {
                project: a.project.clone(),
            },
        );
        #[cfg(not(feature = "trackers"))]
        no_tracker(suite, a)?;
        let results_dir = super::target::results_dir(suite, a.destination.as_deref());
        let autosave = !a.no_autosave && suite.config.results.autosave != Some(false);
        let display = a.display(suite.config.results.display);
        let settings = RunSettings {
            command,
            limits,
            cassettes,
            history: HistoryAt::resolve(suite, a.history.as_deref(), given, env),
            branch: a.branch.clone(),
            on_streak: if a.yes {
                runner::OnStreak::GoOn
            } else {
                runner::OnStreak::Ask
            },
            selection: runner::Selection {
                models: a.models.clone(),
                datasets: a.select.datasets.clone(),
                cases: a.select.cases.clone(),
                efforts: a.efforts.clone(),
                temperatures: a.temperatures.clone(),
                max_tokens: a.max_tokens,
                tags: a.select.tags.clone(),
                shard: plan.shard.clone(),
            },
            snapshots: autosave.then(|| results_dir.clone()),
            results_dir,
            shown: Shown {
                format: a.format,
                output: a.output.clone(),
                totals: a.totals,
                display,
                browser: super::open::wanted(display, a.open),
                no_open: a.no_open,
            },
            #[cfg(feature = "trackers")]
            tracker,
        };
        Ok((settings, plan))
    }

    /// The library's options for this run: the mode, the scorers of the config, the
    /// streak policy, the branch, the selection, the limits, the environment and the
    /// CLI's cancel token.
    pub(crate) fn options(&self, env: &Environment) -> runner::RunOptions {
        let options = runner::RunOptions::default()
            .mode(self.cassettes.mode)
            .scorer(llm_evals::score::ScorerChoice::Config)
            .on_streak(self.on_streak)
            .command(self.command)
            .selection(self.selection.clone())
            .limits(self.limits)
            .env(env.clone())
            .cancel(super::interrupt::token());
        match &self.branch {
            Some(b) => options.branch(b.clone()),
            None => options,
        }
    }
}

/// A build without the `trackers` feature keeps results local: a tracker asked for by name
/// (`--tracker`, `tracker:`) is refused; a tracker's key in the environment chooses nothing.
#[cfg(not(feature = "trackers"))]
fn no_tracker(suite: &Suite, a: &RunArgs) -> Result<()> {
    let asked = match a.tracker.as_deref() {
        Some("none") | None => suite
            .config
            .tracker
            .map(|t| format!("tracker: {t:?} in the config")),
        Some(name) => Some(format!("--tracker {name}")),
    };
    match asked {
        Some(asked) if !a.local => Err(Error::Usage(format!(
            "{asked}: this build of evals has no remote trackers (the `trackers` feature): build it with `--features trackers`, or keep results local with --local"
        ))),
        _ => Ok(()),
    }
}

/// The plan of `run`, `compare`, `record` and `check` from their flags: the lineup the
/// flags narrow or override (`-m`, `-e`, `-t`, `--max-tokens`), the cases they select, the
/// shard's slice of them, `-p`, `-j`, `--repeat`.
pub(crate) fn plan(suite: &Suite, a: &RunArgs) -> Result<RunPlan> {
    let efforts = a
        .efforts
        .iter()
        .map(|e| match e.trim() {
            "default" | "" => None,
            other => Some(other.to_string()),
        })
        .collect();
    let temperatures = a
        .temperatures
        .iter()
        .map(|t| match t.trim() {
            "default" | "" => Ok(None),
            other => other
                .parse::<f64>()
                .ok()
                .filter(|v| (0.0..=2.0).contains(v))
                .map(Some)
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "-t {t}: a temperature is a number from 0 to 2, or `default`"
                    ))
                }),
        })
        .collect::<Result<Vec<_>>>()?;
    let overrides = Overrides {
        models: a.models.clone(),
        efforts,
        temperatures,
        max_tokens: a.max_tokens,
    };
    let lineup = lineup::expand(
        &suite.config,
        &overrides,
        &llm_evals::provider::Registry::default(),
    );
    let cases = cases::select(&suite.cases, &super::cases::selection(&a.select))?;
    // `check --shard K/N`: the plan keeps its slice of the selection, and where it stands.
    let (cases, shard) = match &a.sharding {
        Some((spec, group)) => {
            let (mine, shard) =
                llm_evals::runner::shard::slice(suite, &lineup.contenders, &cases, *spec, group);
            (mine, Some(shard))
        }
        None => (cases, None),
    };
    let mut plan =
        RunPlan::new(suite, lineup, cases, a.parallelism, a.concurrency)?.with_repeat(a.repeat)?;
    plan.shard = shard;
    Ok(plan)
}

/// `--min-score` and `--min-pass-rate`, each a fraction (LLMEvalForge writes `0.95`).
pub(crate) fn limits(a: &RunArgs) -> Result<gate::Limits> {
    for (flag, v) in [
        ("--min-score", a.min_score),
        ("--min-pass-rate", a.min_pass_rate),
    ] {
        if let Some(v) = v
            && !(0.0..=1.0).contains(&v)
        {
            return Err(Error::Usage(format!(
                "{flag} {v}: expected a fraction between 0 and 1 (0.95 is 95%)"
            )));
        }
    }
    Ok(gate::Limits {
        min_score: a.min_score,
        min_pass_rate: a.min_pass_rate,
    })
}

impl IncreaseArgs {
    /// `rules` with the rise cost, tokens and latency may take: each flag, else the
    /// config's `gate:` key of its name (checked as it loaded), else not gated.
    pub(crate) fn apply(&self, mut rules: Rules, config: Option<&GateConfig>) -> Result<Rules> {
        let config = config.copied().unwrap_or_default();
        for (measure, flag, key) in [
            (
                Measure::Cost,
                self.max_cost_increase,
                config.max_cost_increase,
            ),
            (
                Measure::Tokens,
                self.max_tokens_increase,
                config.max_tokens_increase,
            ),
            (
                Measure::Latency,
                self.max_latency_increase,
                config.max_latency_increase,
            ),
        ] {
            if let Some(pct) = flag.or(key) {
                rules = rules.max_increase(measure, pct)?;
            }
        }
        Ok(rules)
    }
}

impl GateArgs {
    /// The gate's plan (`check`, `merge`): the baseline, the rules (the tolerance, the
    /// statistical gate and the rises allowed, checked; `config` is the suite's `gate:`),
    /// what a missing baseline does.
    pub(crate) fn plan(&self, config: Option<&GateConfig>) -> Result<CheckPlan> {
        let stat = gate::Stat {
            force: self.stat,
            alpha: self.alpha,
            inconclusive_fails: self.inconclusive == super::args::InconclusiveArg::Fail,
        };
        Ok(CheckPlan::check(
            self.baseline.as_deref().and_then(gate::Baseline::parse),
            self.increase
                .apply(Rules::new(self.tolerance, false)?.with_stat(stat)?, config)?,
            match self.missing_baseline {
                MissingBaselineArg::Fail => MissingBaseline::Fail,
                MissingBaselineArg::Pass => MissingBaseline::Pass,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches};

    use super::*;
    use crate::cli::args::{Cli, Command};

    fn toy() -> Suite {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/toy");
        Suite::locate(&dir, &llm_evals::suite::Locate::default()).expect("the toy suite")
    }

    /// `compare`'s settings from `argv` (after `evals compare`), as `main` resolves them: the
    /// process's own command line (this test binary's) is never looked at.
    fn compare(argv: &[&str], env: &Environment) -> RunSettings {
        let argv = [&["evals", "compare"], argv].concat();
        let matches = Cli::command().try_get_matches_from(argv).expect("parses");
        let cli = Cli::from_arg_matches(&matches).expect("parses");
        let Command::Compare(a) = cli.command else {
            panic!("compare");
        };
        let (_, sub) = matches.subcommand().expect("a subcommand");
        RunSettings::resolve(&toy(), &a, Given::of(sub), RunCommand::Compare, env)
            .expect("resolves")
            .0
    }

    #[test]
    fn where_a_value_came_from_is_clap_s_value_source_not_the_process_command_line() {
        let env = Environment::from_vars(|_| None);
        let s = compare(&["--cassettes", "replay", "--history", "h.sqlite3"], &env);
        assert_eq!(s.cassettes.why, "--cassettes replay");
        assert_eq!(s.history.source, "--history");
        let s = compare(&[], &env);
        assert_eq!(s.cassettes.why, "the default of `compare`");
        assert_eq!(
            s.history.source,
            "the default, <project>/.evals/history.sqlite3"
        );
    }

    #[test]
    fn the_config_beats_database_url_which_beats_the_default() {
        let mut suite = toy();
        let pg = Environment::from_vars(|n| {
            (n == "DATABASE_URL").then(|| "postgres://u@db.example/evals".into())
        });
        let at = HistoryAt::resolve(&suite, None, Given::none(), &pg);
        assert_eq!(at.source, "DATABASE_URL");
        suite.config.history.url = Some("mine.sqlite3".into());
        let at = HistoryAt::resolve(&suite, None, Given::none(), &pg);
        assert_eq!(at.source, "history.url in the config");
        assert_eq!(
            at.location,
            Location::Sqlite(suite.project_dir.join("mine.sqlite3"))
        );
        // A value clap read from EVALS_HISTORY (not typed on the command line) beats both.
        let at = HistoryAt::resolve(&suite, Some(Path::new("v.sqlite3")), Given::none(), &pg);
        assert_eq!(at.source, "EVALS_HISTORY");
    }

    #[test]
    fn the_ci_rule_and_the_streak_policy_are_settled_here() {
        let ci = Environment::from_vars(|n| (n == "CI").then(|| "true".into()));
        let s = compare(&[], &ci);
        assert_eq!(s.cassettes.mode, llm_evals::cassette::Mode::Replay);
        assert_eq!(s.on_streak, runner::OnStreak::Ask);
        let s = compare(&["-y", "--no-autosave"], &ci);
        assert_eq!(s.on_streak, runner::OnStreak::GoOn);
        assert_eq!(s.snapshots, None);
    }
}
