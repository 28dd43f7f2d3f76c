//! A history file that is not a SQLite database: `history`, `export` and `report` say so
//! and how to move it aside (exit 2); a run warns, loses none of its reports, and leaves the
//! file as it was.

use crate::harness::{Project, TOY_FOUND};

const NOT_A_DATABASE: &str = "this is a text file where the run history should be\n";

/// The toy suite with a history file that is not a database.
fn corrupt() -> Project {
    Project::toy().file(".evals/history.sqlite3", NOT_A_DATABASE)
}

const SAYS: &str = ".evals/history.sqlite3: not a SQLite database, so not a run history: move it aside (`mv .evals/history.sqlite3 .evals/history.sqlite3.bad`; the next run starts a new one) or pass --history PATH";

#[test]
fn history_export_and_report_on_a_corrupt_history_say_how_to_move_it_aside() {
    let p = corrupt();
    for argv in [
        &["history"][..],
        &["export", "some-run", "-o", "run.json"],
        &["report", "some-run", "--format", "md"],
    ] {
        let d = p.evals(argv).exact().code(2);
        d.stderr_is(&format!("{TOY_FOUND}error: {SAYS}\n"));
        d.stderr_lacks("check the file is writable");
        assert_eq!(d.stdout, "", "{argv:?}");
    }
    assert_eq!(p.read(".evals/history.sqlite3"), NOT_A_DATABASE);
}

#[test]
fn check_on_a_corrupt_history_warns_and_still_writes_every_report() {
    let p = corrupt();
    let d = p
        .evals(&[
            "check",
            "--no-autosave",
            "--junit",
            "out/junit.xml",
            "--markdown",
            "out/pr.md",
            "--diff",
            "out/pr.diff",
            "--html",
            "out/report.html",
            "--json",
            "out/run.json",
        ])
        .ok();
    d.stderr_has(&format!(
        "warning: could not store the run in the history: {SAYS}"
    ));
    for f in ["junit.xml", "pr.md", "pr.diff", "report.html", "run.json"] {
        assert!(!p.read(&format!("out/{f}")).is_empty(), "{f}");
    }
    assert!(
        p.read("out/pr.md")
            .starts_with("**evals check passed** in toy")
    );
    assert_eq!(p.read(".evals/history.sqlite3"), NOT_A_DATABASE);
}
