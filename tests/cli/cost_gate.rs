//! Cost, tokens and latency gated against the baseline (`--max-cost-increase`,
//! `--max-tokens-increase`, `--max-latency-increase`, the config's `gate:` keys), end to end:
//! the gate suite of `gate.rs` (a real git repo, a real history, the model a wiremock
//! server), `main` recorded with one `usage`, a `feature` branch re-recorded with 30% more
//! tokens. Replay reads usage and latency from the cassettes, so every check below gives the
//! same figures; the latencies are written into the cassettes, as a recording keeps them.

use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::body_string_contains;

use crate::gate::{CHECK, CONTENDER, Gate, config};
use crate::harness::{Project, files_under};
use crate::mock::{chat, post};

/// $1 per million tokens in, $3 out: 100 + 100 tokens a case cost $0.0004.
const PRICING: &str = "pricing:\n  local/m1: { input: 1, output: 3 }\n";

/// Every case answered right, with `tokens` tokens in and as many out.
fn usage(g: &Gate, tokens: u64) {
    g.server.reset();
    for id in ["steady", "slips"] {
        let right = json!({"a": "alpha", "b": "bravo", "c": "charlie", "d": "delta", "e": "echo"});
        g.server.mount(
            post("/v1/chat/completions")
                .and(body_string_contains(format!("Case {id}.")))
                .respond_with(chat(
                    &right.to_string(),
                    json!({"prompt_tokens": tokens, "completion_tokens": tokens}),
                )),
        );
    }
}

/// Every recorded exchange as taking `ms` milliseconds (what replay reports as latency).
fn latency(root: &Path, ms: u64) {
    for f in files_under(&root.join("evals/cassettes")) {
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for i in v["interactions"].as_array_mut().expect("interactions") {
            i["latency_ms"] = json!(ms);
        }
        std::fs::write(&f, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }
}

/// The gate suite with `extra` config (pricing, `gate:`) on `main`: recorded with 100
/// tokens each way per case at 1000 ms, then checked (the baseline); then `feature`,
/// re-recorded with `feature_tokens` at `feature_ms`.
fn branched(extra: &str, feature_tokens: u64, feature_ms: u64) -> Gate {
    let g = Gate::new();
    g.p.write(
        "evals/.llm-evals.config.yml",
        &format!("{}{extra}", config(&g.server.uri(), 1, "{{ input }}")),
    );
    usage(&g, 100);
    g.evals(&["record"]).ok();
    latency(g.path(), 1000);
    g.commit("cassettes");
    g.evals(&["check"]).ok();
    g.git(&["checkout", "-q", "-b", "feature"]);
    usage(&g, feature_tokens);
    g.evals(&["record"]).ok();
    latency(g.path(), feature_ms);
    g.commit("more tokens");
    g
}

fn check(g: &Gate, extra: &[&str]) -> crate::harness::Done {
    // `gate.rs`'s check, with the diff and the JSON snapshot too.
    let mut argv = CHECK.to_vec();
    argv.extend(["--diff", "out.diff", "--json", "run.json"]);
    argv.extend(extra);
    g.evals(&argv).output()
}

const COST_ROSE: &str =
    "local/m1 · d: cost rose 30% (0.0008 → 0.0010 USD), more than the 10% allowed";

#[test]
fn recordings_with_30_percent_more_tokens_fail_max_cost_increase_10_and_pass_50() {
    let g = branched(PRICING, 130, 1000);
    let d = check(&g, &["--max-cost-increase", "10"]);
    assert_eq!(d.code, 1, "{}", d.stderr);
    d.stderr_has("evals check: 1 regression in gate (main → feature)")
        .stderr_has(COST_ROSE);
    // The comment: the reason, the cost Δ column, and the moves on the verdict line.
    let md = g.read("pr.md");
    assert!(
        md.starts_with(
            "**evals check: 1 regression** in gate (main → feature) · cost +30% · tokens +30%\n"
        ),
        "{md}"
    );
    assert!(md.contains(&format!("- {COST_ROSE}\n")), "{md}");
    assert!(
        md.contains("| errors | failed thresholds | cost Δ | |\n"),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "| {CONTENDER} | d | 100.0% | 100.0% | +0.0 | 0 | 0 | +30% | **regressed** |"
        )),
        "{md}"
    );
    // JUnit: a failed test named after the measure, in the gate's words.
    let junit = g.read("junit.xml");
    assert!(
        junit.contains("<testcase name=\"cost\" classname=\"local/m1 · d\"")
            && junit.contains(
                "message=\"cost rose 30% (0.0008 → 0.0010 USD), more than the 10% allowed\""
            ),
        "{junit}"
    );
    // The diff (no output changed) and the JSON snapshot say it too.
    assert!(
        g.read("out.diff").starts_with(&format!("# {COST_ROSE}\n")),
        "{}",
        g.read("out.diff")
    );
    let json: Value = serde_json::from_str(&g.read("run.json")).unwrap();
    let c = &json["comparison"];
    assert_eq!(c["verdict"]["reasons"], json!([COST_ROSE]));
    assert_eq!(c["experiments"][0]["tokens"]["baseline"], json!(400.0));
    assert_eq!(c["experiments"][0]["tokens"]["candidate"], json!(520.0));
    assert_eq!(c["experiments"][0]["cost_usd"]["cases"], json!(2));

    // 50% allowed: passes, and the comment still says what moved.
    let d = check(&g, &["--max-cost-increase", "50"]);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert!(g.read("pr.md").starts_with(
        "**evals check passed** in gate (main → feature) · cost +30% · tokens +30%\n"
    ));
    // The same replay, the same verdict.
    assert_eq!(check(&g, &["--max-cost-increase", "10"]).code, 1);

    // Tokens: 30% more fails 10 and passes 30 (inclusive).
    let d = check(&g, &["--max-tokens-increase", "10"]);
    assert_eq!(d.code, 1, "{}", d.stderr);
    d.stderr_has("local/m1 · d: tokens rose 30% (400 → 520 tokens), more than the 10% allowed");
    assert_eq!(check(&g, &["--max-tokens-increase", "30"]).code, 0);

    // `report --fail-on-regression` gates the stored runs by the same flags.
    let d = g
        .evals(&[
            "report",
            "--baseline",
            "main",
            "--fail-on-regression",
            "--format",
            "md",
            "--max-cost-increase",
            "10",
        ])
        .output();
    assert_eq!(d.code, 1, "{}", d.stderr);
    d.stdout_has(COST_ROSE);
}

