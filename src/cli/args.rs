//! The command line's clap types: flags, subcommands and their help text.

// The doc comments are clap's `--help` text (`<project>` is a placeholder), not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};

/// The headings `--help` groups flags under, in the order a command's help shows them.
pub(crate) mod heading {
    pub(crate) const SELECTION: &str = "Selection";
    pub(crate) const RUNNING: &str = "Running";
    pub(crate) const CASSETTES: &str = "Cassettes";
    pub(crate) const GATE: &str = "The gate";
    pub(crate) const REPORTS: &str = "Reports";
    pub(crate) const OUTPUT: &str = "Output";
    pub(crate) const HISTORY: &str = "History and trackers";
    pub(crate) const SHARDING: &str = "Sharding";
    pub(crate) const GLOBAL: &str = "Global options";
}
use heading::*;

/// A value parser that offers `values` to `--help` and shell completion and takes any text:
/// judging it is left to the settings step, which knows whether it came from the flag or
/// from its environment variable and says which (`--cassettes tape`, `EVALS_CASSETTES=tape`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Offered(pub(crate) &'static [&'static str]);

impl TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|v| PossibleValue::new(*v))))
    }
}

/// The cassette modes `--cassettes` offers.
pub(crate) const CASSETTE_MODES: &[&str] = &["replay", "record", "auto", "live"];

/// A record/replay regression gate for LLM evaluation suites.
#[derive(Debug, Parser)]
#[command(name = "evals", version, about, long_about = None, disable_version_flag = true,
          disable_help_flag = true, after_help = examples::TOP)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Args)]
#[command(next_help_heading = GLOBAL)]
pub(crate) struct Global {
    /// Use this config file; skip the search.
    #[arg(short = 'C', long = "config", global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Do not search for the suite: use ./evals/.llm-evals.config.yml only.
    #[arg(long, global = true)]
    pub(crate) no_search: bool,
    /// Say on stderr which suite file was found and why, the cassette mode and why, where
    /// each key was found (names only) and the history file.
    #[arg(short = 'v', long, global = true)]
    pub(crate) verbose: bool,
    /// When to use color.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub(crate) color: ColorChoice,
    /// Show every leaderboard column; otherwise the least important ones are left out to
    /// fit the terminal (its width, or COLUMNS).
    #[arg(long, global = true)]
    pub(crate) wide: bool,
    /// Print the glossary under the leaderboard: what each column means, and the whole
    /// name of each shortened one.
    #[arg(long, global = true)]
    pub(crate) explain: bool,
    /// Print the version.
    #[arg(short = 'V', long = "version", action = clap::ArgAction::Version)]
    pub(crate) version: Option<bool>,
    /// Print help (a summary with -h).
    // Declared here, under the global options, so a command's help opens with its own flags.
    #[arg(short = 'h', long = "help", global = true, action = clap::ArgAction::Help)]
    pub(crate) help: Option<bool>,
}

/// `-p N`: at least 1 is checked with the plan (`-p 0` says why), at most
/// [`MAX_PARALLELISM`](llm_evals::suite::bounds::MAX_PARALLELISM) here, before any work.
fn parallelism(text: &str) -> Result<usize, String> {
    use llm_evals::suite::bounds;
    bounds::count(
        text,
        bounds::MAX_PARALLELISM,
        "cases in flight per experiment",
    )
}

/// `-j N` (0: every experiment at once), at most
/// [`MAX_CONCURRENCY`](llm_evals::suite::bounds::MAX_CONCURRENCY).
fn concurrency(text: &str) -> Result<usize, String> {
    use llm_evals::suite::bounds;
    bounds::count(
        text,
        bounds::MAX_CONCURRENCY,
        "experiments at a time (0: all)",
    )
}

/// `--repeat K`, at most [`MAX_REPEAT`](llm_evals::suite::bounds::MAX_REPEAT).
fn repeat(text: &str) -> Result<usize, String> {
    use llm_evals::suite::bounds;
    bounds::count(text, bounds::MAX_REPEAT, "tries per case")
}

