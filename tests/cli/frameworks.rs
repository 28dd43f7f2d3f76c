//! The framework matrix (issue 30): a small worker per SDK and agent framework
//! (`tests/support/frameworks/`), run unmodified by an exec adapter, records through the
//! gateway against the scripted upstream of `apis.rs` (plain, streamed, structured output and
//! a tool call, where the framework has them), then replays offline with the upstream gone:
//! each replayed output is the recorded one byte for byte, and the replay leaves the
//! cassettes as they were. A failure names the framework. The framework table of
//! `docs/src/adapters.md` is this list, rendered (a test holds it equal).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::apis::{section, upstream, with_keys};
use crate::fidelity::logs;
use crate::gateway_edges::cases;
use crate::harness::{Project, files_under, panic_text};

/// A call a worker makes, named by its case's input.
#[derive(Clone, Copy, PartialEq)]
enum Call {
    Plain,
    Stream,
    Structured,
    Tool,
}

const CALLS: [Call; 4] = [Call::Plain, Call::Stream, Call::Structured, Call::Tool];

impl Call {
    /// The case's id and input.
    fn name(self) -> &'static str {
        match self {
            Call::Plain => "plain",
            Call::Stream => "stream",
            Call::Structured => "structured",
            Call::Tool => "tool",
        }
    }

    /// What the worker must answer: the scripted model echoes the question, or, after a
    /// tool call, the tool's result (`lookup` upper-cases its word).
    fn expected(self) -> &'static str {
        match self {
            Call::Tool => "TOOL",
            c => c.name(),
        }
    }
}

/// One framework of the matrix.
struct Framework {
    /// Its name in the table and in a failure.
    name: &'static str,
    /// The pinned package (`sdk::PY_PACKAGES` or `sdk::NODE_PACKAGES`) it is tested at.
    pin: &'static str,
    /// Its worker under `tests/support/frameworks/` (`.py` or `.js`).
    worker: &'static str,
    /// The provider section its contender is in (the API it speaks): `openai` (chat
    /// completions), `resp` (the Responses API), `anthropic`, `gemini`.
    provider: &'static str,
    /// What its worker does.
    calls: &'static [Call],
    /// What a worker sets so the framework calls the gateway, for the table.
    set: &'static str,
}

const ALL: &[Call] = &CALLS;