#[test]
fn the_config_s_gate_keys_gate_and_a_flag_beats_them() {
    let g = branched(
        &format!("{PRICING}gate: {{ max_cost_increase: 10, max_tokens_increase: 50 }}\n"),
        130,
        1000,
    );
    let d = check(&g, &[]);
    assert_eq!(d.code, 1, "{}", d.stderr);
    d.stderr_has(COST_ROSE).stderr_lacks("tokens rose");
    let d = check(&g, &["--max-cost-increase", "40"]);
    assert_eq!(d.code, 0, "{}", d.stderr);
    let d = check(
        &g,
        &["--max-cost-increase", "40", "--max-tokens-increase", "20"],
    );
    assert_eq!(d.code, 1, "{}", d.stderr);
    d.stderr_has("tokens rose 30%");
}

#[test]
fn a_recorded_latency_40_percent_higher_fails_max_latency_increase_25_and_passes_50() {
    let g = branched(PRICING, 100, 1400);
    let d = check(&g, &["--max-latency-increase", "25"]);
    assert_eq!(d.code, 1, "{}", d.stderr);
    d.stderr_has("local/m1 · d: p50 latency rose 40% (1.00 → 1.40 s), more than the 25% allowed");
    let junit = g.read("junit.xml");
    assert!(junit.contains("<testcase name=\"p50 latency\""), "{junit}");
    // Nothing else moved: no cost or token change on the verdict line.
    assert!(
        g.read("pr.md")
            .starts_with("**evals check: 1 regression** in gate (main → feature)\n")
    );
    let d = check(&g, &["--max-latency-increase", "50"]);
    assert_eq!(d.code, 0, "{}", d.stderr);
}

#[test]
fn an_unknown_cost_is_not_compared_and_says_so_never_gated_as_zero() {
    // No pricing: the local provider reports tokens, not dollars.
    let g = branched("", 130, 1000);
    let d = check(&g, &["--max-cost-increase", "0"]);
    assert_eq!(d.code, 0, "{}", d.stderr);
    d.stderr_has(
        "--max-cost-increase: the cost of local/m1 · d is unknown in both runs, so it could not be compared (not gated, never taken for 0)",
    );
    // Tokens are known: they move on the verdict line; the cost is not said to.
    let md = g.read("pr.md");
    assert!(
        md.starts_with("**evals check passed** in gate (main → feature) · tokens +30%\n"),
        "{md}"
    );
    assert!(!md.contains("cost Δ"), "{md}");
}

#[test]
fn a_negative_or_non_number_rise_in_the_config_or_a_flag_exits_2_naming_it() {
    for (value, shown) in [("-5", "-5"), ("ten", "\"ten\""), ("\"10%\"", "\"10%\"")] {
        let p = Project::toy();
        let cfg = p.read("evals/.llm-evals.config.yml");
        p.write(
            "evals/.llm-evals.config.yml",
            &format!("{cfg}gate:\n  max_cost_increase: {value}\n"),
        );
        let d = p.evals(&["check"]).code(2);
        d.stderr_has(&format!(
            "gate.max_cost_increase is {shown}: give a percentage of 0 or more as a number (`gate.max_cost_increase: 10` allows a rise of 10%)"
        ))
        .stderr_has(".llm-evals.config.yml:");
    }
    let p = Project::toy();
    p.evals(&["check", "--max-tokens-increase", "-1"])
        .code(2)
        .stderr_has(
            "--max-tokens-increase -1: expected a percentage of 0 or more (10 allows a rise of 10%)",
        );
    // An unknown key of gate: is named with the known ones.
    let cfg = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &format!("{cfg}gate:\n  max_cost_increse: 10\n"),
    );
    p.evals(&["check"]).code(2).stderr_has("max_cost_increse");
}