/// `--baseline REF`: an empty one names nothing, and would pass as "no baseline".
fn baseline(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err(
            "an empty baseline names nothing: give a branch (--baseline main), a run \
                    (its # or id from `evals history`) or a snapshot (--baseline run.json), \
                    or leave out --baseline"
                .into(),
        );
    }
    Ok(text.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "parsed once per process; `check` carries the gate's and the report files' groups"
)]
pub(crate) enum Command {
    /// Write a small working suite (config, prompt, cases) that runs offline at once.
    #[command(after_help = examples::INIT)]
    Init {
        /// The project folder (default: here).
        dir: Option<PathBuf>,
    },
    /// List the cases and the refused lineup entries; calls nothing.
    #[command(after_help = examples::CASES)]
    Cases(SelectArgs),
    /// Offline checks of inputs, expected.json and the scorer; exit 1 on any problem.
    #[command(after_help = examples::VERIFY)]
    Verify(SelectArgs),
    /// Run experiments with the per-case breakdown, then the leaderboard; exit 1 on an error or a failed threshold.
    #[command(after_help = examples::RUN)]
    Run(RunArgs),
    /// Run the lineup and print the leaderboard; exit 1 on an error or a failed threshold.
    #[command(after_help = examples::COMPARE)]
    Compare(RunArgs),
    /// Call the models live and rewrite the cassettes of the cases that ran.
    #[command(after_help = examples::RECORD)]
    Record(RunArgs),
    /// Replay, store the run, compare it with a baseline and gate: exit 0 passed, 1 regressed, 2 no baseline.
    #[command(after_help = examples::CHECK)]
    Check(CheckArgs),
    /// Call the live models on a seeded sample of cases and compare their scores and answers
    /// with the recorded cassettes': exit 0 no drift, 1 drift, 2 could not measure.
    #[command(after_help = examples::DRIFT)]
    Drift(DriftArgs),
    /// Put the shards of one run (`check --shard K/N`) back together, store the run and gate
    /// it as `check` does: exit 0 passed, 1 regressed, 2 a shard missing or no baseline.
    #[command(after_help = examples::MERGE)]
    Merge(MergeArgs),
    /// List the stored runs, newest first, each with its # (`evals report 3 --baseline 2`).
    #[command(after_help = examples::HISTORY)]
    History(HistoryArgs),
    /// Write a stored run's JSON snapshot (a baseline for `check --baseline FILE.json`).
    #[command(after_help = examples::EXPORT)]
    Export(ExportArgs),
    /// List the cases whose verdict varied across the last runs of a branch (to fix or
    /// quarantine them).
    #[command(after_help = examples::FLAKY)]
    Flaky(FlakyArgs),
    /// Render a stored run (default: the latest), optionally compared with a baseline, as md,
    /// junit, json, diff, html or tui; with --fail-on-regression, exit as `check` would.
    #[command(after_help = examples::REPORT)]
    Report(ReportArgs),
    /// Put a check's Markdown on the pull request as one comment, updated in place (or, with
    /// --issue, in one open issue: a scheduled job's).
    #[command(after_help = examples::COMMENT)]
    Comment(CommentArgs),
    /// Serve a read-only web dashboard of the history: runs, a run's report against its
    /// baseline, a case across runs, the trend on main, JSON downloads. Until Ctrl-C.
    #[command(after_help = examples::DASHBOARD)]
    Dashboard(DashboardArgs),
    /// Print each weighted column, its direction and its real share of the score.
    #[command(after_help = examples::WEIGHTS)]
    Weights,
    /// Re-print the leaderboard from a saved JSON snapshot; calls nothing.
    #[command(after_help = examples::RENDER)]
    Render(RenderArgs),
    /// Check the recordings: scan for secrets, list missing/stale/unused, prune unused.
    #[command(after_help = examples::CASSETTES)]
    Cassettes {
        #[command(subcommand)]
        command: CassettesCommand,
    },
    /// Rewrite an agent-evals / old llm-evals config (top-level vendors:, direct:) into
    /// today's provider sections, keeping comments and the original as FILE.bak.
    #[command(after_help = examples::UPGRADE_CONFIG)]
    UpgradeConfig(UpgradeArgs),
    /// Write an evals suite from another tool's config (promptfoo), listing what has no
    /// equivalent with its file and line.
    #[command(after_help = examples::IMPORT)]
    Import {
        #[command(subcommand)]
        command: ImportCommand,
    },
    /// Print the version.
    #[command(after_help = examples::VERSION)]
    Version,
    /// The stdio MCP server a worker's MCP client starts (`EVALS_MCP_<NAME>_COMMAND`): relays
    /// its JSON-RPC lines to the gateway at URL. Not for people.
    #[command(hide = true)]
    McpRelay {
        /// The gateway's URL for the server (`…/upstream/<name>/<token>/`).
        url: String,
    },
    /// Print a shell completion script (for the name evals was run by: evals or llm-evals).
    #[command(after_help = examples::COMPLETION)]
    Completion {
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the manual page (roff) to stdout, or write one page per command to a folder.
    #[command(after_help = examples::MAN)]
    Man {
        /// Write `evals.1` and one `evals-COMMAND.1` per command into DIR instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// The EXAMPLES section of each command's `--help`.
pub(crate) mod examples {
    pub(crate) const TOP: &str = "\
Examples:
  evals init                     a small suite that runs offline at once
  evals compare                  run the lineup, print the leaderboard
  evals record                   call the models, rewrite the cassettes
  evals check --baseline main    the CI gate: replay, compare with main, exit 0/1/2
  evals COMMAND --help           each command's flags and examples";
    pub(crate) const INIT: &str = "\
Examples:
  evals init                     the suite in ./evals, then `evals compare`
  evals init my-project          in my-project/evals";
    pub(crate) const CASES: &str = "\
Examples:
  evals cases                    every case, and the lineup's refusals
  evals cases -d tickets --tag hard";
    pub(crate) const VERIFY: &str = "\
Examples:
  evals verify                   every case against the scorer, offline
  evals verify -c vague          one case variant";
    pub(crate) const RUN: &str = "\
Examples:
  evals run                                 every contender, per-case breakdown
  evals run -m fake/echo -d animals         one model on one dataset
  evals run -t 0,0.7 --repeat 5 -n          the matrix and the calls; calls nothing
  evals run --min-pass-rate 0.9             exit 1 below 90% passing cases
  evals run --format html -o run.html       the standalone HTML report";
    pub(crate) const COMPARE: &str = "\
Examples:
  evals compare -n                          the experiment matrix; calls nothing
  evals compare                             the leaderboard
  evals compare -e low,high --totals both   efforts side by side, totals per variant";
    pub(crate) const RECORD: &str = "\
Examples:
  evals record                              call the models, rewrite the cassettes
  evals record -m openai/gpt-4o-mini -c vague
  EVALS_REDIRECT=https://api.openai.com/v1=http://127.0.0.1:8080/v1 evals record";
    pub(crate) const CHECK: &str = "\
Examples:
  evals check --baseline main                          gate against main's latest run
  evals check --baseline main --markdown comment.md --junit junit.xml
  evals check --baseline run.json --tolerance 0.05     a snapshot as the baseline
  evals check --missing-baseline pass                  the first run of a new suite
  evals check --shard 1/4 --json shard-1.json          one CI job of four";
    pub(crate) const DRIFT: &str = "\
Environment:
  The provider keys of the lineup (OPENAI_API_KEY, OPENROUTER_API_KEY, ...): drift calls
  the live models. A missing key, or a provider that does not answer, exits 2.

Examples:
  evals drift                                   every case, live against the cassettes
  evals drift --sample 20 --repeat 3            20 seeded cases, three live tries each
  evals drift --sample 10% --markdown drift.md  the report for `evals comment --issue`
  evals drift --update                          then re-record the changed cases only";
    pub(crate) const MERGE: &str = "\
Examples:
  evals merge shard-*.json --baseline main --markdown comment.md
  evals merge --group 1234-1 --branch feature --baseline main";
    pub(crate) const HISTORY: &str = "\
Examples:
  evals history                            the latest runs, each with its #
  evals history --branch main --limit 5 --json
  evals history migrate --to postgres://evals@db.internal/evals";
    pub(crate) const MIGRATE: &str = "\
Examples:
  evals history migrate --to postgres://evals@db.internal/evals
  PGPASSWORD=... evals history migrate --to postgres://evals@db/evals --history old.sqlite3";
    pub(crate) const EXPORT: &str = "\
Examples:
  evals export 3 -o run.json               then `evals check --baseline run.json` elsewhere";
    pub(crate) const FLAKY: &str = "\
Examples:
  evals flaky                              main's last 10 runs
  evals flaky --branch release --last 30 --json";
    pub(crate) const REPORT: &str = "\
Examples:
  evals report                             the latest run as Markdown
  evals report --format tui                the latest run's leaderboard
  evals report 3 --baseline 2 --fail-on-regression
  evals report --baseline main -o report.html";
    pub(crate) const COMMENT: &str = "\
Environment:
  GITHUB_TOKEN        the token that writes the comment (needs pull-requests: write)
  GITHUB_REPOSITORY   the repository, OWNER/NAME, when --repo is not given
  GITHUB_EVENT_PATH   the event file: the pull request's number when --pr is not given
  GITHUB_API_URL      the API's root on GitHub Enterprise (default https://api.github.com)
  GitHub Actions sets all but GITHUB_TOKEN; pass it to the step:
  `env: { GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }} }`.

Examples:
  evals check --baseline main --markdown comment.md; evals comment comment.md
  evals comment comment.md --pr 7 --repo acme/app
  evals comment nightly.md --issue \"evals nightly\"          open it, or update it in place
  evals comment nightly.md --issue \"evals nightly\" --close  passing again: close it";
    pub(crate) const DASHBOARD: &str = "\
Examples:
  evals dashboard                          http://127.0.0.1:4567/
  evals dashboard --port 0 --history postgres://evals@db.internal/evals";
    pub(crate) const WEIGHTS: &str = "\
Examples:
  evals weights";
    pub(crate) const RENDER: &str = "\
Examples:
  evals render evals/results/run.json               the leaderboard again
  evals render evals/results/run.json -o report.html --open";
    pub(crate) const CASSETTES: &str = "\
Examples:
  evals cassettes status                   recorded, missing, stale, unused
  evals cassettes status --check           the same, exit 1 if any is missing or stale (CI)
  evals cassettes scan                     exit 1 naming each file with a secret
  evals cassettes prune -n                 what an unused-cassette prune removes";
    pub(crate) const SCAN: &str = "\
Examples:
  evals cassettes scan                     the suite's cassettes
  evals cassettes scan evals/cassettes/openai fixtures/";
    pub(crate) const STATUS: &str = "\
Examples:
  evals cassettes status                   per case and contender
  evals cassettes status --check           in CI: exit 1 if any is missing, stale or corrupt";
    pub(crate) const PRUNE: &str = "\
Examples:
  evals cassettes prune -n                 list what would be removed
  evals cassettes prune";
    pub(crate) const UPGRADE_CONFIG: &str = "\
Examples:
  evals upgrade-config -n --diff           the change as a diff; writes nothing
  evals upgrade-config                     rewrite it, the original kept as FILE.bak";
    pub(crate) const IMPORT: &str = "\
Examples:
  evals import promptfoo                            ./promptfooconfig.yaml into ./evals
  evals import promptfoo other/promptfooconfig.yaml -o other/evals";
    pub(crate) const IMPORT_PROMPTFOO: &str = "\
Examples:
  evals import promptfoo                            ./promptfooconfig.yaml into ./evals
  evals import promptfoo pf/promptfooconfig.yaml -o evals --force   replace ./evals";
    pub(crate) const VERSION: &str = "\
Examples:
  evals version";
    pub(crate) const COMPLETION: &str = "\
Examples:
  evals completion bash > ~/.local/share/bash-completion/completions/evals
  evals completion zsh > ~/.zfunc/_evals
  evals completion fish > ~/.config/fish/completions/evals.fish";
    pub(crate) const MAN: &str = "\
Examples:
  evals man | man -l -
  evals man --dir ~/.local/share/man/man1";
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args, Default, Clone)]
#[command(next_help_heading = SELECTION)]
pub(crate) struct SelectArgs {
    /// Only this dataset (repeat or comma-separate for more).
    #[arg(short = 'd', long = "dataset", value_delimiter = ',')]
    pub(crate) datasets: Vec<String>,
    /// Only this case or variant: `vague`, `vague/003` (repeatable).
    #[arg(short = 'c', long = "case", value_delimiter = ',')]
    pub(crate) cases: Vec<String>,
    /// Only cases carrying this tag (JSONL `tags`; repeat for more: any of them matches).
    #[arg(long = "tag", value_name = "TAG", value_delimiter = ',')]
    pub(crate) tags: Vec<String>,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) select: SelectArgs,
    /// Only these models (contender ids like openai/gpt-4o-mini; comma-separated).
    #[arg(short = 'm', long = "models", value_delimiter = ',', help_heading = SELECTION)]
    pub(crate) models: Vec<String>,
    /// Reasoning efforts (comma-separated; `default` sends none). Beats the config.
    #[arg(short = 'e', long = "effort", value_delimiter = ',', help_heading = SELECTION)]
    pub(crate) efforts: Vec<String>,
    /// Temperatures (comma-separated; `default` sends none). Beats the config.
    #[arg(short = 't', long = "temperature", value_delimiter = ',', help_heading = SELECTION)]
    pub(crate) temperatures: Vec<String>,
    /// Max tokens per call. Beats the config.
    #[arg(long, help_heading = SELECTION)]
    pub(crate) max_tokens: Option<u32>,
    /// Cases in flight inside each experiment (default: defaults.parallelism, else 4; at
    /// most 1024).
    #[arg(short = 'p', long, value_parser = parallelism, help_heading = RUNNING)]
    pub(crate) parallelism: Option<usize>,
    /// Experiments at a time (default: CPU count; 0 starts them all; at most 1024).
    #[arg(short = 'j', long = "concurrency", value_parser = concurrency, help_heading = RUNNING)]
    pub(crate) concurrency: Option<usize>,
    /// Run each case K times per contender (default: defaults.repeat, else 1): each try is
    /// its own recorded interaction; reports add ±, pass^k and flaky columns (at most 10000).
    #[arg(long, value_name = "K", value_parser = repeat, help_heading = RUNNING)]
    pub(crate) repeat: Option<usize>,
    /// Show the experiment matrix and the number of calls; call nothing.
    #[arg(short = 'n', long, help_heading = RUNNING)]
    pub(crate) dry_run: bool,
    /// Keep going when 100 calls in a row fail, without asking.
    #[arg(short = 'y', long, help_heading = RUNNING)]
    pub(crate) yes: bool,
    /// Cassette mode (default: record for `record`, replay for `check`, else auto; auto
    /// acts as replay when CI is set).
    #[arg(long = "cassettes", env = "EVALS_CASSETTES", value_name = "MODE",
          value_parser = Offered(CASSETTE_MODES), help_heading = CASSETTES)]
    pub(crate) cassettes: Option<String>,
    /// Exit 1 when an experiment's mean score (its primary metric) is below FRACTION.
    #[arg(long, value_name = "FRACTION", help_heading = GATE)]
    pub(crate) min_score: Option<f64>,
    /// Exit 1 when the share of an experiment's cases that pass is below FRACTION (a failing
    /// case alone then no longer fails the run; without it, every case must pass).
    #[arg(long, value_name = "FRACTION", help_heading = GATE)]
    pub(crate) min_pass_rate: Option<f64>,
    /// Output format for stdout or -o.
    #[arg(long, value_enum, default_value_t = Format::Tui, help_heading = OUTPUT)]
    pub(crate) format: Format,
    /// Write the report to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE", help_heading = OUTPUT)]
    pub(crate) output: Option<PathBuf>,
    /// Totals after the per-dataset tables: overall, per case variant across datasets, or both.
    #[arg(long, value_enum, default_value_t = TotalsArg::Overall, help_heading = OUTPUT)]
    pub(crate) totals: TotalsArg,
    /// How the run ends, beating `results.display`: none, tui (the leaderboard), browser
    /// (the HTML report) or both.
    #[arg(long, value_name = "HOW", help_heading = OUTPUT)]
    pub(crate) display: Option<DisplayArg>,
    /// Open the HTML report in the browser when the run ends (as `results.display: browser`
    /// does; never on CI).
    #[arg(long, conflicts_with = "no_open", help_heading = OUTPUT)]
    pub(crate) open: bool,
    /// Write the browser report (`results.display: browser|both`, `--open`) without opening it.
    #[arg(long, help_heading = OUTPUT)]
    pub(crate) no_open: bool,
    /// The history store: a SQLite file or a postgres:// or mysql:// URL (default: the config's
    /// history.url, DATABASE_URL if such a URL, else <project>/.evals/history.sqlite3).
    #[arg(long = "history", env = "EVALS_HISTORY", value_name = "PATH|URL", help_heading = HISTORY)]
    pub(crate) history: Option<PathBuf>,
    /// Record the run under this branch instead of the one git or CI reports.
    #[arg(long = "branch", value_name = "NAME", help_heading = HISTORY)]
    pub(crate) branch: Option<String>,
    /// Where JSON snapshots are saved (default: results.destination).
    #[arg(long, value_name = "DIR", help_heading = HISTORY)]
    pub(crate) destination: Option<PathBuf>,
    /// Do not save a JSON snapshot of the run.
    #[arg(long, help_heading = HISTORY)]
    pub(crate) no_autosave: bool,
    /// Where the results go beside the local snapshot: local (none), otlp, logfire or
    /// braintrust (default: the config's tracker:, else the one tracker whose key is set).
    #[arg(long, value_name = "NAME", value_parser = Offered(TRACKERS), help_heading = HISTORY)]
    pub(crate) tracker: Option<String>,
    /// The tracker's project (Braintrust's, by name; default: the config's project:).
    #[arg(long, value_name = "NAME", help_heading = HISTORY)]
    pub(crate) project: Option<String>,
    /// No remote tracker, whatever the config or the environment says (as --tracker none):
    /// the JSON snapshot alone.
    #[arg(long, help_heading = HISTORY)]
    pub(crate) local: bool,
    /// `check --shard K/N`'s slice and run group, set by `check` (no flag of its own here).
    #[arg(skip)]
    pub(crate) sharding: Option<(llm_evals::runner::shard::ShardSpec, String)>,
}