/// The matrix, in the table's order.
const FRAMEWORKS: &[Framework] = &[
    Framework {
        name: "openai (Python)",
        pin: "openai==3.57.0",
        worker: "openai_worker.py",
        provider: "openai",
        calls: ALL,
        set: "nothing: `OpenAI()` reads `OPENAI_BASE_URL`, `OPENAI_API_KEY`",
    },
    Framework {
        name: "openai (Python), Responses API",
        pin: "openai==3.57.0",
        worker: "openai_responses_worker.py",
        provider: "resp",
        calls: &[Call::Plain, Call::Stream, Call::Structured],
        set: "a section with `api: responses`; `OpenAI()` as above (tool calls: not yet scripted here)",
    },
    Framework {
        name: "anthropic",
        pin: "anthropic==2.15.0",
        worker: "anthropic_worker.py",
        provider: "anthropic",
        calls: ALL,
        set: "nothing: `Anthropic()` reads `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`",
    },
    Framework {
        name: "google-genai",
        pin: "google-genai==3.6.1",
        worker: "google_genai_worker.py",
        provider: "gemini",
        calls: ALL,
        set: "nothing: `genai.Client()` reads `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY`",
    },
    Framework {
        name: "openai-agents",
        pin: "openai-agents==0.24.0",
        worker: "openai_agents_worker.py",
        provider: "openai",
        calls: ALL,
        set: "`OpenAIChatCompletionsModel(model=..., openai_client=AsyncOpenAI())`; tracing is off by default",
    },
    Framework {
        name: "pydantic-ai",
        pin: "pydantic-ai-slim[openai]==2.68.0",
        worker: "pydantic_ai_worker.py",
        provider: "openai",
        calls: ALL,
        set: "`OpenAIChatModel(..., provider=OpenAIProvider(openai_client=AsyncOpenAI()))`; `NativeOutput(...)` for structured output",
    },
    Framework {
        name: "langchain-openai",
        pin: "langchain-openai==1.8.1",
        worker: "langchain_openai_worker.py",
        provider: "openai",
        calls: ALL,
        set: "nothing: `ChatOpenAI(model=...)` reads `OPENAI_BASE_URL`; LangSmith tracing is off by default",
    },
    Framework {
        name: "litellm",
        pin: "litellm==1.110.2",
        worker: "litellm_worker.py",
        provider: "openai",
        calls: ALL,
        set: "`model=\"openai/...\"` (reads `OPENAI_BASE_URL`, `OPENAI_API_KEY`); post the answer to `EVALS_ANSWER_URL`, as litellm prints banners on stdout",
    },
    Framework {
        name: "openai (npm)",
        pin: "openai@6.49.0",
        worker: "openai_worker.js",
        provider: "openai",
        calls: ALL,
        set: "`NODE_PATH` in `adapter.env`; `new OpenAI()` reads `OPENAI_BASE_URL`, `OPENAI_API_KEY`",
    },
    Framework {
        name: "@anthropic-ai/sdk (npm)",
        pin: "@anthropic-ai/sdk@1.10.0",
        worker: "anthropic_worker.js",
        provider: "anthropic",
        calls: ALL,
        set: "`NODE_PATH` in `adapter.env`; `new Anthropic()` reads `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`",
    },
    Framework {
        name: "Vercel AI SDK (`ai`, `@ai-sdk/openai`)",
        pin: "ai@7.0.173",
        worker: "vercel_ai_worker.js",
        provider: "openai",
        calls: ALL,
        set: "`NODE_PATH` in `adapter.env`; `openai.chat(...)` reads `OPENAI_BASE_URL`, `OPENAI_API_KEY` (`openai(...)` is the Responses API)",
    },
];

/// The workers' files, and the loops they share.
const FILES: &[(&str, &str)] = &[
    ("loop.py", include_str!("../support/frameworks/loop.py")),
    ("loop.js", include_str!("../support/frameworks/loop.js")),
    (
        "openai_worker.py",
        include_str!("../support/frameworks/openai_worker.py"),
    ),
    (
        "openai_responses_worker.py",
        include_str!("../support/frameworks/openai_responses_worker.py"),
    ),
    (
        "anthropic_worker.js",
        include_str!("../support/frameworks/anthropic_worker.js"),
    ),
    (
        "anthropic_worker.py",
        include_str!("../support/frameworks/anthropic_worker.py"),
    ),
    (
        "google_genai_worker.py",
        include_str!("../support/frameworks/google_genai_worker.py"),
    ),
    (
        "openai_agents_worker.py",
        include_str!("../support/frameworks/openai_agents_worker.py"),
    ),
    (
        "pydantic_ai_worker.py",
        include_str!("../support/frameworks/pydantic_ai_worker.py"),
    ),
    (
        "langchain_openai_worker.py",
        include_str!("../support/frameworks/langchain_openai_worker.py"),
    ),
    (
        "litellm_worker.py",
        include_str!("../support/frameworks/litellm_worker.py"),
    ),
    (
        "openai_worker.js",
        include_str!("../support/frameworks/openai_worker.js"),
    ),
    (
        "vercel_ai_worker.js",
        include_str!("../support/frameworks/vercel_ai_worker.js"),
    ),
];

/// The contender each provider section holds (`apis::section`).
fn contender(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "anthropic/claude-x",
        "gemini" => "gemini/gem-x",
        "resp" => "resp/gpt-r",
        _ => "openai/gpt-x",
    }
}

