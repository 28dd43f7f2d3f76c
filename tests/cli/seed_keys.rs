//! Keys the seeds' configs carry either work or fail with the fix: `project:` is kept with
//! the run, `results.temp_dir` is an error, `results.display: browser|both` writes the HTML
//! report and opens it, and `compare -n` checks the weights as a real run does.

use crate::harness::Project;

/// The mini suite followed by `extra`.
fn mini_with(extra: &str) -> Project {
    crate::harness::mini_with("seedkeys", extra)
}

#[test]
fn project_is_kept_in_the_runs_snapshot() {
    let p = mini_with("project: my-evals            # Braintrust project name\n");
    p.evals(&["compare", "--format", "json", "-o", "run.json"])
        .ok();
    let run: serde_json::Value = serde_json::from_str(&p.read("run.json")).unwrap();
    assert_eq!(run["run"]["project"], "my-evals");
}

#[test]
fn results_temp_dir_is_an_error_naming_the_line_and_the_fix() {
    // The seed's own results section (llm-evals-readme "The lineup"); mini_config is 9 lines.
    let p = mini_with(
        "results:\n  autosave: true             # save every completed run as JSON (default)\n  destination: ./evals/results/\n  temp_dir: ./tmp            # temporary JSON when autosave is false\n",
    );
    let d = p.evals(&["compare", "-n"]).code(2);
    d.stderr_has("error: evals/.llm-evals.config.yml:13:3: results.temp_dir does nothing in evals: no temporary JSON is written")
        .stderr_has("remove the key");
}

/// An opener standing in for `xdg-open`: it appends its arguments to `opened.txt`.
fn with_opener(p: Project) -> (Project, String) {
    let script = p.path().join("opener.sh");
    let log = p.path().join("opened.txt");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\n", log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (p, script.display().to_string())
}

fn opened(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.path().join("opened.txt"))
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The report `wrote evals/results/<stamp>-compare-<id>.html` names, read back.
fn wrote_html(p: &Project, stderr: &str) -> (String, String) {
    let rel = stderr
        .lines()
        .find_map(|l| l.strip_prefix("wrote ").filter(|f| f.ends_with(".html")))
        .unwrap_or_else(|| panic!("no `wrote ….html`\n{stderr}"))
        .to_string();
    assert!(rel.starts_with("evals/results/"), "{rel}");
    assert!(rel.contains("-compare-"), "{rel}");
    (rel.clone(), p.read(&rel))
}

