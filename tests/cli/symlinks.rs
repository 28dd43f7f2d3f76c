//! Symlinks in a suite's datasets (issue 9, item 7): followed while they stay inside the
//! project, refused (exit 2) when they point outside it or at nothing, a problem when they
//! loop; `cassettes status` counts a linked case's recordings as used, and `prune` keeps
//! them and refuses to run while case discovery reports a problem.

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::json;

use crate::harness::{MINI_SCHEMA, Project, cells, files_under};
use crate::mock::{Server, chat};

const CONFIG: &str = "evals/.llm-evals.config.yml";
const CASES: &str = "evals/datasets/d/cases";
const CASSETTES: &str = "evals/cassettes";

/// A prompt suite over `answer` with `providers` (the fake echo model unless given).
fn config(providers: &str) -> String {
    format!(
        "suite: links\nrequest_types: [prompt]\nadapter: {{ kind: prompt, user: \"{{{{ input }}}}\", json: true }}\n{MINI_SCHEMA}defaults: {{ max_tokens: 64 }}\n{providers}"
    )
}

const FAKE: &str = "fake:\n  models: [echo]\n";

/// A case folder's two files, under the project-relative folder `dir`.
fn case(p: Project, dir: &str, input: &str) -> Project {
    p.file(&format!("{dir}/input.txt"), input)
        .file(&format!("{dir}/expected.json"), r#"{"answer": "x"}"#)
}

/// A suite with the real case `d/a`.
fn suite(providers: &str) -> Project {
    case(
        Project::new().file(CONFIG, &config(providers)),
        &format!("{CASES}/a"),
        "case a",
    )
}

/// A symlink at the project-relative `link` whose target is `target`, as written.
fn link(p: &Project, target: impl AsRef<Path>, link: &str) {
    let at = p.path().join(link);
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    symlink(target, at).unwrap();
}

/// The `dataset/case` keys `evals cases` lists.
fn listed(p: &Project) -> Vec<String> {
    p.evals(&["cases"])
        .ok()
        .stdout
        .lines()
        .map(cells)
        .filter(|c| c.len() == 5 && c[0] != "dataset")
        .map(|c| format!("{}/{}", c[0], c[1]))
        .collect()
}

#[test]
fn a_symlinked_variant_folder_inside_the_project_is_a_case_under_the_links_name() {
    let p = suite(FAKE);
    // The shared folder is in the project but outside the suite.
    let p = case(p, "shared/b", "case b");
    let p = case(p, "shared/numbered/001", "numbered one");
    link(&p, "../../../../shared/b", &format!("{CASES}/b"));
    // A numbered case's variant is the link's name.
    link(&p, "../../../../shared/numbered", &format!("{CASES}/n"));
    assert_eq!(listed(&p), ["d/a", "d/b", "d/n/001"]);
    p.evals(&["verify"])
        .ok()
        .stderr_has("verified 3 cases: no problems");

    // A problem inside the linked folder is named by the path through the link.
    p.write("shared/b/expected.json", r#"{"answer": 3}"#);
    let d = p.evals(&["verify"]).code(1);
    d.stdout_has(&format!("{CASES}/b/expected.json: answer"));
    d.stderr_has("1 problem in 3 cases");
}

#[test]
fn a_symlinked_input_expected_and_metadata_inside_the_project_are_read() {
    let p = Project::new()
        .file(CONFIG, &config(FAKE))
        .file("shared/input.txt", "three words here")
        .file("shared/expected.json", r#"{"answer": "x"}"#)
        .file("shared/metadata.json", r#"{"difficulty": "hard"}"#);
    for f in ["input.txt", "expected.json", "metadata.json"] {
        // Absolute targets are followed as well as relative ones.
        link(
            &p,
            p.path().join("shared").join(f),
            &format!("{CASES}/a/{f}"),
        );
    }
    let d = p.evals(&["cases"]).ok();
    assert_eq!(d.row("a")[2], "hard", "metadata.json through its link");
    assert_eq!(
        d.row("a")[3],
        "1/1 answered",
        "expected.json through its link"
    );
    assert_eq!(d.row("a")[4], "3", "input.txt through its link");
    p.evals(&["verify"])
        .ok()
        .stderr_has("verified 1 case: no problems");
}

#[test]
fn a_symlinked_dataset_folder_and_cases_jsonl_inside_the_project_are_loaded() {
    let p = suite(FAKE)
        .file("shared/other/cases/v/input.txt", "other v")
        .file("shared/other/cases/v/expected.json", r#"{"answer": "x"}"#)
        .file(
            "shared/lines.jsonl",
            "{\"id\": \"l1\", \"input\": \"line one\", \"expected\": {\"answer\": \"x\"}}\n",
        );
    link(&p, "../../shared/other", "evals/datasets/other");
    link(
        &p,
        "../../../shared/lines.jsonl",
        "evals/datasets/d/cases.jsonl",
    );
    assert_eq!(listed(&p), ["d/a", "d/l1", "other/v"]);
    p.evals(&["verify", "-d", "other"])
        .ok()
        .stderr_has("verified 1 case: no problems");
}

/// Every command that loads cases, each refused by bad link before it does anything.
const LOADERS: &[&[&str]] = &[
    &["cases"],
    &["verify"],
    &["run", "--no-autosave"],
    &["compare", "--no-autosave"],
    &["record", "--no-autosave"],
    &["check", "--baseline", "main"],
    &["cassettes", "status"],
    &["cassettes", "prune"],
];

#[test]
fn a_link_outside_the_project_is_refused_by_every_command_naming_the_link_and_target() {
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(elsewhere.path().join("b")).unwrap();
    std::fs::write(elsewhere.path().join("b/input.txt"), "far away").unwrap();
    std::fs::write(
        elsewhere.path().join("b/expected.json"),
        r#"{"answer": "x"}"#,
    )
    .unwrap();
    let target = elsewhere.path().join("b").canonicalize().unwrap();
    let p = suite(FAKE);
    link(&p, &target, &format!("{CASES}/b"));
    for argv in LOADERS {
        let d = p.evals(argv).code(2);
        d.stderr_has(&format!(
            "{CASES}/b: symlink points outside the project, to {}",
            target.display()
        ));
        d.stderr_has("copy the file into the suite, or point the link inside the project");
    }

    // A case file linked outside is refused the same way, and so is a dataset folder.
    std::fs::remove_file(p.path().join(CASES).join("b")).unwrap();
    let input = target.join("input.txt");
    std::fs::remove_file(p.path().join(CASES).join("a/input.txt")).unwrap();
    link(&p, &input, &format!("{CASES}/a/input.txt"));
    p.evals(&["verify"]).code(2).stderr_has(&format!(
        "{CASES}/a/input.txt: symlink points outside the project, to {}",
        input.display()
    ));
    std::fs::remove_file(p.path().join(CASES).join("a/input.txt")).unwrap();
    p.write(&format!("{CASES}/a/input.txt"), "case a");
    link(&p, elsewhere.path(), "evals/datasets/far");
    p.evals(&["cases"])
        .code(2)
        .stderr_has("evals/datasets/far: symlink points outside the project");
}

#[test]
fn a_symlink_loop_is_a_problem_naming_the_link_and_nothing_hangs() {
    let p = suite(FAKE);
    // A link to its own ancestor, and two links that point at each other.
    link(&p, "..", &format!("{CASES}/a/up"));
    link(&p, "pong", &format!("{CASES}/ping"));
    link(&p, "ping", &format!("{CASES}/pong"));
    assert_eq!(listed(&p), ["d/a"], "a loop adds no case");
    let d = p.evals(&["verify"]).code(1);
    d.stdout_has(&format!(
        "{CASES}/a/up: symlink loops back to {CASES}, a folder above it"
    ));
    d.stdout_has(&format!("{CASES}/ping: symlink loops"));
    d.stdout_has(&format!("{CASES}/pong: symlink loops"));
    d.stderr_has("3 problems in 1 case");
}

#[test]
fn a_broken_symlink_is_an_error_naming_it() {
    let p = suite(FAKE);
    link(&p, "../../../../shared/gone", &format!("{CASES}/b"));
    for argv in [&["cases"][..], &["verify"], &["cassettes", "prune"]] {
        p.evals(argv).code(2).stderr_has(&format!(
            "{CASES}/b: broken symlink: its target ../../../../shared/gone does not exist"
        ));
    }
    std::fs::remove_file(p.path().join(CASES).join("b")).unwrap();
    std::fs::remove_file(p.path().join(CASES).join("a/expected.json")).unwrap();
    link(&p, "nowhere.json", &format!("{CASES}/a/expected.json"));
    p.evals(&["verify"]).code(2).stderr_has(&format!(
        "{CASES}/a/expected.json: broken symlink: its target nowhere.json does not exist"
    ));
}

/// A local provider on `uri` with the model `m1`.
fn local(uri: &str) -> String {
    format!("local:\n  base_url: {uri}/v1\n  models: [m1]\n")
}

/// The suite with real cases `a` and `b`, both recorded against a mock server.
fn recorded() -> (Project, String) {
    let s = Server::start();
    s.answer(
        "/v1/chat/completions",
        chat(
            &json!({"answer": "x"}).to_string(),
            json!({"prompt_tokens": 3, "completion_tokens": 2}),
        ),
    );
    let p = case(suite(&local(&s.uri())), &format!("{CASES}/b"), "case b");
    p.evals(&["record", "--no-autosave"]).ok();
    assert_eq!(s.hits(), 2);
    (p, format!("{CASSETTES}/local/m1/max-64/d/b.json"))
}

#[test]
fn status_counts_a_symlinked_cases_recording_as_used_and_prune_keeps_it() {
    let (p, b) = recorded();
    // The case moves to a shared folder of the project and is linked back.
    std::fs::create_dir_all(p.path().join("shared")).unwrap();
    std::fs::rename(p.path().join(CASES).join("b"), p.path().join("shared/b")).unwrap();
    link(&p, "../../../../shared/b", &format!("{CASES}/b"));

    p.evals(&["cassettes", "status"])
        .ok()
        .stdout_has("2 recorded, 0 missing, 0 stale, 0 unused");
    p.evals(&["cassettes", "prune"])
        .ok()
        .stderr_has("no unused cassettes");
    assert!(p.path().join(&b).is_file(), "prune removed {b}");
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .ok();
}

#[test]
fn prune_refuses_while_case_discovery_reports_a_problem_and_deletes_nothing() {
    let (p, b) = recorded();
    // Case b is gone (its recording is unused) and a loop stands in case discovery.
    std::fs::remove_dir_all(p.path().join(CASES).join("b")).unwrap();
    link(&p, "..", &format!("{CASES}/a/up"));
    let before = files_under(&p.path().join(CASSETTES));
    assert_eq!(before.len(), 2);
    for argv in [&["cassettes", "prune"][..], &["cassettes", "prune", "-n"]] {
        let d = p.evals(argv).code(2);
        d.stderr_has("refusing to prune");
        d.stderr_has(&format!("{CASES}/a/up: symlink loops"));
        d.stderr_has("run `evals verify`");
        assert_eq!(d.stdout, "", "nothing listed or removed");
    }
    assert_eq!(files_under(&p.path().join(CASSETTES)), before);
    assert!(p.path().join(&b).is_file());
    p.evals(&["cassettes", "status"])
        .ok()
        .stdout_has("1 recorded, 0 missing, 0 stale, 1 unused")
        .stderr_has("an unused recording may belong to a case it could not find");

    // Any problem stops it, even one of a case that loaded (an empty input).
    std::fs::remove_file(p.path().join(CASES).join("a/up")).unwrap();
    p.write(&format!("{CASES}/a/input.txt"), "");
    p.evals(&["cassettes", "prune"])
        .code(2)
        .stderr_has("refusing to prune: case discovery reported 1 problem,");
    assert_eq!(files_under(&p.path().join(CASSETTES)), before);
    // With every problem gone, prune does its job.
    p.write(&format!("{CASES}/a/input.txt"), "a question");
    p.evals(&["cassettes", "prune"])
        .ok()
        .stdout_has(&format!("removed {b}"));
    assert!(
        p.path()
            .join(format!("{CASSETTES}/local/m1/max-64/d/a.json"))
            .is_file()
    );
}
