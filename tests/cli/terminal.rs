//! The terminal: what `compare`, `run` and `check` print fits 80, 100 and 120 columns
//! (measured line by line, and snapshotted), the columns that tell rows apart stay, the
//! glossary waits for `--explain`, a small check fits one screen with its verdict last, the
//! README's first command passes and says what to try next, `report` prints the
//! leaderboard on a terminal and Markdown to a file, and counts agree with their words.

use std::path::Path;
use std::process::Command;

use crate::harness::{Bounded as _, Done, Project};
use crate::snapshots::{filters, tax_intake};

/// The widths the tables must fit.
const WIDTHS: [usize; 3] = [80, 100, 120];

/// Fails naming the first line of `out` wider than `width` columns (no color: the harness
/// sets NO_COLOR; every character here takes one column).
fn assert_fits(out: &str, width: usize, what: &str) {
    for line in out.lines() {
        let w = line.chars().count();
        assert!(
            w <= width,
            "{what}: a line of {w} columns at COLUMNS={width}:\n{line}\n--- the whole output\n{out}"
        );
    }
}

/// The rows `text` takes on a terminal `width` columns wide (a longer line wraps).
fn rows(text: &str, width: usize) -> usize {
    text.lines()
        .map(|l| l.chars().count().div_ceil(width).max(1))
        .sum()
}

/// The recorded model that misses the suite's thresholds, outside its lineup.
const LLAMA: &str = "meta-llama/llama-3.1-8b-instruct";

#[test]
fn the_leaderboard_the_breakdown_and_check_fit_80_100_and_120_columns() {
    let (p, suite) = tax_intake();
    for width in WIDTHS {
        let columns = width.to_string();
        let compare = p
            .evals(&["compare", "--no-autosave"])
            .cwd(&suite)
            .env("CI", "1")
            .env("COLUMNS", &columns)
            .ok();
        assert_fits(&compare.stdout, width, "compare");
        // The two efforts of one model are two rows: the effort column stays at any width.
        let effort = |d: &Done| {
            let header = d.stdout.lines().find(|l| l.contains("┆ model")).unwrap();
            assert!(header.contains("┆ effort"), "{}", d.stdout);
        };
        effort(&compare);
        insta::assert_snapshot!(format!("tax_intake_compare_{width}"), compare.stdout);

        let run = p
            .evals(&[
                "run",
                "--no-autosave",
                "-m",
                &format!("openai/gpt-4o-mini,{LLAMA}"),
            ])
            .cwd(&suite)
            .env("CI", "1")
            .env("COLUMNS", &columns)
            .code(1);
        assert_fits(&run.stdout, width, "run");
        insta::assert_snapshot!(format!("tax_intake_run_{width}"), run.stdout);

        let check = p
            .evals(&["check", "--no-autosave"])
            .cwd(&suite)
            .env("CI", "1")
            .env("COLUMNS", &columns)
            .ok();
        assert_fits(&check.stdout, width, "check");
        effort(&check);
        insta::with_settings!({filters => filters()}, {
            insta::assert_snapshot!(
                format!("tax_intake_check_{width}"),
                format!("{}--- stderr\n{}", check.stdout, check.stderr)
            );
        });
    }
}

#[test]
fn settings_that_differ_between_rows_are_never_left_out() {
    // Two temperatures of one model: two rows told apart by the temperature alone.
    let p = crate::harness::mini_with("settings", "defaults: { temperature: [0.1, 0.7] }\n");
    let cfg = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &cfg.replace(
            "  models: [echo]\n",
            "  models:\n    - model: echo\n      max_tokens: 1024\n",
        ),
    );
    let d = p
        .evals(&["compare", "--no-autosave", "-m", "fake/echo"])
        .env("COLUMNS", "80")
        .ok();
    assert_fits(&d.stdout, 80, "compare");
    let header = d.stdout.lines().find(|l| l.contains("┆ model")).unwrap();
    assert!(header.contains("┆ temp"), "{}", d.stdout);
    // The cap is the same in every row: said once, not a column.
    assert!(!header.contains("┆ max"), "{}", d.stdout);
    assert!(d.stdout.contains("every row: max 1024"), "{}", d.stdout);
}

#[test]
fn the_glossary_prints_with_explain_only_and_names_the_shortened_columns() {
    let (p, suite) = tax_intake();
    let narrow = p
        .evals(&["compare", "--no-autosave"])
        .cwd(&suite)
        .env("COLUMNS", "80")
        .ok();
    narrow.stdout_lacks("glossary:");
    narrow.stdout_has("--explain names the shortened columns and says what each column means\n");
    let explained = p
        .evals(&["compare", "--no-autosave", "--explain"])
        .cwd(&suite)
        .env("COLUMNS", "80")
        .ok();
    assert_fits(&explained.stdout, 80, "compare --explain");
    explained
        .stdout_has("glossary:\n")
        .stdout_has("  field_accuracy     (shown as field…) Mean worth of the schema's fields");
    // A CI log (a pipe, no COLUMNS) has neither the glossary nor the hint.
    let ci = p
        .evals(&["compare", "--no-autosave"])
        .cwd(&suite)
        .env("CI", "1")
        .ok();
    ci.stdout_lacks("glossary:").stdout_lacks("--explain");
}

#[test]
fn a_three_case_check_fits_one_80_by_24_screen_with_its_verdict_last() {
    let p = Project::new();
    p.evals(&["init"]).ok();
    let d = p.evals(&["check"]).env("COLUMNS", "80").ok();
    assert_fits(&d.stdout, 80, "check");
    let screen = rows(&d.stdout, 80) + rows(&d.stderr, 80);
    assert!(
        screen <= 24,
        "{screen} rows:\n{}\n--- stderr\n{}",
        d.stdout,
        d.stderr
    );
    let last = d.stderr.lines().last().unwrap();
    assert!(last.starts_with("evals check passed in "), "{}", d.stderr);
}

