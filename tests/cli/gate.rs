//! `evals check`, the CI gate, end to end: real `evals` processes, a real SQLite history
//! and a real git repo in a temp dir, the model a wiremock server behind a custom
//! `base_url:` provider. A run on `main` is the baseline; a `feature` branch re-records
//! worse answers (or breaks its cassettes, or its suite) and `check` must say so, in its
//! exit code and in the Markdown and JUnit reports.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::harness::{Done, Project, Run};

/// The one contender, as every report labels it.
const CONTENDER: &str = "local/m1";

/// The fields every case expects: five, so one wrong field costs 18 points.
const FIELDS: [(&str, &str); 5] = [
    ("a", "alpha"),
    ("b", "bravo"),
    ("c", "charlie"),
    ("d", "delta"),
    ("e", "echo"),
];

/// A mock OpenAI-compatible server on loopback and the runtime that drives it.
struct Server {
    rt: tokio::runtime::Runtime,
    server: MockServer,
}

impl Server {
    fn start() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let server = rt.block_on(MockServer::start());
        Server { rt, server }
    }

    /// Forgets every answer, then answers a request whose body holds `needle` with `reply`.
    fn answer(&self, replies: &[(&str, String)]) {
        self.rt.block_on(self.server.reset());
        for (needle, content) in replies {
            let body = json!({
                "id": "gen-1",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 20},
            });
            self.rt.block_on(
                Mock::given(method("POST"))
                    .and(path("/v1/chat/completions"))
                    .and(body_string_contains(*needle))
                    .respond_with(ResponseTemplate::new(200).set_body_json(body))
                    .mount(&self.server),
            );
        }
    }
}

/// The model's reply with the first `wrong` fields answered wrong (each worth 0.1).
fn reply(wrong: usize) -> String {
    let fields: serde_json::Map<String, Value> = FIELDS
        .iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let v = if i < wrong { "zulu" } else { v };
            (k.to_string(), json!(v))
        })
        .collect();
    Value::Object(fields).to_string()
}

fn config(uri: &str, version: u32, user: &str) -> String {
    let schema: String = FIELDS
        .iter()
        .map(|(k, _)| format!("    {k}: string\n"))
        .collect();
    format!(
        "suite: gate\nversion: {version}\nrequest_types: [prompt]\nadapter:\n  kind: prompt\n  system: \"Answer in JSON.\"\n  user: \"{user}\"\n  json: true\nscorer:\n  kind: fields\n  schema:\n{schema}minimum_scores: {{ field_accuracy: 0.8 }}\nlocal:\n  base_url: {uri}/v1\n  models: [m1]\n"
    )
}

fn case_line(id: &str) -> String {
    let expected: serde_json::Map<String, Value> =
        FIELDS.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    format!(
        "{}\n",
        json!({"id": id, "input": format!("Case {id}."), "expected": expected})
    )
}

/// A suite in a git repo on `main`: cases `steady` (always answered right) and `slips`
/// (answered with `slips` fields wrong), the model behind a wiremock server.
struct Gate {
    server: Server,
    p: Project,
}

impl Gate {
    fn new() -> Gate {
        let server = Server::start();
        let p = Project::new()
            .file(
                "evals/.llm-evals.config.yml",
                &config(&server.server.uri(), 1, "{{ input }}"),
            )
            .file(
                "evals/datasets/d/cases.jsonl",
                &format!("{}{}", case_line("steady"), case_line("slips")),
            )
            .file(".gitignore", ".evals/\nevals/results/\n");
        let g = Gate { server, p };
        g.git(&["init", "-q"]);
        g.git(&["checkout", "-q", "-b", "main"]);
        g.commit("suite");
        g.answers(0);
        g
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(self.p.path())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .expect("run git (is it installed?)");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn commit(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", msg]);
    }

    fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    /// From now on the model answers `steady` right and `slips` with `wrong` fields wrong.
    fn answers(&self, wrong: usize) {
        self.server.answer(&[
            ("Case steady.", reply(0)),
            ("Case slips.", reply(wrong)),
        ]);
    }

    fn evals(&self, args: &[&str]) -> Run {
        self.p.evals(args)
    }

    fn path(&self) -> &Path {
        self.p.path()
    }

    fn read(&self, rel: &str) -> String {
        self.p.read(rel)
    }

    /// `main`'s history: `record` (live, cassettes written), then `check` (replayed).
    fn on_main(&self) {
        self.evals(&["record"]).ok();
        self.commit("cassettes");
        self.evals(&["check"])
            .ok()
            .stderr_has("evals check passed in gate (no baseline → main)");
    }

    /// Branches `feature` off `main`, the model now getting `wrong` fields of `slips`
    /// wrong, and re-records its cassettes.
    fn feature(&self, wrong: usize) {
        self.git(&["checkout", "-q", "-b", "feature"]);
        self.answers(wrong);
        self.evals(&["record"]).ok();
        self.commit("worse answers");
    }

    /// `evals history --json`, filtered by `args`.
    fn history(&self, args: &[&str]) -> Vec<Value> {
        let mut argv = vec!["history", "--json"];
        argv.extend(args);
        let d = self.evals(&argv).ok();
        serde_json::from_str::<Value>(&d.stdout)
            .unwrap_or_else(|e| panic!("history --json: {e}\n{}", d.stdout))
            .as_array()
            .expect("an array of runs")
            .clone()
    }

    /// The id of the latest run on `main` (`check`'s baseline).
    fn latest_main_id(&self) -> String {
        self.history(&["--branch", "main"])[0]["id"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

const CHECK: &[&str] = &[
    "check",
    "--baseline",
    "main",
    "--markdown",
    "pr.md",
    "--junit",
    "junit.xml",
];

fn check(g: &Gate, tolerance: &str) -> Run {
    let mut argv = CHECK.to_vec();
    argv.extend(["--tolerance", tolerance]);
    g.evals(&argv)
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn has(text: &str, what: &str, needle: &str) {
    assert!(
        text.contains(needle),
        "{what} lacks {needle:?}\n--- {what}\n{text}"
    );
}

#[test]
fn worse_answers_on_a_branch_fail_the_check_and_the_reports_name_case_and_contender() {
    let g = Gate::new();
    g.on_main();
    g.feature(1); // slips: 100% → 82%, still above its 80% threshold; the mean falls 9 points
    let d = check(&g, "0.02").code(1);
    d.stderr_has("error: evals check: 1 regression in gate (main → feature)")
        .stderr_has(&format!(
            "{CONTENDER} · d: mean score fell 9.0 points (100.0% → 91.0%), more than the 2.0-point tolerance"
        ));

    let md = g.read("pr.md");
    assert_eq!(
        first_line(&md),
        "**evals check: 1 regression** in gate (main → feature)"
    );
    has(
        &md,
        "pr.md",
        &format!("| {CONTENDER} | d | 100.0% | 91.0% | -9.0 | 2 | **regressed** |"),
    );
    has(
        &md,
        "pr.md",
        &format!(
            "| {CONTENDER} | d | `slips` | declined | 100.0% → 82.0% | -18.0 | `a`: want \"alpha\" got \"zulu\""
        ),
    );

    let junit = g.read("junit.xml");
    has(
        &junit,
        "junit.xml",
        &format!("<testsuite name=\"{CONTENDER} · d\""),
    );
    has(
        &junit,
        "junit.xml",
        &format!("<testcase name=\"slips\" classname=\"{CONTENDER} · d\""),
    );
    has(
        &junit,
        "junit.xml",
        "message=\"mean score 100.0% → 91.0% (-9.0 points) (tolerance 2.0 points)\"",
    );
}