/// The trackers `--tracker` offers (`llm_evals::tracker::NAMES`; a test holds them equal).
pub(crate) const TRACKERS: &[&str] = &["local", "none", "otlp", "logfire", "braintrust"];

#[cfg(all(test, feature = "trackers"))]
#[test]
fn the_offered_trackers_are_the_trackers() {
    assert_eq!(TRACKERS, llm_evals::tracker::NAMES);
}

impl RunArgs {
    /// `--display`, else the config's `results.display`.
    pub(crate) fn display(
        &self,
        config: Option<llm_evals::suite::config::Display>,
    ) -> Option<llm_evals::suite::config::Display> {
        use llm_evals::suite::config::Display;
        self.display
            .map(|d| match d {
                DisplayArg::None => Display::None,
                DisplayArg::Tui => Display::Tui,
                DisplayArg::Browser => Display::Browser,
                DisplayArg::Both => Display::Both,
            })
            .or(config)
    }
}

/// `--display`: `results.display`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DisplayArg {
    None,
    Tui,
    Browser,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum TotalsArg {
    #[default]
    Overall,
    Variant,
    Both,
}

impl From<TotalsArg> for llm_evals::report::Totals {
    fn from(t: TotalsArg) -> Self {
        match t {
            TotalsArg::Overall => Self::Overall,
            TotalsArg::Variant => Self::Variant,
            TotalsArg::Both => Self::Both,
        }
    }
}