#[test]
fn results_display_browser_or_both_writes_the_html_report_and_opens_it() {
    for display in ["browser", "both"] {
        let (p, opener) = with_opener(mini_with(&format!("results: {{ display: {display} }}\n")));
        let d = p
            .evals(&["compare", "--no-autosave"])
            .env("EVALS_OPENER", &opener)
            .ok();
        let (rel, html) = wrote_html(&p, &d.stderr);
        assert!(html.starts_with("<!doctype html>"), "{html}");
        assert!(
            html.contains(r#""c":"one""#),
            "the case is in the report: {html}"
        );
        d.stderr_has(&format!(
            "opened {rel} in the browser (--no-open writes it without opening)"
        ));
        // The opener is handed the file's absolute path, once.
        assert_eq!(opened(&p), vec![p.path().join(&rel).display().to_string()]);
        // `browser` is the report instead of the leaderboard; `both` is both.
        assert_eq!(
            d.stdout.contains("fake/echo"),
            display == "both",
            "{}",
            d.stdout
        );
    }
}

#[test]
fn display_flag_beats_results_display_as_the_seeds_display_did() {
    // The config says the leaderboard; `--display browser` gives the report instead.
    let (p, opener) = with_opener(mini_with("results: { display: tui }\n"));
    let d = p
        .evals(&["compare", "--no-autosave", "--display", "browser"])
        .env("EVALS_OPENER", &opener)
        .ok();
    wrote_html(&p, &d.stderr);
    assert_eq!(opened(&p).len(), 1);
    assert!(!d.stdout.contains("fake/echo"), "{}", d.stdout);
    // The config says the browser; `--display none` prints and opens nothing.
    let (p, opener) = with_opener(mini_with("results: { display: browser }\n"));
    let d = p
        .evals(&["compare", "--no-autosave", "--display", "none"])
        .env("EVALS_OPENER", &opener)
        .ok();
    assert!(opened(&p).is_empty());
    d.stderr_lacks(".html");
    assert!(!d.stdout.contains("fake/echo"), "{}", d.stdout);
    // `--display tui` is the leaderboard whatever the config says.
    p.evals(&["compare", "--no-autosave", "--display", "tui"])
        .env("EVALS_OPENER", &opener)
        .ok()
        .stdout_has("fake/echo");
    assert!(opened(&p).is_empty());
    p.evals(&["compare", "--display", "html"])
        .code(2)
        .stderr_has("possible values: none, tui, browser, both");
}

#[test]
fn render_open_writes_the_html_report_and_opens_it_but_never_on_ci() {
    let (p, opener) = with_opener(mini_with(""));
    p.evals(&[
        "compare",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "run.json",
    ])
    .ok();
    // No file named: written as `-o` alone writes it (stamped, under the results folder).
    p.evals(&["render", "run.json", "--open"])
        .env("EVALS_OPENER", &opener)
        .ok()
        .stderr_has("opened ");
    let first = opened(&p);
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(
        first[0].contains("/evals/results/") && first[0].ends_with(".html"),
        "{first:?}"
    );
    assert!(
        std::fs::read_to_string(&first[0])
            .unwrap()
            .starts_with("<!doctype html>")
    );
    // A file named: that one is opened.
    p.evals(&["render", "run.json", "-o", "r.html", "--open"])
        .env("EVALS_OPENER", &opener)
        .ok();
    assert_eq!(opened(&p)[1], p.path().join("r.html").display().to_string());
    // On CI it is written, never opened.
    p.evals(&["render", "run.json", "-o", "ci.html", "--open"])
        .env("EVALS_OPENER", &opener)
        .env("CI", "true")
        .ok();
    assert!(p.read("ci.html").starts_with("<!doctype html>"));
    assert_eq!(opened(&p).len(), 2);
    // Another format cannot be opened in a browser.
    p.evals(&["render", "run.json", "-o", "r.json", "--open"])
        .code(2)
        .stderr_has("--open opens the HTML report, and this render writes a JSON report");
}

#[test]
fn no_open_and_ci_write_the_browser_report_without_opening_it_and_open_asks_for_it() {
    let (p, opener) = with_opener(mini_with("results: { display: browser }\n"));
    let d = p
        .evals(&["compare", "--no-autosave", "--no-open"])
        .env("EVALS_OPENER", &opener)
        .ok();
    wrote_html(&p, &d.stderr);
    d.stderr_lacks("opened");
    let d = p
        .evals(&["compare", "--no-autosave"])
        .env("EVALS_OPENER", &opener)
        .env("CI", "true")
        .ok();
    wrote_html(&p, &d.stderr);
    d.stderr_lacks("opened");
    assert!(opened(&p).is_empty(), "{:?}", opened(&p));
    // No display setting: `--open` asks; without a desktop it is written and said so.
    let (p, opener) = with_opener(mini_with(""));
    let d = p
        .evals(&["compare", "--no-autosave", "--open"])
        .env("EVALS_OPENER", &opener)
        .ok();
    let (rel, _) = wrote_html(&p, &d.stderr);
    assert_eq!(opened(&p), vec![p.path().join(&rel).display().to_string()]);
    let d = p
        .evals(&["compare", "--no-autosave", "--open"])
        .env("DISPLAY", "")
        .env("WAYLAND_DISPLAY", "")
        .ok();
    let (rel, _) = wrote_html(&p, &d.stderr);
    d.stderr_has(&format!(
        "not opening {rel}: no desktop (DISPLAY and WAYLAND_DISPLAY are unset)"
    ));
    assert_eq!(opened(&p).len(), 1, "only the first --open ran the opener");
    // `--open --no-open` contradicts itself.
    p.evals(&["compare", "--open", "--no-open"]).code(2);
}

#[test]
fn compare_dry_run_refuses_a_bad_weight_as_a_real_run_does() {
    let p = mini_with("weighted_score:\n  weights: { scroe: 1, cost: -1 }\n");
    let dry = p.evals(&["compare", "-n"]).code(2);
    let real = p.evals(&["compare", "--no-autosave"]).code(2);
    let want = "evals/.llm-evals.config.yml: weighted_score: `scroe` cannot be weighted (did you mean `score`?)";
    dry.stderr_has(want);
    real.stderr_has(want);
}
