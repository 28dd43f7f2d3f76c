//! The command line: clap types and one file per command. The only place clap is known.

mod args;
mod cases;
mod cassettes;
mod check;
mod completion;
#[cfg(feature = "dashboard")]
mod dashboard;
mod drift;
mod exit;
mod github;
mod harden;
mod history;
mod import;
mod init;
mod interrupt;
mod man;
mod merge;
mod open;
mod output;
mod plan;
mod progress;
mod render;
mod report_file;
mod run;
mod settings;
mod target;
mod upgrade;
mod verify;
mod weights;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches};

pub(crate) use args::Cli;
use args::{Command, Global};
use output::Out;

use llm_evals::env::Environment;
use llm_evals::error::{Error, Result};
use llm_evals::results::Command as RunCommand;
use llm_evals::suite::{Locate, Suite};
use settings::Given;

/// Parses `argv`, runs the command, and returns the exit code.
pub(crate) fn main(argv: impl IntoIterator<Item = OsString>) -> i32 {
    crate::cli::harden::harden_process();
    scrub_panics();
    // Ctrl-C and SIGTERM end any command, exit 130: the CLI's opt-in (the library installs
    // no handler of its own).
    interrupt::install();
    let argv: Vec<OsString> = argv.into_iter().collect();
    // `evals` or `llm-evals`: help, errors and `-V` speak with the name it was run by.
    let bin = match argv
        .first()
        .and_then(|a| std::path::Path::new(a).file_stem())
        .and_then(|s| s.to_str())
    {
        Some("llm-evals") => "llm-evals",
        _ => "evals",
    };
    let parsed = Cli::command()
        .name(bin)
        .bin_name(bin)
        .try_get_matches_from(argv)
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    // The matches stay beside the parsed flags: they say where each value came from (the
    // command line or its environment variable), which the settings step needs.
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            // An argument echoed back may be a key pasted in the wrong place, or hold a
            // control character: printed plain, scrubbed and shown.
            let plain = e.render().to_string();
            let scrubbed = llm_evals::secrets::scrub(&plain);
            let shown = llm_evals::text::visible(&scrubbed);
            use std::borrow::Cow::Borrowed;
            match (&scrubbed, &shown) {
                (Borrowed(_), Borrowed(_)) => {
                    let _ = e.print();
                }
                _ if e.use_stderr() => eprint!("{shown}"),
                _ => print!("{shown}"),
            }
            return code;
        }
    };
    // The environment, read once: everything below is handed this.
    let env = Environment::from_process();
    let out = Out::new(cli.global.color, &env)
        .with_verbose(cli.global.verbose)
        .with_width(cli.global.wide, &env)
        .with_explain(cli.global.explain);
    let given = match matches.subcommand() {
        Some((_, sub)) => Given::of(sub),
        None => Given::none(),
    };
    let code = match dispatch(cli, bin, given, &env, &out) {
        Ok(code) => code,
        Err(e) => {
            out.fail(&e);
            exit::code(&e)
        }
    };
    interrupt::exit_code(code)
}