/// `--format`: the same values on every command that has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum Format {
    /// The terminal view: the leaderboard (and, for `run`, the per-case breakdown).
    #[default]
    Tui,
    /// Markdown (the PR comment).
    Md,
    /// JUnit XML.
    Junit,
    /// The JSON snapshot (with the comparison, when there is one).
    Json,
    /// Unified diffs of changed outputs.
    Diff,
    /// A standalone HTML report (write it with -o FILE).
    Html,
}

impl From<Format> for llm_evals::report::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Tui => Self::Terminal,
            Format::Md => Self::Markdown,
            Format::Junit => Self::Junit,
            Format::Json => Self::Json,
            Format::Diff => Self::Diff,
            Format::Html => Self::Html,
        }
    }
}

/// The gate's flags, shared by `check` and `merge`.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = GATE)]
pub(crate) struct GateArgs {
    /// Compare with this baseline: a branch (its latest earlier run), a run (# or id from
    /// `evals history`), or FILE.json.
    #[arg(long, value_name = "REF", value_parser = baseline)]
    pub(crate) baseline: Option<String>,
    /// How far (0..1) an experiment's mean primary score may fall before it regresses.
    #[arg(long, default_value_t = 0.02, value_name = "FRACTION")]
    pub(crate) tolerance: f64,
    /// What to do when no usable baseline is found.
    #[arg(long, value_enum, default_value_t = MissingBaselineArg::Fail, value_name = "WHAT")]
    pub(crate) missing_baseline: MissingBaselineArg,
    /// Gate an experiment's drop on a paired test even when every case ran once (it is on
    /// whenever the run or the baseline has --repeat K > 1).
    #[arg(long)]
    pub(crate) stat: bool,
    /// The significance level of the statistical gate.
    #[arg(long, default_value_t = 0.05, value_name = "P")]
    pub(crate) alpha: f64,
    /// What a drop past the tolerance that is not significant does: pass (reported) or fail.
    #[arg(long, value_enum, default_value_t = InconclusiveArg::Pass, value_name = "WHAT")]
    pub(crate) inconclusive: InconclusiveArg,
    #[command(flatten)]
    pub(crate) increase: IncreaseArgs,
}

