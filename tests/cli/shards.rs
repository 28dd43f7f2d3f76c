//! `evals check --shard K/N` and `evals merge`: a suite cut into slices that CI jobs run
//! apart and put back into the one run the whole suite makes in one job, gated the same.

use std::path::Path;

use serde_json::Value;

use crate::harness::Project;

/// A 500-case suite over three datasets of unequal size, two offline contenders, case
/// weights, thresholds and a weighted score: every figure the merge recomputes is in play.
/// A case in seven carries a wrong answer, so the verdict fails on named cases.
fn suite_500() -> Project {
    let config = "suite: shards\nrequest_types: [prompt]\nadapter: { kind: prompt, user: \"{{ input }}\", json: true }\nscorer:\n  kind: fields\n  schema:\n    answer: string\n    count: integer\nminimum_scores: { field_accuracy: 0.8 }\nweighted_score:\n  weights: { field_accuracy: 5, exact: 3, errors: -4 }\nfake:\n  models: [echo, parrot]\n";
    let p = Project::new().file("evals/.llm-evals.config.yml", config);
    let mut i = 0;
    for (dataset, n) in [("intake", 230), ("refunds", 170), ("edge", 100)] {
        let mut lines = String::new();
        for _ in 0..n {
            let want = serde_json::json!({"answer": format!("a{}", i % 11), "count": i % 5});
            let said = if i % 7 == 3 {
                serde_json::json!({"answer": "wrong", "count": i % 5})
            } else {
                want.clone()
            };
            let weight = if i % 13 == 0 { ", \"weight\": 2" } else { "" };
            lines.push_str(&format!(
                "{{\"id\": \"v{}/{i:04}\", \"input\": {}, \"expected\": {want}{weight}}}\n",
                i % 3,
                Value::String(format!("Case {i}. {said}"))
            ));
            i += 1;
        }
        p.write(&format!("evals/datasets/{dataset}/cases.jsonl"), &lines);
    }
    p
}