/// A suite running `f`'s worker on one case per call it makes, its contender on `upstream`.
fn suite(f: &Framework, upstream: &str) -> Project {
    let node = f.worker.ends_with(".js");
    let command = if node {
        format!(
            "[node, evals/frameworks/{}]\n  env: {{ NODE_PATH: \"{}\" }}",
            f.worker,
            crate::sdk::node_modules().display()
        )
    } else {
        format!(
            "[{}, evals/frameworks/{}]",
            crate::sdk::python().display(),
            f.worker
        )
    };
    let cases: String = f
        .calls
        .iter()
        .map(|c| {
            format!(
                "{{\"id\": \"{0}\", \"input\": \"{0}\", \"expected\": {{\"answer\": \"{1}\"}}}}\n",
                c.name(),
                c.expected()
            )
        })
        .collect();
    let mut p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: matrix\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: {command}\nscorer:\n  kind: fields\n  schema: {{ answer: string }}\n{}",
                section(f.provider, upstream)
            ),
        )
        .file("evals/datasets/d/cases.jsonl", &cases);
    let ext = if node { ".js" } else { ".py" };
    for (name, text) in FILES {
        if name.ends_with(ext) {
            p = p.file(&format!("evals/frameworks/{name}"), text);
        }
    }
    p
}

/// Every cassette file's bytes, by its path under `evals/cassettes`.
fn cassettes(p: &Project) -> BTreeMap<String, Vec<u8>> {
    let root = p.path().join("evals/cassettes");
    files_under(&root)
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(&root).unwrap().display().to_string();
            (rel, std::fs::read(&f).unwrap())
        })
        .collect()
}

/// `evals run --cassettes <mode>` in one worker (so its cases share a process, as in
/// production), passing; the cases of its JSON snapshot, by id. Recording gets the keys.
fn run(p: &Project, mode: &str) -> BTreeMap<String, Value> {
    let file = format!("{mode}.json");
    let mut cmd = p.evals(&[
        "run",
        "--cassettes",
        mode,
        "--no-autosave",
        "-p",
        "1",
        "--format",
        "json",
        "-o",
        &file,
    ]);
    if mode == "record" {
        cmd = with_keys(cmd);
    }
    let done = cmd.output();
    assert_eq!(
        done.code,
        0,
        "{mode} exited {}:\n{}\n{}",
        done.code,
        done.stderr,
        logs(p)
    );
    cases(&serde_json::from_str(&p.read(&file)).unwrap())
}

/// Records `f` against the scripted upstream, replays it offline, and compares: panics,
/// saying what differs, when anything does.
fn record_then_replay(f: &Framework) {
    let mut server = upstream();
    let p = suite(f, &server.uri());
    let recorded = run(&p, "record");
    assert_eq!(recorded.len(), f.calls.len(), "{recorded:?}");
    for (id, c) in &recorded {
        assert_eq!(
            c["error"],
            Value::Null,
            "record: case {id} errored: {c}\n{}",
            logs(&p)
        );
        assert_eq!(c["score"], 1.0, "record: case {id} answered wrong: {c}");
    }
    // Each call went to the upstream as what it is: a stream asked for, a tool's two turns.
    let seen = server.requests();
    let streamed = seen.iter().any(|r| {
        serde_json::from_slice::<Value>(&r.body).is_ok_and(|b| b["stream"] == true)
            || r.url.path().contains(":streamGenerateContent")
    });
    assert_eq!(streamed, f.calls.contains(&Call::Stream), "streamed calls");
    let files = cassettes(&p);
    let model = contender(f.provider);
    if f.calls.contains(&Call::Structured) {
        let sent = String::from_utf8_lossy(&files[&format!("{model}/default/d/structured.json")])
            .into_owned();
        assert!(
            sent.to_lowercase().contains("schema"),
            "the structured case sent no schema: {sent}"
        );
    }
    if f.calls.contains(&Call::Tool) {
        let tool =
            String::from_utf8_lossy(&files[&format!("{model}/default/d/tool.json")]).into_owned();
        let cassette: Value = serde_json::from_str(&tool).unwrap();
        assert_eq!(
            cassette["interactions"].as_array().map(Vec::len),
            Some(2),
            "the tool case's cassette holds the model's two turns: {tool}"
        );
    }
    server.stop();

    let replayed = run(&p, "replay");
    for (id, r) in &recorded {
        let c = replayed
            .get(id)
            .unwrap_or_else(|| panic!("replay: no case {id}"));
        assert_eq!(
            c["error"],
            Value::Null,
            "replay: case {id} errored (a miss?): {c}"
        );
        // Offline means offline: no library called out past the gateway.
        let warnings = c["warnings"].to_string();
        assert!(
            !warnings.contains("tried to reach"),
            "replay: case {id}: {warnings}"
        );
        for key in ["output", "raw", "score"] {
            assert_eq!(
                c[key].to_string(),
                r[key].to_string(),
                "replay: case {id}'s {key} differs from the recording"
            );
        }
    }
    let after = cassettes(&p);
    let changed: Vec<&String> = files
        .keys()
        .chain(after.keys())
        .filter(|k| files.get(*k) != after.get(*k))
        .collect();
    assert!(
        changed.is_empty(),
        "the replay changed cassettes: {changed:?}"
    );
}