/// How far cost, tokens and latency may rise over the baseline's (`check`, `merge`,
/// `report`); each beats the config's `gate:` key of its name.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = GATE)]
pub(crate) struct IncreaseArgs {
    /// Fail when an experiment's cost on the cases both runs share rose by more than PCT
    /// percent (default: gate.max_cost_increase, else not gated).
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub(crate) max_cost_increase: Option<f64>,
    /// Fail when an experiment's tokens (in and out) on the shared cases rose by more than
    /// PCT percent (default: gate.max_tokens_increase).
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub(crate) max_tokens_increase: Option<f64>,
    /// Fail when an experiment's p50 latency on the shared cases rose by more than PCT
    /// percent: the recorded latency, the same on every replay (default:
    /// gate.max_latency_increase).
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub(crate) max_latency_increase: Option<f64>,
}

/// The report files a gated run writes, shared by `check` and `merge`.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = REPORTS)]
pub(crate) struct ReportFiles {
    /// Write the Markdown report (the PR comment) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) markdown: Option<PathBuf>,
    /// Write the JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Write unified diffs of changed outputs to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) diff: Option<PathBuf>,
    /// Write the JSON snapshot, comparison included, to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// Write the standalone HTML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub(crate) gate: GateArgs,
    #[command(flatten)]
    pub(crate) reports: ReportFiles,
    #[command(flatten)]
    pub(crate) run: RunArgs,
    /// Run only slice K of N of the selected cases (a CI matrix job); the shard is stored and
    /// its JSON written, and `evals merge` gates the whole run.
    #[arg(long, value_name = "K/N", help_heading = SHARDING)]
    pub(crate) shard: Option<llm_evals::runner::shard::ShardSpec>,
    /// The run group the shard belongs to (default: GITHUB_RUN_ID-GITHUB_RUN_ATTEMPT).
    #[arg(long, value_name = "ID", requires = "shard", help_heading = SHARDING)]
    pub(crate) group: Option<String>,
}

