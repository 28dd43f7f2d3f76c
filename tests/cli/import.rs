//! `evals import promptfoo`: three of promptfoo's own example configs (fixtures/promptfoo/,
//! copied from its repository) import into suites that `evals verify` passes, and running
//! each against a scripted OpenAI server on loopback gives every test the pass or fail
//! promptfoo's documented assertion semantics give the same answers; what cannot be
//! translated is listed with file and line; bad input exits 2 naming the file and line;
//! an existing suite is never overwritten without --force.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::body_string_contains;

use crate::harness::{Project, copy_tree};
use crate::mock::{Server, chat, post};

const KEY: &str = "sk-dummy-import-test-0000000000";

fn fixture(name: &str) -> Project {
    let p = Project::new();
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/promptfoo")
        .join(name);
    copy_tree(&from, p.path(), &[]);
    p
}

/// The written suite's OpenAI section pointed at the scripted server.
fn point_at(p: &Project, uri: &str) {
    let config = p.read("evals/.llm-evals.config.yml");
    assert!(config.contains("\nopenai:\n"), "{config}");
    p.write(
        "evals/.llm-evals.config.yml",
        &config.replace("\nopenai:\n", &format!("\nopenai:\n  base_url: {uri}/v1\n")),
    );
}

/// The contender answers `answer` to a prompt holding `prompt`.
fn answer(s: &Server, prompt: &str, answer: &str) {
    s.mount(
        post("/v1/chat/completions")
            .and(body_string_contains(prompt))
            .and(body_string_contains("\"model\":\"gpt-"))
            .respond_with(chat(
                answer,
                json!({"prompt_tokens": 10, "completion_tokens": 5}),
            )),
    );
}

