//! Report files that cannot be written: every report flag (`--junit --markdown --diff --html
//! --json`, `-o` of run, render, export and report) names the report, the path and the fix,
//! exits 2, and a check still writes every other report.

use crate::harness::Project;

/// Each report flag of `check`, the report it writes, and the file name a fix suggests.
const FLAGS: [(&str, &str, &str); 5] = [
    ("--junit", "JUnit report", "junit.xml"),
    ("--markdown", "Markdown report", "pr.md"),
    ("--diff", "diff report", "pr.diff"),
    ("--html", "HTML report", "report.html"),
    ("--json", "JSON report", "run.json"),
];

/// The toy suite with `blocker`, a regular file where a folder would have to be, and
/// `folder`, a folder where a file would have to be.
fn project() -> Project {
    Project::toy()
        .file("blocker", "a regular file\n")
        .dir("folder")
}

#[test]
fn a_report_under_a_regular_file_exits_2_naming_it_and_the_other_reports_are_written() {
    for (bad_flag, kind, name) in FLAGS {
        let p = project();
        let bad = format!("blocker/sub/{name}");
        let mut argv = vec!["check", "--no-autosave"];
        let paths: Vec<(&str, String)> = FLAGS
            .iter()
            .map(|(flag, _, name)| {
                let path = if *flag == bad_flag {
                    bad.clone()
                } else {
                    format!("out/{name}")
                };
                (*flag, path)
            })
            .collect();
        for (flag, path) in &paths {
            argv.extend([*flag, path.as_str()]);
        }
        let d = p.evals(&argv).code(2);
        d.stderr_has(&format!(
            "error: {bad_flag} {bad}: cannot write the {kind} there: blocker is a file, not a folder; pass another path, or move blocker aside\n"
        ));
        d.stderr_lacks("os error");
        // The verdict is still said, and every other report is there.
        d.stderr_has("evals check passed in toy");
        for (flag, path) in &paths {
            if *flag != bad_flag {
                assert!(!p.read(path).is_empty(), "{flag} {path}");
            }
        }
        assert_eq!(p.read("blocker"), "a regular file\n");
    }
}

#[test]
fn a_report_path_that_is_a_folder_exits_2_naming_each_report() {
    let p = project();
    let mut argv = vec!["check", "--no-autosave"];
    for (flag, _, _) in FLAGS {
        argv.extend([flag, "folder"]);
    }
    let d = p.evals(&argv).code(2);
    for (flag, kind, name) in FLAGS {
        d.stderr_has(&format!(
            "error: {flag} folder: cannot write the {kind} there: folder is a folder; pass a file path, e.g. {flag} folder/{name}\n"
        ));
    }
    d.stderr_lacks("os error");
    assert!(crate::harness::files_under(&p.path().join("folder")).is_empty());
}

#[test]
fn dash_o_of_run_render_export_and_report_fails_alike() {
    let p = project();
    p.evals(&["run", "--format", "json", "-o", "run.json"]).ok();
    let id = {
        let run: serde_json::Value = serde_json::from_str(&p.read("run.json")).unwrap();
        run["run"]["id"].as_str().unwrap().to_string()
    };
    for (argv, kind, name) in [
        (
            vec!["run", "--no-autosave", "--format", "json", "-o"],
            "JSON report",
            "run.json",
        ),
        (
            vec!["compare", "--no-autosave", "-o"],
            "report",
            "report.txt",
        ),
        (
            vec!["render", "run.json", "--format", "html", "-o"],
            "HTML report",
            "report.html",
        ),
        (
            vec!["export", id.as_str(), "-o"],
            "JSON snapshot",
            "run.json",
        ),
        (
            vec!["report", id.as_str(), "--format", "junit", "-o"],
            "JUnit report",
            "junit.xml",
        ),
    ] {
        for (bad, why) in [
            (
                "blocker/x".to_string(),
                "blocker is a file, not a folder; pass another path, or move blocker aside"
                    .to_string(),
            ),
            (
                "folder".to_string(),
                format!("folder is a folder; pass a file path, e.g. -o folder/{name}"),
            ),
        ] {
            let mut argv = argv.clone();
            argv.push(bad.as_str());
            let d = p.evals(&argv).code(2);
            d.stderr_has(&format!(
                "error: -o {bad}: cannot write the {kind} there: {why}\n"
            ));
        }
    }
}