/// `--sample`: `20` cases, `10%` of them, or `all`.
fn sample(text: &str) -> Result<llm_evals::runner::drift::Sample, String> {
    llm_evals::runner::drift::Sample::parse(text)
}

#[derive(Debug, Args, Clone)]
pub(crate) struct DriftArgs {
    #[command(flatten)]
    pub(crate) select: SelectArgs,
    /// Only these models (contender ids like openai/gpt-4o-mini; comma-separated).
    #[arg(short = 'm', long = "models", value_delimiter = ',', help_heading = SELECTION)]
    pub(crate) models: Vec<String>,
    /// How many of the selected cases to call: a number (20), a percentage (10%) or all.
    #[arg(long, value_name = "N|PCT", value_parser = sample, default_value = "all",
          help_heading = SELECTION)]
    pub(crate) sample: llm_evals::runner::drift::Sample,
    /// The seed of the sample: the same seed and cases draw the same sample.
    #[arg(long, value_name = "SEED", default_value_t = llm_evals::runner::drift::DEFAULT_SEED,
          help_heading = SELECTION)]
    pub(crate) seed: u64,
    /// Call each sampled case K times live (the paired test compares the means).
    #[arg(long, value_name = "K", value_parser = repeat, help_heading = RUNNING)]
    pub(crate) repeat: Option<usize>,
    /// Cases in flight inside each experiment (default: defaults.parallelism, else 4).
    #[arg(short = 'p', long, value_parser = parallelism, help_heading = RUNNING)]
    pub(crate) parallelism: Option<usize>,
    /// Experiments at a time (default: CPU count; 0 starts them all).
    #[arg(short = 'j', long = "concurrency", value_parser = concurrency, help_heading = RUNNING)]
    pub(crate) concurrency: Option<usize>,
    /// The significance level of the paired test that calls a drop of the mean score drift.
    #[arg(long, default_value_t = 0.05, value_name = "P", help_heading = GATE)]
    pub(crate) alpha: f64,
    /// How far (0..1) the live mean may fall below the recorded one before it is tested.
    #[arg(long, default_value_t = 0.02, value_name = "FRACTION", help_heading = GATE)]
    pub(crate) tolerance: f64,
    /// Drift when more than PCT percent of the compared answers changed.
    #[arg(long, value_name = "PCT", default_value_t = llm_evals::runner::drift::DEFAULT_MAX_CHANGED,
          help_heading = GATE)]
    pub(crate) max_changed: f64,
    /// Re-record the cases whose answer changed (only their cassette files are written);
    /// without it, drift writes nothing under cassettes/.
    #[arg(long, help_heading = CASSETTES)]
    pub(crate) update: bool,
    #[command(flatten)]
    pub(crate) reports: ReportFiles,
    /// The history store: a SQLite file or a postgres:// or mysql:// URL (default: the config's
    /// history.url, DATABASE_URL if such a URL, else <project>/.evals/history.sqlite3). The
    /// run is stored on branch `drift`.
    #[arg(long = "history", env = "EVALS_HISTORY", value_name = "PATH|URL", help_heading = HISTORY)]
    pub(crate) history: Option<PathBuf>,
}