/// The gate flags both the one-job check and the merge are given, writing into `dir`.
fn gated(dir: &str) -> Vec<String> {
    let mut v: Vec<String> = ["--baseline", "main", "--tolerance", "0.02"]
        .map(String::from)
        .to_vec();
    for (flag, file) in [
        ("--json", "run.json"),
        ("--markdown", "comment.md"),
        ("--junit", "junit.xml"),
        ("--html", "report.html"),
        ("--diff", "changes.diff"),
    ] {
        v.push(flag.into());
        v.push(format!("{dir}/{file}"));
    }
    v
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A report with what differs between two runs of the same cases written the same:
/// run ids (and the short forms reports print), times, and the JSON's command line.
fn normalized(p: &Project, rel: &str) -> String {
    let text = p.read(rel);
    if rel.ends_with(".json") {
        let mut v: Value = serde_json::from_str(&text).expect("JSON");
        for k in ["id", "started_at", "finished_at", "argv"] {
            v["run"][k] = Value::Null;
        }
        return serde_json::to_string_pretty(&v).unwrap();
    }
    let id = regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")
        .unwrap();
    let time = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
    let text = id.replace_all(&text, "[run id]");
    time.replace_all(&text, "[time]").into_owned()
}

fn shard_json(p: &Project, k: usize) -> Value {
    serde_json::from_str(&p.read(&format!("shards/{k}.json"))).expect("shard JSON")
}

#[test]
fn four_shards_merged_are_the_one_job_run_in_results_verdict_and_reports() {
    let p = suite_500();
    // The baseline: main's first check.
    p.evals(&[
        "check",
        "--branch",
        "main",
        "--baseline",
        "main",
        "--no-autosave",
    ])
    .code(1);
    let one_job = p
        .evals(
            &[
                &["check", "--branch", "feature", "--no-autosave"][..],
                &args(&gated("one"))[..],
            ]
            .concat(),
        )
        .code(1);

    for k in 1..=4 {
        let spec = format!("{k}/4");
        let json = format!("shards/{k}.json");
        p.evals(&[
            "check",
            "--branch",
            "feature",
            "--no-autosave",
            "--shard",
            &spec,
            "--group",
            "g-42",
            "--json",
            &json,
        ])
        .ok()
        .stderr_has(&format!(
            "shard {spec} of group g-42: {} of 500 cases; a shard alone does not gate",
            shard_json(&p, k)["run"]["settings"]["cases"]
                .as_array()
                .unwrap()
                .len()
        ));
    }
    // Disjoint, covering, balanced slices.
    let mut all: Vec<String> = Vec::new();
    for k in 1..=4 {
        let cases = shard_json(&p, k)["run"]["settings"]["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect::<Vec<_>>();
        assert_eq!(
            cases.len(),
            125,
            "shard {k}: unrecorded cases are dealt evenly"
        );
        all.extend(cases);
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 500);

    let files: Vec<String> = (1..=4).map(|k| format!("shards/{k}.json")).collect();
    let merged = p
        .evals(
            &[
                &["merge"][..],
                &args(&files)[..],
                &["--no-autosave"][..],
                &args(&gated("merged"))[..],
            ]
            .concat(),
        )
        .code(one_job.code);
    merged.stderr_has("merged 4 shards: 500 cases, 6 experiments\n");
    for f in [
        "run.json",
        "comment.md",
        "junit.xml",
        "report.html",
        "changes.diff",
    ] {
        let (a, b) = (
            normalized(&p, &format!("one/{f}")),
            normalized(&p, &format!("merged/{f}")),
        );
        assert!(a == b, "{f} differs between the one-job run and the merge");
    }
    // The verdict said on stderr is the one-job check's.
    let verdict = |s: &str| {
        s.lines()
            .skip_while(|l| !l.starts_with("error: evals check:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(!verdict(&one_job.stderr).is_empty(), "{}", one_job.stderr);
    assert_eq!(verdict(&merged.stderr), verdict(&one_job.stderr));

    // From the history, by group: the same run again.
    p.evals(&[
        "merge",
        "--group",
        "g-42",
        "--branch",
        "feature",
        "--baseline",
        "main",
        "--no-autosave",
        "--json",
        "history/run.json",
    ])
    .code(one_job.code);
    assert!(normalized(&p, "history/run.json") == normalized(&p, "one/run.json"));
}

#[test]
fn a_missing_duplicated_or_foreign_shard_is_named_and_exits_2() {
    let p = suite_500();
    let shard = |k: usize, group: &str, n: usize, file: &str| {
        p.evals(&[
            "check",
            "--branch",
            "feature",
            "--no-autosave",
            "-d",
            "edge",
            "--shard",
            &format!("{k}/{n}"),
            "--group",
            group,
            "--json",
            file,
        ])
        .ok();
    };
    for k in 1..=3 {
        shard(k, "g1", 3, &format!("s{k}.json"));
    }
    shard(2, "g2", 3, "other.json");
    shard(1, "g1", 2, "halves.json");
    let merge = |files: &[&str]| {
        p.evals(&[&["merge", "--no-autosave"][..], files].concat())
            .code(2)
    };
    merge(&["s1.json", "s3.json"]).stderr_has(
        "error: evals merge: group g1: missing shard 2/3; pass each of the 3 shards' JSON once\n",
    );
    merge(&["s1.json"]).stderr_has("missing shards 2/3, 3/3");
    merge(&["s1.json", "s2.json", "s2.json", "s3.json"])
        .stderr_has("given twice: shard 2/3 in s2.json and s2.json");
    merge(&["s1.json", "s3.json", "other.json"])
        .stderr_has("other.json is shard 2/3 of group g2, but s1.json is of group g1");
    merge(&["s1.json", "halves.json"]).stderr_has(
        "halves.json is shard 1/2 of a run cut into 2, but s1.json is of a run cut into 3",
    );
    // A run made without --shard is no shard.
    p.evals(&[
        "check",
        "--branch",
        "feature",
        "-d",
        "edge",
        "--no-autosave",
        "--json",
        "whole.json",
    ])
    .code(1);
    merge(&["whole.json", "s1.json"])
        .stderr_has("whole.json: not a shard (a run made without --shard)");
    // From the history: a shard that never ran is named too.
    p.evals(&[
        "merge",
        "--group",
        "g2",
        "--branch",
        "feature",
        "--no-autosave",
    ])
    .code(2)
    .stderr_has("group g2: missing shards 1/3, 3/3");
    assert!(Path::new(&p.path().join("s1.json")).is_file());
}

#[test]
fn a_shard_needs_a_group_writes_no_gated_report_and_takes_the_group_from_github() {
    let p = suite_500();
    p.evals(&["check", "--shard", "1/2", "-d", "edge"])
        .code(2)
        .stderr_has("--shard 1/2 needs a run group: pass --group ID");
    p.evals(&[
        "check", "--shard", "1/2", "--group", "g", "--junit", "j.xml",
    ])
    .code(2)
    .stderr_has("--junit with --shard 1/2: a shard is not gated and writes no report");
    p.evals(&["check", "--shard", "3/2", "--group", "g"])
        .code(2)
        .stderr_has("expected K/N, slice K of N with 1 <= K <= N");
    p.evals(&[
        "check",
        "--branch",
        "feature",
        "--shard",
        "2/2",
        "-d",
        "edge",
        "--no-autosave",
    ])
    .env("GITHUB_RUN_ID", "9001")
    .env("GITHUB_RUN_ATTEMPT", "2")
    .ok()
    .stderr_has("shard 2/2 of group 9001-2: 50 of 100 cases");
}

#[test]
fn a_dataset_only_some_shards_ran_keeps_its_place_in_the_merged_run() {
    // One case in `a-tiny`: two of the three shards have no experiment of it at all.
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &crate::harness::mini_config("tiny"),
        )
        .file(
            "evals/datasets/a-tiny/cases.jsonl",
            crate::harness::MINI_CASES,
        );
    let mut lines = String::new();
    for i in 0..10 {
        lines.push_str(&format!(
            "{{\"id\": \"c{i}\", \"input\": \"say {{\\\"answer\\\": \\\"{}\\\"}}\", \"expected\": {{\"answer\": \"x\"}}}}\n",
            if i == 4 { "y" } else { "x" }
        ));
    }
    p.write("evals/datasets/b-big/cases.jsonl", &lines);
    let one = p
        .evals(&[
            "check",
            "--branch",
            "f",
            "--no-autosave",
            "--json",
            "one.json",
        ])
        .output();
    for k in 1..=3 {
        p.evals(&[
            "check",
            "--branch",
            "f",
            "--no-autosave",
            "--shard",
            &format!("{k}/3"),
            "--group",
            "t",
            "--json",
            &format!("s{k}.json"),
        ])
        .ok();
    }
    let experiments = |f: &str| {
        let v: Value = serde_json::from_str(&p.read(f)).unwrap();
        v["experiments"].as_array().unwrap().len()
    };
    assert_eq!(
        (1..=3)
            .map(|k| experiments(&format!("s{k}.json")))
            .sum::<usize>(),
        4,
        "a-tiny in one shard, b-big in all three"
    );
    // Given in any order, the shards merge into the one-job run.
    p.evals(&[
        "merge",
        "s3.json",
        "s1.json",
        "s2.json",
        "--no-autosave",
        "--json",
        "merged.json",
    ])
    .code(one.code);
    assert!(normalized(&p, "merged.json") == normalized(&p, "one.json"));
}

#[test]
fn slices_follow_the_recorded_latency_of_every_contenders_cassette() {
    // The bundled tax-intake suite: 4 cases, 4 contenders in its lineup. Summed over them,
    // the recordings take estimate 7.0 s, complete 6.6 s, vague 6.5 s, partial 6.4 s: dealt
    // longest first, estimate and partial share a slice (13.5 s against 13.1 s), where
    // dealing by key alone would pair complete with partial.
    let p = Project::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for part in ["fixtures/tax-intake", "cassettes/tax-intake"] {
        crate::harness::copy_tree(
            &root.join(part),
            &p.path().join(part),
            &["evals/results", ".evals"],
        );
    }
    let dir = p.path().join("fixtures/tax-intake");
    let slice = |k: usize| {
        p.evals(&[
            "check",
            "--no-autosave",
            "--branch",
            "feature",
            "--shard",
            &format!("{k}/2"),
            "--group",
            "t",
            "--json",
            &format!("s{k}.json"),
        ])
        .cwd(&dir)
        .env("CI", "1")
        .ok()
        .stderr_lacks("cases errored");
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("s{k}.json"))).unwrap())
                .unwrap();
        v["run"]["settings"]["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        slice(1),
        ["tax-preparation/estimate", "tax-preparation/partial"]
    );
    assert_eq!(
        slice(2),
        ["tax-preparation/complete", "tax-preparation/vague"]
    );
}

#[test]
fn a_shard_holding_a_copied_or_a_lost_case_merged_as_if_whole() {
    let p = suite_500();
    for k in 1..=2 {
        p.evals(&[
            "check",
            "--branch",
            "feature",
            "--no-autosave",
            "-d",
            "edge",
            "--shard",
            &format!("{k}/2"),
            "--group",
            "g",
            "--json",
            &format!("s{k}.json"),
        ])
        .ok();
    }
    let read = |f: &str| -> Value { serde_json::from_str(&p.read(f)).unwrap() };
    let write = |f: &str, v: &Value| p.write(f, &serde_json::to_string_pretty(v).unwrap());
    let merge = |files: &[&str]| {
        p.evals(&[&["merge", "--no-autosave"][..], files].concat())
            .output()
    };
    let (s1, s2) = (read("s1.json"), read("s2.json"));
    let first = s1["experiments"][0]["cases"][0].clone();
    let key = format!("edge/{}", first["case"].as_str().unwrap());
    let who = s1["experiments"][0]["contender"]["id"].as_str().unwrap();

    // One of shard 1's cases copied into shard 2 (its results, not its list of cases).
    let mut copied = s2.clone();
    copied["experiments"][0]["cases"]
        .as_array_mut()
        .unwrap()
        .push(first.clone());
    write("copied.json", &copied);
    let done = merge(&["s1.json", "copied.json"]);
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(
        done.stderr.contains(&format!(
            "error: copied.json: shard 2/2: case {key} ({who}) is not one of this shard's cases; merge the JSON files `evals check --shard` wrote, as written\n"
        )),
        "{}",
        done.stderr
    );

    // The same case twice in its own shard.
    let mut twice = s1.clone();
    twice["experiments"][0]["cases"]
        .as_array_mut()
        .unwrap()
        .push(first.clone());
    write("twice.json", &twice);
    let done = merge(&["twice.json", "s2.json"]);
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(
        done.stderr.contains(&format!(
            "twice.json: shard 1/2: case {key} ({who}) is held more than once"
        )),
        "{}",
        done.stderr
    );

    // The case removed from shard 1's results: a lost case, not a "removed" one.
    let mut lost = s1.clone();
    lost["experiments"][0]["cases"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    write("lost.json", &lost);
    let done = merge(&["lost.json", "s2.json"]);
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(
        done.stderr.contains(&format!(
            "lost.json: shard 1/2: case {key} ({who}) has no result, though the shard completed"
        )),
        "{}",
        done.stderr
    );
    // As written, they merge.
    let done = merge(&["s1.json", "s2.json"]);
    assert!(done.code == 0 || done.code == 1, "{}", done.stderr);
}