#[test]
fn every_framework_records_through_the_gateway_and_replays_offline_byte_for_byte() {
    // Install (or find) the SDKs once, before the frameworks run side by side.
    crate::sdk::python();
    crate::sdk::node_modules();
    let next = Mutex::new(FRAMEWORKS.iter());
    let failed = Mutex::new(Vec::new());
    // Three at a time: each is two `evals` runs and their workers' imports.
    std::thread::scope(|s| {
        for n in 0..3 {
            let (next, failed) = (&next, &failed);
            std::thread::Builder::new()
                .name(format!("frameworks::matrix-{n}"))
                .spawn_scoped(s, move || {
                    loop {
                        let Some(f) = next.lock().unwrap().next() else {
                            break;
                        };
                        let run = std::panic::catch_unwind(|| record_then_replay(f));
                        if let Err(e) = run {
                            failed
                                .lock()
                                .unwrap()
                                .push(format!("{}: {}", f.name, panic_text(e)));
                        }
                    }
                })
                .unwrap();
        }
    });
    let failed = failed.into_inner().unwrap();
    assert!(
        failed.is_empty(),
        "{} of {} frameworks failed:\n\n{}",
        failed.len(),
        FRAMEWORKS.len(),
        failed.join("\n\n")
    );
}

/// The framework table, rendered from [`FRAMEWORKS`].
fn table() -> String {
    let mut out = String::from(
        "| framework | tested at | plain | streaming | structured output | tool call | what to set |\n|---|---|---|---|---|---|---|\n",
    );
    for f in FRAMEWORKS {
        let cells: Vec<&str> = CALLS
            .iter()
            .map(|c| if f.calls.contains(c) { "yes" } else { "—" })
            .collect();
        out.push_str(&format!(
            "| {} | `{}` | {} | {} |\n",
            f.name,
            f.pin,
            cells.join(" | "),
            f.set
        ));
    }
    out
}

#[test]
fn the_framework_table_in_adapters_md_is_the_matrix() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/adapters.md"))
            .unwrap();
    let want = table();
    assert!(
        page.contains(&want),
        "docs/src/adapters.md's framework table is not tests/cli/frameworks.rs's matrix; put this there:\n\n{want}"
    );
    // Every pin is one the SDK install pins, every worker is a file of the matrix.
    for f in FRAMEWORKS {
        assert!(
            crate::sdk::PY_PACKAGES.contains(&f.pin) || crate::sdk::NODE_PACKAGES.contains(&f.pin),
            "{}: {} is not pinned in tests/cli/sdk.rs",
            f.name,
            f.pin
        );
        assert!(FILES.iter().any(|(n, _)| *n == f.worker), "{}", f.worker);
    }
}