/// `--inconclusive`: whether an undecided drop gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum InconclusiveArg {
    /// Report it; the check passes on it.
    #[default]
    Pass,
    /// Gate it like a regression.
    Fail,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct MergeArgs {
    /// The shards' JSON files (`evals check --shard K/N --json FILE`), every shard once.
    #[arg(value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
    /// Read the shards of this run group from the history instead (default, with no FILE:
    /// GITHUB_RUN_ID-GITHUB_RUN_ATTEMPT).
    #[arg(long, value_name = "ID", conflicts_with = "files", help_heading = SHARDING)]
    pub(crate) group: Option<String>,
    /// With --group: the branch the shards ran on (default: the one git or CI reports).
    #[arg(long = "branch", value_name = "NAME", help_heading = SHARDING)]
    pub(crate) branch: Option<String>,
    #[command(flatten)]
    pub(crate) gate: GateArgs,
    #[command(flatten)]
    pub(crate) reports: ReportFiles,
    /// Output format for stdout or -o.
    #[arg(long, value_enum, default_value_t = Format::Tui, help_heading = OUTPUT)]
    pub(crate) format: Format,
    /// Write the report to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE", help_heading = OUTPUT)]
    pub(crate) output: Option<PathBuf>,
    /// Totals after the per-dataset tables: overall, per case variant across datasets, or both.
    #[arg(long, value_enum, default_value_t = TotalsArg::Overall, help_heading = OUTPUT)]
    pub(crate) totals: TotalsArg,
    /// The history store: a SQLite file or a postgres:// or mysql:// URL (default: the config's
    /// history.url, DATABASE_URL if such a URL, else <project>/.evals/history.sqlite3).
    #[arg(long = "history", env = "EVALS_HISTORY", value_name = "PATH|URL", help_heading = HISTORY)]
    pub(crate) history: Option<PathBuf>,
    /// Where the merged run's JSON snapshot is saved (default: results.destination).
    #[arg(long, value_name = "DIR", help_heading = HISTORY)]
    pub(crate) destination: Option<PathBuf>,
    /// Do not save a JSON snapshot of the merged run.
    #[arg(long, help_heading = HISTORY)]
    pub(crate) no_autosave: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MissingBaselineArg {
    /// Exit 2 with the reason.
    Fail,
    /// Warn, and gate on thresholds and errors alone.
    Pass,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct FlakyArgs {
    /// The branch whose runs are read.
    #[arg(long, default_value = "main")]
    pub(crate) branch: String,
    /// How many of its latest runs.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub(crate) last: usize,
    /// Only runs of this suite.
    #[arg(long)]
    pub(crate) suite: Option<String>,
    /// The history store (default: <project>/.evals/history.sqlite3).
    #[arg(long = "history", env = "EVALS_HISTORY", value_name = "PATH")]
    pub(crate) history: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct HistoryArgs {
    /// Only runs of this suite.
    #[arg(long)]
    pub(crate) suite: Option<String>,
    /// Only runs on this branch.
    #[arg(long)]
    pub(crate) branch: Option<String>,
    /// At most this many runs.
    #[arg(long, default_value_t = 20)]
    pub(crate) limit: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// The history store: a SQLite file or a postgres:// or mysql:// URL (default: the config's
    /// history.url, DATABASE_URL if such a URL, else <project>/.evals/history.sqlite3).
    #[arg(long = "history", env = "EVALS_HISTORY", value_name = "PATH|URL")]
    pub(crate) history: Option<PathBuf>,
    /// What to do with the history instead of listing it.
    #[command(subcommand)]
    pub(crate) action: Option<HistoryAction>,
}

#[derive(Debug, Subcommand, Clone)]
pub(crate) enum HistoryAction {
    /// Copy a SQLite history into PostgreSQL or MySQL, every run with its id and number (runs
    /// already there are left as they are, so it can run again).
    #[command(after_help = examples::MIGRATE)]
    Migrate(MigrateArgs),
}

#[derive(Debug, Args, Clone)]
pub(crate) struct MigrateArgs {
    /// The database: postgres://user:password@host:port/db (?sslmode=require for TLS) or
    /// mysql://user:password@host:port/db (?ssl-mode=VERIFY_IDENTITY&ssl-ca=ca.pem for TLS).
    #[arg(long = "to", value_name = "URL")]
    pub(crate) to: String,
    /// The SQLite history to copy (default: <project>/.evals/history.sqlite3).
    #[arg(long = "history", value_name = "PATH")]
    pub(crate) history: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct ExportArgs {
    /// The run: its # or id from `evals history` (a unique prefix of the id will do).
    pub(crate) run: String,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// The history store: a SQLite file or a postgres:// or mysql:// URL (default: the config's
    /// history.url, DATABASE_URL if such a URL, else <project>/.evals/history.sqlite3).
    #[arg(long = "history", env = "EVALS_HISTORY", value_name = "PATH|URL")]
    pub(crate) history: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct ReportArgs {
    /// A run: its # or id from `evals history` (a unique prefix of the id will do), or a JSON
    /// snapshot file (default: the latest run of this suite).
    pub(crate) run: Option<String>,
    /// Compare with this baseline: a run (# or id), a branch (its latest earlier run), or FILE.json.
    #[arg(long, value_name = "REF", value_parser = baseline, help_heading = GATE)]
    pub(crate) baseline: Option<String>,
    /// How far (0..1) an experiment's mean primary score may fall before it regresses.
    #[arg(
        long,
        visible_alias = "max-regression",
        default_value_t = 0.02,
        value_name = "FRACTION",
        help_heading = GATE
    )]
    pub(crate) tolerance: f64,
    /// Gate as `check` does: exit 1 on a regression, a failed threshold or an error, 2 when
    /// the baseline is unusable (without it, report exits 0 whatever it found).
    #[arg(long, help_heading = GATE)]
    pub(crate) fail_on_regression: bool,
    /// Also fail on any case whose score dropped at all, inside the tolerance or not (implies
    /// --fail-on-regression; needs --baseline).
    #[arg(long, help_heading = GATE)]
    pub(crate) fail_on_case_regression: bool,
    #[command(flatten)]
    pub(crate) increase: IncreaseArgs,
    /// The format (default: from the extension of -o FILE; else the leaderboard on a
    /// terminal, md in a pipe or a redirect).
    #[arg(long, value_enum, help_heading = OUTPUT)]
    pub(crate) format: Option<Format>,
    /// Write to FILE instead of stdout (.md, .xml, .json, .diff, .html pick the format); -o
    /// alone writes a stamped file under results.destination.
    #[arg(short = 'o', long = "output", value_name = "FILE", num_args = 0..=1, help_heading = OUTPUT)]
    pub(crate) output: Option<Option<PathBuf>>,
    /// The history store: a SQLite file or a postgres:// or mysql:// URL (default: the config's
    /// history.url, DATABASE_URL if such a URL, else <project>/.evals/history.sqlite3).
    #[arg(long = "history", env = "EVALS_HISTORY", value_name = "PATH|URL", help_heading = HISTORY)]
    pub(crate) history: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct RenderArgs {
    /// A JSON snapshot written by run/compare.
    pub(crate) file: PathBuf,
    /// Totals after the per-dataset tables: overall, per case variant, or both.
    #[arg(long, value_enum, default_value_t = TotalsArg::Overall, help_heading = OUTPUT)]
    pub(crate) totals: TotalsArg,
    /// The format (default: from the extension of -o FILE, .html or .json; the leaderboard
    /// (tui) on stdout; html for -o alone).
    #[arg(long, value_enum, help_heading = OUTPUT)]
    pub(crate) format: Option<Format>,
    /// Write to FILE instead of stdout (.html and .json pick the format); -o alone writes a
    /// stamped HTML file under results.destination.
    #[arg(short = 'o', long = "output", value_name = "FILE", num_args = 0..=1, help_heading = OUTPUT)]
    pub(crate) output: Option<Option<PathBuf>>,
    /// Open the HTML report in the browser (never on CI); without -o FILE.html it is
    /// written as -o alone writes it.
    #[arg(long, help_heading = OUTPUT)]
    pub(crate) open: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ImportCommand {
    /// A promptfoo config (prompts, providers, tests, assertions) as an evals suite; what it
    /// cannot translate is printed on stderr and written to the suite's IMPORTED.md.
    #[command(after_help = examples::IMPORT_PROMPTFOO)]
    Promptfoo {
        /// The promptfoo config.
        #[arg(default_value = "promptfooconfig.yaml")]
        config: PathBuf,
        /// The suite folder to write (it must not exist, unless --force).
        #[arg(short = 'o', long = "out", value_name = "DIR", default_value = "evals")]
        out: PathBuf,
        /// Replace an existing suite folder (whole, once the new one is written).
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum CassettesCommand {
    /// Exit 1 naming each file that holds a secret (never printing it).
    #[command(after_help = examples::SCAN)]
    Scan {
        /// Files or folders (default: the suite's cassettes).
        paths: Vec<PathBuf>,
    },
    /// Per case and contender: recorded, missing, stale or unused (--check: exit 1 if any
    /// is missing or stale).
    #[command(after_help = examples::STATUS)]
    Status {
        /// Exit 1 when any cassette is missing, stale or corrupt, 0 when all are fresh (for
        /// CI); without it the listing exits 0.
        #[arg(long)]
        check: bool,
    },
    /// Remove cassettes no case and contender uses.
    #[command(after_help = examples::PRUNE)]
    Prune {
        /// Show what would be removed; remove nothing.
        #[arg(short = 'n', long)]
        dry_run: bool,
    },
}

#[derive(Debug, Args)]
pub(crate) struct UpgradeArgs {
    /// The config to upgrade (default: -C, else the one the search finds).
    pub(crate) file: Option<PathBuf>,
    /// Print the upgraded config; write nothing.
    #[arg(short = 'n', long)]
    pub(crate) dry_run: bool,
    /// With -n: print the change as a unified diff instead of the whole result.
    #[arg(long, requires = "dry_run")]
    pub(crate) diff: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CommentArgs {
    /// The Markdown written by `evals check --markdown FILE`.
    pub(crate) file: PathBuf,
    /// The pull request (default: the number in the event file, GITHUB_EVENT_PATH).
    #[arg(long, value_name = "N", conflicts_with = "issue")]
    pub(crate) pr: Option<u64>,
    /// Keep the report in one open GitHub issue of this title instead of a pull-request
    /// comment (a scheduled job's: created the first time, its body updated in place after).
    #[arg(long, value_name = "TITLE")]
    pub(crate) issue: Option<String>,
    /// With --issue: the trouble is over. Put this report in the open issue and close it;
    /// with none open, do nothing.
    #[arg(long, requires = "issue")]
    pub(crate) close: bool,
    /// The repository, OWNER/NAME (default: GITHUB_REPOSITORY).
    #[arg(long, value_name = "OWNER/NAME")]
    pub(crate) repo: Option<String>,
}

/// `dashboard::Limits::DEFAULT_REQUEST_BYTES`, spelled here so the flag exists (and says
/// so) in a build without the dashboard; a test holds the two equal.
const DASHBOARD_REQUEST_BYTES: usize = 16 * 1024;
/// `dashboard::Limits::DEFAULT_RUN_BYTES` (see [`DASHBOARD_REQUEST_BYTES`]).
const DASHBOARD_RUN_BYTES: u64 = 256 * 1024 * 1024;

#[cfg(all(test, feature = "dashboard"))]
#[test]
fn the_dashboard_flags_default_to_the_dashboards_limits() {
    use llm_evals::dashboard::Limits;
    assert_eq!(DASHBOARD_REQUEST_BYTES, Limits::DEFAULT_REQUEST_BYTES);
    assert_eq!(DASHBOARD_RUN_BYTES, Limits::DEFAULT_RUN_BYTES);
}

#[derive(Debug, Args, Clone)]
pub(crate) struct DashboardArgs {
    /// The port to listen on (0 takes a free one; the first line printed is the URL).
    #[arg(long, default_value_t = 4567)]
    pub(crate) port: u16,
    /// The address to listen on. Anything but a loopback address shows the history to the
    /// network: the dashboard has no login.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDRESS")]
    pub(crate) bind: std::net::IpAddr,
    /// What a run's page compares it with: a branch (its latest earlier run) or a run (# or
    /// id) of the history; never a file.
    #[arg(long, default_value = "main", value_name = "REF", value_parser = baseline)]
    pub(crate) baseline: String,
    /// The history store: a SQLite file or a postgres:// or mysql:// URL (default: the config's
    /// history.url, DATABASE_URL if such a URL, else <project>/.evals/history.sqlite3).
    #[arg(long = "history", env = "EVALS_HISTORY", value_name = "PATH|URL")]
    pub(crate) history: Option<PathBuf>,
    /// The most a request's target and headers may take, in bytes (a body is never read).
    #[arg(long, default_value_t = DASHBOARD_REQUEST_BYTES, value_name = "BYTES",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1024..=16 * 1024 * 1024))]
    pub(crate) max_request_bytes: usize,
    /// The largest run snapshot read from the history, in bytes (a page's run and its
    /// baseline); a larger run's page says so.
    #[arg(long, default_value_t = DASHBOARD_RUN_BYTES, value_name = "BYTES",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_run_bytes: u64,
}