/// The judge (promptfoo's llm-rubric grader) scores the reply holding `output` `score`.
fn grade(s: &Server, output: &str, score: f64) {
    s.mount(
        post("/v1/chat/completions")
            .and(body_string_contains("You are grading output"))
            .and(body_string_contains(output))
            .respond_with(chat(
                &format!(r#"{{"score": {score}, "reason": "scripted"}}"#),
                json!({"prompt_tokens": 10, "completion_tokens": 5}),
            ))
            .with_priority(1),
    );
}

/// Imports the fixture, verifies the suite, runs it live against `s` and returns each
/// test's pass or fail by dataset and case.
fn import_and_run(p: &Project, s: &Server) -> BTreeMap<(String, String), bool> {
    p.evals(&["import", "promptfoo"]).ok();
    p.evals(&["verify"]).ok().stderr_has("no problems");
    point_at(p, &s.uri());
    p.evals(&[
        "compare",
        "--cassettes",
        "live",
        "--no-autosave",
        "--format",
        "json",
        "-o",
        "run.json",
    ])
    .env("OPENAI_API_KEY", KEY)
    .output();
    let run: Value = serde_json::from_str(&p.read("run.json")).expect("the JSON report");
    let mut out = BTreeMap::new();
    for e in run["experiments"].as_array().unwrap() {
        for c in e["cases"].as_array().unwrap() {
            assert!(c["error"].is_null(), "{c}");
            out.insert(
                (
                    e["dataset"].as_str().unwrap().to_string(),
                    c["case"].as_str().unwrap().to_string(),
                ),
                c["passed"].as_bool().unwrap(),
            );
        }
    }
    out
}

fn expected(rows: &[(&str, &str, bool)]) -> BTreeMap<(String, String), bool> {
    rows.iter()
        .map(|(d, c, p)| ((d.to_string(), c.to_string()), *p))
        .collect()
}

#[test]
fn simple_test_imports_and_each_test_passes_or_fails_as_promptfoo_says() {
    let s = Server::start();
    let long = format!("Ahoy, world! {}", "Arr ".repeat(80));
    // prompt-1 is "Rephrase this from English to Pirate: {{body}}", prompt-2 "Pretend
    // you're a pirate and speak these words: {{body}}".
    let p1 = "Rephrase this from English to Pirate: ";
    let p2 = "speak these words: ";
    answer(&s, &format!("{p1}Yes"), "Yarr");
    answer(&s, &format!("{p2}Yes"), "yarr");
    answer(&s, &format!("{p1}I'm hungry"), "I be starving");
    answer(&s, &format!("{p2}I'm hungry"), "Me belly wants GRUB");
    answer(
        &s,
        &format!("{p1}Output the story"),
        r#"{"life": "at sea"}"#,
    );
    answer(
        &s,
        &format!("{p2}Output the story"),
        r#"Here it be: {"life": "at sea"}"#,
    );
    answer(&s, &format!("{p1}Hello world"), "Ahoy, world!");
    answer(&s, &format!("{p2}Hello world"), &long);
    answer(
        &s,
        &format!("{p1}The quick brown fox"),
        "Arrr, the quick brown fox leaps the lazy hound",
    );
    answer(
        &s,
        &format!("{p2}The quick brown fox"),
        "Arrr, a fox jumped",
    );
    grade(&s, "the quick brown fox leaps", 1.0);
    grade(&s, "a fox jumped", 0.0);
    let p = fixture("simple-test");
    let got = import_and_run(&p, &s);
    // By promptfoo's semantics: `equals` is exact ("yarr" is not "Yarr"); `icontains`
    // ignores case; `is-json` needs the whole output to be JSON; a python assertion's
    // number is its score, passing above 0 (`max(0, len(output) - 300)` fails a short
    // reply), the javascript one needs the "Ahoy" prefix (`similar` is not translated);
    // llm-rubric follows the grader and the `arrr` template ignores case.
    assert_eq!(
        got,
        expected(&[
            ("prompt-1", "check-for-exact-match", true),
            ("prompt-2", "check-for-exact-match", false),
            ("prompt-1", "another-basic-substring-check", false),
            ("prompt-2", "another-basic-substring-check", true),
            ("prompt-1", "check-if-output-is-json", true),
            ("prompt-2", "check-if-output-is-json", false),
            ("prompt-1", "check-for-semantic-similarity", false),
            ("prompt-2", "check-for-semantic-similarity", true),
            ("prompt-1", "use-llm-to-evaluate-output", true),
            ("prompt-2", "use-llm-to-evaluate-output", false),
        ])
    );
    // The judge is asked only about the tests with an llm-rubric, once per prompt.
    let judged = s
        .bodies()
        .iter()
        .filter(|b| b.to_string().contains("You are grading output"))
        .count();
    assert_eq!(judged, 2);
}

#[test]
fn eval_self_grading_applies_default_test_to_every_test() {
    let s = Server::start();
    let p1 = "Answer this user's question: ";
    let p2 = "Answer this user's question concisely: ";
    let rambling = format!("Happy to help, Bob! {}", "We have many shoes. ".repeat(60));
    answer(
        &s,
        &format!("{p1}Bob"),
        "Sure Bob, use the search bar at the top.",
    );
    answer(
        &s,
        &format!("{p1}Jane"),
        "As an AI assistant I cannot see promotions.",
    );
    answer(&s, &format!("{p2}Bob"), &rambling);
    answer(
        &s,
        &format!("{p2}Jane"),
        "Yes Jane: 20% off boots this week!",
    );
    grade(&s, "use the search bar", 1.0);
    grade(&s, "As an AI assistant", 0.0);
    grade(&s, "We have many shoes", 1.0);
    grade(&s, "20% off boots", 1.0);
    let p = fixture("eval-self-grading");
    let got = import_and_run(&p, &s);
    // defaultTest's two assertions on each test: the rubric (no "AI" talk) and
    // `Math.max(0, Math.min(1, 1 - (len - 100) / 900))`, which fails at 1000+ characters.
    assert_eq!(
        got,
        expected(&[
            ("prompt-1", "test-1", true),
            ("prompt-1", "test-2", false),
            ("prompt-2", "test-1", false),
            ("prompt-2", "test-2", true),
        ])
    );
}

#[test]
fn csv_metadata_reads_its_tests_csv_and_contains_is_case_sensitive() {
    let s = Server::start();
    answer(
        &s,
        "Tell me about machine learning",
        "Each algorithm learns from data.",
    );
    answer(
        &s,
        "Tell me about quantum physics",
        "Quantum physics studies the very small.",
    );
    answer(
        &s,
        "Tell me about climate change",
        "Rising temperature everywhere, maybe.",
    );
    grade(&s, "Each algorithm learns", 1.0);
    grade(&s, "Quantum physics studies", 1.0);
    grade(&s, "Rising temperature", 0.0);
    let p = fixture("csv-metadata");
    let got = import_and_run(&p, &s);
    // `contains: quantum` is case-sensitive: "Quantum" does not hold it.
    assert_eq!(
        got,
        expected(&[
            ("tests", "test-1", true),
            ("tests", "test-2", false),
            ("tests", "test-3", false),
        ])
    );
    // The CSV's metadata columns and the rubric rendered with the test's vars.
    let cases = p.read("evals/datasets/tests/cases.jsonl");
    let second: Value = serde_json::from_str(cases.lines().nth(1).unwrap()).unwrap();
    assert_eq!(second["metadata"]["category"], json!("science"));
    assert_eq!(
        second["metadata"]["tags"],
        json!(["physics", "advanced,theory", "quantum"])
    );
    assert_eq!(
        second["metadata"]["llm_rubric"],
        json!("Does this describe quantum physics accurately")
    );
    assert_eq!(second["expect"], json!({"contains": ["quantum"]}));
    let config = p.read("evals/.llm-evals.config.yml");
    assert!(
        config.contains("- { model: \"gpt-4.1\", temperature: 0.7 }"),
        "{config}"
    );
}

#[test]
fn what_cannot_be_translated_is_listed_with_file_and_line() {
    let p = Project::new()
        .file(
            "pf/promptfooconfig.yaml",
            "prompts:\n  - 'Say {{word}}'\nproviders:\n  - openai:chat:gpt-4o-mini\n  - id: openai:chat:local-model\n    label: Local\n    config:\n      apiBaseUrl: http://127.0.0.1:9/v1\n  - bedrock:anthropic.claude-v2\n  - 'exec: python run.py'\ntests:\n  - vars: { word: hi }\n    assert:\n      - type: contains\n        value: hi\n      - type: levenshtein\n        value: hi\n        threshold: 2\n      - type: cost\n        threshold: 0.01\n  - vars: file://more.yaml\n    threshold: 0.5\n    assert:\n      - type: not-icontains\n        value: bye\nsharing: false\n",
        )
        .file("pf/more.yaml", "word: hello\n");
    let done = p
        .evals(&[
            "import",
            "promptfoo",
            "pf/promptfooconfig.yaml",
            "-o",
            "pf/evals",
        ])
        .ok();
    let listed: Vec<&str> = done
        .stderr
        .lines()
        .filter(|l| l.contains("not translated: "))
        .map(|l| l.split("not translated: ").nth(1).unwrap())
        .collect();
    assert_eq!(
        listed,
        [
            "pf/promptfooconfig.yaml:9: provider `bedrock:anthropic.claude-v2`: no provider of that kind in evals (openai, anthropic, google/vertex, OpenAI-compatible ones and exec:/python: scripts translate)",
            "pf/promptfooconfig.yaml:10: provider `exec: python run.py`: a script provider beside model providers: a suite has one adapter; import the script from a config of its own (it becomes an exec adapter)",
            "pf/promptfooconfig.yaml:16: assert type `levenshtein`: no equivalent assertion in evals",
            "pf/promptfooconfig.yaml:19: assert type `cost` (threshold 0.01): evals has no per-case limit on cost or latency: gate them with --max-cost-increase / --max-latency-increase, or weigh them in weighted_score",
            "pf/promptfooconfig.yaml:22: test threshold 0.5: evals passes a case when every assertion passes; a weighted pass mark over assertions has no equivalent",
            "pf/promptfooconfig.yaml:24: assert type `not-icontains`: no equivalent assertion in evals",
            "pf/promptfooconfig.yaml:26: top-level key `sharing`: no equivalent in an evals suite",
        ]
    );
    done.stdout_has("7 parts not translated");
    // The same list in the suite's IMPORTED.md; the OpenAI-compatible provider is a section.
    let notes = p.read("pf/evals/IMPORTED.md");
    assert!(
        notes.contains("- `pf/promptfooconfig.yaml:16`: assert type `levenshtein`"),
        "{notes}"
    );
    let config = p.read("pf/evals/.llm-evals.config.yml");
    assert!(
        config.contains("local:\n  base_url: \"http://127.0.0.1:9/v1\"\n  api_key_env: OPENAI_API_KEY\n  models:\n    - \"local-model\"\n"),
        "{config}"
    );
    assert!(
        config.contains("openai:\n  models:\n    - \"gpt-4o-mini\"\n"),
        "{config}"
    );
    let cases = p.read("pf/evals/datasets/tests/cases.jsonl");
    assert!(cases.contains(r#""input":{"word":"hello"}"#), "{cases}");
    p.evals(&["verify"]).cwd(p.path().join("pf")).ok();
}

#[test]
fn bad_input_exits_2_naming_the_file_and_line_and_writes_nothing() {
    let p = Project::new()
        .file(
            "bad/promptfooconfig.yaml",
            "prompts:\n  - 'x'\ntests: [\n  - vars: {a: 1}\n",
        )
        .file(
            "csv/promptfooconfig.yaml",
            "prompts: ['{{a}}']\nproviders: [openai:gpt-4o]\ntests: file://tests.csv\n",
        )
        .file("csv/tests.csv", "a,__expected\n\"unclosed,contains:x\n");
    p.evals(&["import", "promptfoo", "missing.yaml"])
        .code(2)
        .stderr_has("missing.yaml");
    let bad = p
        .evals(&["import", "promptfoo", "bad/promptfooconfig.yaml"])
        .code(2);
    bad.stderr_has("bad/promptfooconfig.yaml:3:8: not valid YAML: this `[` is never closed");
    p.evals(&["import", "promptfoo", "csv/promptfooconfig.yaml"])
        .code(2)
        .stderr_has("csv/tests.csv:2: not valid CSV: a quoted cell is never closed");
    p.evals(&["import", "promptfoo", "csv/promptfooconfig.yaml", "-o", "x"])
        .code(2);
    assert!(!p.path().join("evals").exists());
    assert!(!p.path().join("x").exists());
    // A missing referenced prompt file names it.
    p.write(
        "ref/promptfooconfig.yaml",
        "prompts:\n  - file://nope.txt\n",
    );
    p.evals(&["import", "promptfoo", "ref/promptfooconfig.yaml"])
        .code(2)
        .stderr_has("ref/nope.txt");
}

#[test]
fn an_existing_suite_is_refused_without_force_and_replaced_whole_with_it() {
    let p = fixture("csv-metadata");
    p.write("evals/.llm-evals.config.yml", "suite: mine\n");
    p.write("evals/keep.txt", "mine");
    p.evals(&["import", "promptfoo"])
        .code(2)
        .stderr_has("evals: already holds a suite")
        .stderr_has("--force");
    assert_eq!(p.read("evals/.llm-evals.config.yml"), "suite: mine\n");
    p.evals(&["import", "promptfoo", "--force"]).ok();
    assert!(
        p.read("evals/.llm-evals.config.yml")
            .contains("evals import promptfoo")
    );
    assert!(!p.path().join("evals/keep.txt").exists());
    let leftovers: Vec<_> = std::fs::read_dir(p.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".evals-import"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn exec_and_python_providers_run_as_an_exec_adapter() {
    let tests = "tests:\n  - description: said\n    vars: { word: ahoy }\n    assert:\n      - type: contains\n        value: 'said: ahoy'\n  - description: shouted\n    vars: { word: arr }\n    assert:\n      - type: contains\n        value: ARR\n";
    let p = Project::new()
        .file(
            "pf/exec/promptfooconfig.yaml",
            &format!("prompts:\n  - 'Say {{{{ word }}}}'\nproviders:\n  - 'exec: python3 echo.py'\n{tests}"),
        )
        .file(
            "pf/exec/echo.py",
            "import json, sys\nprompt, options, context = sys.argv[1:4]\nprint('you said: ' + json.loads(context)['vars']['word'] + ' (' + prompt + ')')\n",
        )
        .file(
            "pf/py/promptfooconfig.yaml",
            &format!("prompts:\n  - 'Say {{{{word}}}}'\nproviders:\n  - python:shout.py\n{tests}"),
        )
        .file(
            "pf/py/shout.py",
            "def call_api(prompt, options, context):\n    return {'output': prompt.upper()}\n",
        );
    let run = |dir: &str| -> Vec<(String, bool)> {
        let cwd = p.path().join("pf").join(dir);
        p.evals(&["import", "promptfoo"]).cwd(&cwd).ok();
        p.evals(&["verify"]).cwd(&cwd).ok();
        p.evals(&[
            "run",
            "--cassettes",
            "live",
            "--no-autosave",
            "--format",
            "json",
            "-o",
            "run.json",
        ])
        .cwd(&cwd)
        .output();
        let run: Value =
            serde_json::from_str(&std::fs::read_to_string(cwd.join("run.json")).unwrap()).unwrap();
        run["experiments"][0]["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                assert!(c["error"].is_null(), "{c}");
                (
                    c["case"].as_str().unwrap().to_string(),
                    c["passed"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    // The exec command gets the prompt and the context (with the vars): "you said: ahoy
    // (Say ahoy)" holds "said: ahoy", not "ARR".
    assert_eq!(
        run("exec"),
        [("said".to_string(), true), ("shouted".to_string(), false)]
    );
    // The Python function upper-cases the prompt: "SAY ARR" holds "ARR", not "said: ahoy".
    assert_eq!(
        run("py"),
        [("said".to_string(), false), ("shouted".to_string(), true)]
    );
    let config = p.read("pf/py/evals/.llm-evals.config.yml");
    assert!(
        config.contains("kind: exec\n  command: [python3, evals/promptfoo_provider.py]"),
        "{config}"
    );
}

#[test]
fn a_yaml_tests_file_is_read_and_its_untranslated_parts_name_it() {
    let p = Project::new()
        .file(
            "promptfooconfig.yaml",
            "prompts: ['Q: {{q}}']\nproviders: [anthropic:messages:claude-sonnet-4]\ndefaultTest:\n  vars: { tone: calm }\n  assert:\n    - type: not-contains\n      value: sorry\ntests: file://cases/tests.yaml\n",
        )
        .file(
            "cases/tests.yaml",
            "- description: capital\n  vars: { q: capital of France? }\n  assert:\n    - type: contains-any\n      value: [Paris, paris]\n    - type: rouge-n\n      value: Paris\n",
        );
    p.evals(&["import", "promptfoo"])
        .ok()
        .stderr_has("not translated: cases/tests.yaml:6: assert type `rouge-n`: no equivalent assertion in evals");
    let case: Value =
        serde_json::from_str(p.read("evals/datasets/tests/cases.jsonl").trim()).unwrap();
    assert_eq!(
        case,
        json!({
            "id": "capital",
            "input": {"tone": "calm", "q": "capital of France?"},
            "expect": {"not_contains": ["sorry"], "regex": ["(?:Paris|paris)"]},
            "metadata": {"description": "capital"},
        })
    );
    assert!(
        p.read("evals/.llm-evals.config.yml")
            .contains("anthropic:\n  models:\n    - \"claude-sonnet-4\"\n")
    );
    p.evals(&["verify"]).ok();
}