fn dispatch(
    cli: Cli,
    bin: &'static str,
    given: Given<'_>,
    env: &Environment,
    out: &Out,
) -> Result<i32> {
    let g = &cli.global;
    match cli.command {
        Command::Version => {
            out.line(&format!("{bin} {}", env!("CARGO_PKG_VERSION")));
            Ok(exit::OK)
        }
        Command::McpRelay { url } => Ok(llm_evals::adapter::mcp_stdio::relay(&url)),
        Command::Completion { shell } => completion::run(shell, bin, out),
        Command::Man { dir } => man::run(bin, dir.as_deref(), out),
        Command::Init { dir } => init::run(dir.as_deref(), out),
        Command::Import { command } => import::run(&command, out),
        Command::UpgradeConfig(a) => upgrade::run(g, &a, out),
        Command::Cases(sel) => cases::run(&load_suite(g, out)?, &sel, out),
        Command::Verify(sel) => verify::run(&load_suite(g, out)?, &sel, out),
        Command::Weights => weights::run(&load_suite(g, out)?, out),
        Command::Run(a) | Command::Compare(a) | Command::Record(a) if a.dry_run => {
            plan::dry_run(&load_suite(g, out)?, &a, out)
        }
        Command::Check(a) if a.run.dry_run => check::dry_run(&load_suite(g, out)?, &a, out),
        Command::Check(a) => check::run(&load_suite(g, out)?, &a, given, env, out),
        Command::Drift(a) => drift::run(&load_suite(g, out)?, &a, given, env, out),
        Command::Merge(a) => merge::run(&load_suite(g, out)?, &a, given, env, out),
        Command::Run(a) => run::run(&load_suite(g, out)?, &a, given, RunCommand::Run, env, out),
        Command::Compare(a) => {
            run::run(&load_suite(g, out)?, &a, given, RunCommand::Compare, env, out)
        }
        Command::Record(a) => {
            run::run(&load_suite(g, out)?, &a, given, RunCommand::Record, env, out)
        }
        Command::Render(a) => render::run(g, &a, env, out),
        Command::Cassettes { command } => {
            let scan_paths_given =
                matches!(&command, args::CassettesCommand::Scan { paths } if !paths.is_empty());
            let suite = if scan_paths_given {
                load_suite(g, out).ok()
            } else {
                Some(load_suite(g, out)?)
            };
            cassettes::run(suite.as_ref(), &command, out)
        }
        Command::History(a) => match &a.action {
            Some(args::HistoryAction::Migrate(m)) => history::migrate(g, m, env, out),
            None => history::list(g, &a, env, out),
        },
        Command::Export(a) => history::export(g, &a, env, out),
        Command::Flaky(a) => history::flaky(g, &a, env, out),
        Command::Report(a) => history::report(g, &a, env, out),
        #[cfg(feature = "dashboard")]
        Command::Dashboard(a) => dashboard::run(g, &a, env, out),
        #[cfg(not(feature = "dashboard"))]
        Command::Dashboard(_) => Err(Error::Usage(
            "this build of evals has no dashboard (the `dashboard` feature): build it with `--features dashboard`".into(),
        )),
        Command::Comment(a) => github::comment(g, &a, env, out),
    }
}

/// A panic's message may quote what it was handling: it is scrubbed like any other output.
fn scrub_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned());
        match payload {
            Some(message) if llm_evals::secrets::scrub(&message) != message.as_str() => {
                let at = info
                    .location()
                    .map(|l| format!(" at {}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                eprintln!(
                    "evals panicked{at}: {} (this is a bug: please report it)",
                    llm_evals::secrets::scrub(&message)
                );
            }
            _ => default(info),
        }
    }));
}

/// Finds and loads the suite, then names it on stderr (the first thing a run prints).
pub(crate) fn load_suite(g: &Global, out: &Out) -> Result<Suite> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(PathBuf::from("."), e))?;
    let locate = Locate {
        config: g.config.clone(),
        no_search: g.no_search,
    };
    let (path, why) = llm_evals::suite::discovery::discover_why(&cwd, &locate)?;
    out.verbose(&format!(
        "suite file: {} ({why})",
        llm_evals::suite::discovery::display_path(&path, &cwd)
    ));
    let suite = Suite::locate_with(
        &cwd,
        &Locate {
            config: Some(path),
            no_search: g.no_search,
        },
        |name, path| out.banner(name, path),
    )?;
    suite.check_lineup(&llm_evals::provider::Registry::default())?;
    match &suite.config.project {
        Some(p) => out.verbose(&format!(
            "project: {p} (project: in the config; kept with each run)"
        )),
        None => out.verbose("project: none (no project: in the config)"),
    }
    Ok(suite)
}
