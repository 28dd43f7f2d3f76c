//! Flags resolved once (`src/cli/settings.rs`): a flag beats its environment variable, which
//! beats the config, which beats the default; where a value came from is clap's word (its
//! value source), never a second look at the command line; `check` and `merge` share the
//! gate's flags and the report files.

use crate::harness::{Project, mini_at, mini_with};

fn verbose_line<'a>(stderr: &'a str, what: &str) -> &'a str {
    let prefix = format!("verbose: {what}: ");
    stderr
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{stderr}"))
}

#[test]
fn a_flag_beats_its_variable_which_beats_the_commands_default() {
    let p = mini_at(Project::new(), "", "s");
    let mode = |args: &[&str], var: Option<&str>| {
        let mut run = p.evals(&[&["-v", "compare", "--no-autosave"], args].concat());
        if let Some(v) = var {
            run = run.env("EVALS_CASSETTES", v);
        }
        verbose_line(&run.ok().stderr, "cassettes").to_string()
    };
    assert_eq!(
        mode(&[], None),
        "verbose: cassettes: auto (the default of `compare`)"
    );
    assert_eq!(
        mode(&[], Some("replay")),
        "verbose: cassettes: replay (EVALS_CASSETTES=replay)"
    );
    assert_eq!(
        mode(&["--cassettes", "auto"], Some("replay")),
        "verbose: cassettes: auto (--cassettes auto)"
    );
    // The flag's value spelled like the variable's is still the flag's.
    assert_eq!(
        mode(&["--cassettes=replay"], Some("replay")),
        "verbose: cassettes: replay (--cassettes replay)"
    );
}

#[test]
fn a_bad_mode_names_the_flag_or_the_variable_it_came_from() {
    let p = mini_at(Project::new(), "", "s");
    p.evals(&["compare", "--cassettes", "tape"])
        .code(2)
        .stderr_has("error: --cassettes tape: expected one of replay, record, auto, live\n");
    p.evals(&["compare"])
        .env("EVALS_CASSETTES", "tape")
        .code(2)
        .stderr_has("error: EVALS_CASSETTES=tape: not a cassette mode; set it to replay, record, auto or live, or unset it\n");
}

#[test]
fn the_history_is_the_flag_then_its_variable_then_the_config_then_database_url_then_the_default() {
    let history = |p: &Project, args: &[&str], vars: &[(&str, &str)]| {
        let mut run = p.evals(&[&["-v", "compare", "--no-autosave"], args].concat());
        for (k, v) in vars {
            run = run.env(k, v);
        }
        let d = run.output();
        verbose_line(&d.stderr, "history").to_string()
    };
    let p = mini_at(Project::new(), "", "s");
    let default =
        "verbose: history: .evals/history.sqlite3 (the default, <project>/.evals/history.sqlite3)";
    assert_eq!(history(&p, &[], &[]), default);
    // DATABASE_URL is a history only when it is a PostgreSQL URL.
    assert_eq!(
        history(&p, &[], &[("DATABASE_URL", "mysql://u@127.0.0.1:1/db")]),
        default
    );
    assert_eq!(
        history(&p, &[], &[("DATABASE_URL", "postgres://u@127.0.0.1:1/db")]),
        "verbose: history: postgres://u@127.0.0.1:1/db (DATABASE_URL)"
    );
    let c = mini_with("s", "history:\n  url: from-config.sqlite3\n");
    let db = ("DATABASE_URL", "postgres://u@127.0.0.1:1/db");
    assert_eq!(
        history(&c, &[], &[db]),
        "verbose: history: from-config.sqlite3 (history.url in the config)"
    );
    assert_eq!(
        history(&c, &[], &[db, ("EVALS_HISTORY", "from-var.sqlite3")]),
        "verbose: history: from-var.sqlite3 (EVALS_HISTORY)"
    );
    assert_eq!(
        history(
            &c,
            &["--history", "from-flag.sqlite3"],
            &[db, ("EVALS_HISTORY", "from-var.sqlite3")]
        ),
        "verbose: history: from-flag.sqlite3 (--history)"
    );
}

#[test]
fn check_and_merge_take_the_same_gate_flags_and_report_files() {
    let p = Project::new();
    let flags = |cmd: &str| -> Vec<String> {
        let d = p.evals(&[cmd, "--help"]).ok();
        d.stdout
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("--"))
            .map(|l| l.split([' ', '=']).next().unwrap_or("").to_string())
            .collect()
    };
    let (check, merge) = (flags("check"), flags("merge"));
    for flag in [
        "baseline",
        "tolerance",
        "missing-baseline",
        "stat",
        "alpha",
        "inconclusive",
        "markdown",
        "junit",
        "diff",
        "json",
        "html",
    ] {
        assert!(check.iter().any(|f| f == flag), "check --{flag}");
        assert!(merge.iter().any(|f| f == flag), "merge --{flag}");
    }
}

#[test]
fn format_takes_the_same_values_on_every_command_that_has_it() {
    let p = Project::new();
    for cmd in [
        "run", "compare", "record", "check", "merge", "report", "render",
    ] {
        let d = p.evals(&[cmd, "--help"]).ok();
        let values: Vec<&str> = d
            .stdout
            .split("--format <FORMAT>")
            .nth(1)
            .unwrap_or_else(|| panic!("{cmd} has --format"))
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("- "))
            .map(|l| l.split(':').next().unwrap_or(""))
            .take(6)
            .collect();
        assert_eq!(
            values,
            ["tui", "md", "junit", "json", "diff", "html"],
            "{cmd}"
        );
    }
}