#[test]
fn the_readme_first_command_passes_and_ends_with_the_next_step_which_shows_the_gate_fail() {
    // At the repository root, as the README has it: the search finds tax-intake.
    let p = crate::cassettes::repository_root();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("-- compare      "),
        "the README's first command is `compare`"
    );
    let first = p.evals(&["compare", "--no-autosave"]).ok();
    // Nothing on the first screen is a warning about the demo's own suite.
    first.stderr_lacks("warning:").stderr_lacks("refused");
    assert_eq!(
        first.stderr.lines().last().unwrap(),
        format!("now see the gate fail: add -m {LLAMA} to this command")
    );
    // The second step, as the first says it: the gate fails, and the run says why on purpose.
    let second = p.evals(&["compare", "--no-autosave", "-m", LLAMA]).code(1);
    second.stderr_has(&format!(
        "error: thresholds failed:\n  {LLAMA} [temp 0.1, max 8192] · tax-preparation · partial: fails its thresholds (field_accuracy 0 < 0.5)"
    ));
    assert!(
        second.stderr.lines().last().unwrap().starts_with(&format!(
            "if you added -m {LLAMA} or -m fake/echo, this failure is the demo's point"
        )),
        "{}",
        second.stderr
    );
}

/// `evals ARGS` with stdout and stderr on a pseudo-terminal (util-linux `script`), as a
/// person runs it: what the screen got, both streams.
fn on_a_terminal(p: &Project, dir: &Path, args: &[&str]) -> String {
    let cmd = p.evals(args).cwd(dir).env("COLUMNS", "100").into_command();
    let line = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| format!("'{}'", a.to_string_lossy().replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let mut script = Command::new("script");
    script.args(["-qec", &line, "/dev/null"]).current_dir(dir);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let out = script
        .output_bounded()
        .expect("util-linux `script` runs a command on a pseudo-terminal: install it");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

#[test]
fn report_prints_the_leaderboard_on_a_terminal_and_markdown_to_a_file_against_the_natural_baseline()
{
    let (p, suite) = tax_intake();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(p.path())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .expect("git");
        assert!(out.status.success(), "{out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "suite"]);
    let check = |p: &Project| {
        let d = p
            .evals(&["check", "--no-autosave"])
            .cwd(&suite)
            .env("CI", "1")
            .ok();
        d.stderr
            .lines()
            .find_map(|l| l.strip_prefix("stored run "))
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string()
    };
    let first = check(&p);
    check(&p);
    // A pipe (a redirect, a script): Markdown, compared with the branch's run before it.
    let piped = p.evals(&["report"]).cwd(&suite).ok();
    piped.stdout_has("**evals check passed** in tax-intake (main → main)");
    piped.stderr_has(&format!(
        "compared with run {first} of main (its latest earlier run; --baseline REF names another)"
    ));
    // A file: Markdown too.
    p.evals(&["report", "-o", "report.md"]).cwd(&suite).ok();
    assert!(
        std::fs::read_to_string(suite.join("report.md"))
            .unwrap()
            .starts_with("**evals check passed**")
    );
    // Asked for: the leaderboard, the verdict on stderr.
    let tui = p.evals(&["report", "--format", "tui"]).cwd(&suite).ok();
    tui.stdout_has("dataset tax-preparation\n┌")
        .stdout_lacks("**evals check")
        .stderr_has("evals check passed in tax-intake (main → main)");
    // On a terminal: the leaderboard, fitted to it, and no Markdown.
    let screen = on_a_terminal(&p, &suite, &["report"]);
    assert!(screen.contains("dataset tax-preparation"), "{screen}");
    assert!(!screen.contains("**evals check"), "{screen}");
    assert!(
        screen.contains(&format!("compared with run {first} of main")),
        "{screen}"
    );
    // The table fits (the stderr notes around it, on the same screen here, are text).
    let tables: String = screen
        .lines()
        .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!tables.is_empty(), "{screen}");
    assert_fits(&tables, 100, "report on a terminal");
}

#[test]
fn counts_agree_with_their_words_and_contenders_are_spelt_one_way() {
    let p = crate::harness::mini_with("one", "defaults: { temperature: 0.1, max_tokens: 1024 }\n");
    p.evals(&["cases"]).ok().stdout_has("1 case in 1 dataset\n");
    p.evals(&["verify"])
        .ok()
        .stderr_has("verified 1 case: no problems");
    let plan = p.evals(&["compare", "-n"]).ok();
    plan.stdout_has("1 contender × 1 dataset = 1 experiment, 1 call (");
    let run = p.evals(&["run", "--no-autosave"]).ok();
    // The breakdown's title, the best value: `id [settings]` as every report writes it.
    run.stdout_has("fake/echo [temp 0.1, max 1024] · d\n")
        .stdout_has("best value: fake/echo [temp 0.1, max 1024] — ");
}

#[test]
fn record_says_what_it_wrote_on_the_terminal_while_its_bars_draw() {
    // On a terminal the bars draw and stderr goes to the warnings log meanwhile: the
    // recording summary is the run's own notice, and reaches the screen, not the log.
    let g = crate::gate::Gate::new();
    let screen = on_a_terminal(&g.p, g.p.path(), &["record", "--no-autosave"]);
    assert!(
        screen.contains(
            "wrote 2 cassettes (2 new, 0 changed), 0 unchanged, in evals/cassettes: 2 live calls"
        ),
        "{screen}"
    );
    assert!(!screen.contains("messages written to stderr"), "{screen}");
    assert!(!g.p.path().join("log").exists(), "{screen}");
}
