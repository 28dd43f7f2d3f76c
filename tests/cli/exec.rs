//! The exec adapter: a real Python program as the adapter, calling the model through the
//! loopback gateway with an unmodified OpenAI-style HTTP call; its calls recorded and
//! replayed like any other; crashes are errors of their case.

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::harness::{Bounded, Project};
use crate::mock::Server;

/// The adapter: reads a case per line, asks the model through OPENAI_BASE_URL with
/// OPENAI_API_KEY, parses the reply as JSON, prints the protocol line.
const ADAPTER: &str = r#"
import json, os, sys, urllib.request, urllib.error

def ask(question, token):
    body = json.dumps({"model": "whatever-the-adapter-says", "temperature": 1.5,
                       "messages": [{"role": "user", "content": question}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                 {"content-type": "application/json", "authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")

for line in sys.stdin:
    msg = json.loads(line)
    q = msg["case"]["input"]
    if q == "crash":
        print("adapter: giving up", file=sys.stderr)
        sys.exit(3)
    token = "forged" if q == "forge" else os.environ["OPENAI_API_KEY"]
    status, resp = ask(q, token)
    out = {"id": msg["id"], "usage": None}
    if status != 200 or "choices" not in resp:
        out["output"] = {"answer": "status %d" % status}
    else:
        raw = resp["choices"][0]["message"]["content"]
        out["raw"] = raw
        try:
            out["output"] = json.loads(raw)
            out["output"]["saw_real_key"] = "LOCAL_KEY" in os.environ
        except ValueError:
            out["error"] = "not JSON"
    print(json.dumps(out), flush=True)
"#;

struct Answer;

impl Respond for Answer {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).unwrap();
        let q = body["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if q == "reject" {
            return ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": "bad key"}}));
        }
        let content = if q == "prose" {
            "Sure! It is blue.".to_string()
        } else {
            json!({"answer": q}).to_string()
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "cost": 0.0001},
        }))
    }
}

fn suite(base_url: &str, cases: &[&str]) -> Project {
    let lines: String = cases
        .iter()
        .map(|q| {
            format!(
                "{{\"id\": \"{q}\", \"input\": \"{q}\", \"expected\": {{\"answer\": \"{q}\"}}}}\n"
            )
        })
        .collect();
    Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            &format!(
                "suite: ex\nrequest_types: [prompt]\nadapter:\n  kind: exec\n  command: [python3, evals/adapter.py]\nscorer:\n  kind: fields\n  schema: {{ answer: string }}\nlocal:\n  base_url: {base_url}/v1\n  api_key_env: LOCAL_KEY\n  models:\n    - model: m1\n      temperature: 0.3\n"
            ),
        )
        .file("evals/adapter.py", ADAPTER)
        .file("evals/datasets/d/cases.jsonl", &lines)
}

#[test]
fn an_exec_adapter_calls_through_the_gateway_recorded_then_replayed() {
    let mut server = Server::start();
    server.answer("/v1/chat/completions", Answer);
    let p = suite(&server.uri(), &["red", "green", "prose", "forge", "crash"]);
    let d = p
        .evals(&[
            "record",
            "--no-autosave",
            "-p",
            "2",
            "--format",
            "json",
            "-o",
            "rec.json",
        ])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .code(1);
    d.stderr_has("1 case errored");
    let requests = server.requests();
    // forge never reaches the provider (unknown token), crash never calls.
    assert_eq!(requests.len(), 3, "red, green and prose reach the provider");
    for r in &requests {
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        // The gateway puts the contender's model and settings on the adapter's request.
        assert_eq!(body["model"], "m1");
        assert_eq!(body["temperature"], 0.3);
        assert_eq!(
            r.headers.get("authorization").unwrap().to_str().unwrap(),
            "Bearer local-secret-key-123456",
            "the real key is added by the gateway"
        );
    }
    let rec: Value = serde_json::from_str(&p.read("rec.json")).unwrap();
    let cases: Vec<&Value> = rec["experiments"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let by = |id: &str| *cases.iter().find(|c| c["case"] == id).unwrap();
    assert_eq!(by("red")["score"], 1.0);
    assert_eq!(
        by("red")["output"]["saw_real_key"],
        false,
        "workers never get the real key"
    );
    assert_eq!(
        by("red")["usage"]["input_tokens"],
        7,
        "usage as the gateway measured it"
    );
    assert_eq!(
        by("prose")["score"],
        0.0,
        "an unusable reply is the model's failure: 0"
    );
    assert_eq!(by("prose")["error"], Value::Null);
    assert_eq!(
        by("forge")["output"]["answer"],
        "status 401",
        "an unknown token is refused"
    );
    let crash = by("crash")["error"].as_str().unwrap();
    assert!(
        crash.starts_with("adapter crashed: the adapter closed its output"),
        "{crash}"
    );
    assert!(
        p.read(
            &std::fs::read_dir(p.path().join("log"))
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path()
                .strip_prefix(p.path())
                .unwrap()
                .to_string_lossy()
        )
        .contains("adapter: giving up"),
        "the adapter's stderr goes to the log"
    );

    // The server is gone: the adapter's calls replay from the cassettes, figure for figure.
    server.stop();
    let rep = p
        .evals(&[
            "compare",
            "--cassettes",
            "replay",
            "--no-autosave",
            "--format",
            "json",
            "-o",
            "rep.json",
        ])
        .code(1);
    rep.stderr_has("1 case errored");
    let rep: Value = serde_json::from_str(&p.read("rep.json")).unwrap();
    assert_eq!(
        rep["experiments"][0]["means"],
        rec["experiments"][0]["means"]
    );
    assert_eq!(
        rep["experiments"][0]["cost_usd"],
        rec["experiments"][0]["cost_usd"]
    );
}

#[test]
fn an_exec_adapter_runs_offline_with_the_fake_model() {
    let p = suite("http://127.0.0.1:9", &[]).file(
        "evals/datasets/d/cases.jsonl",
        "{\"id\": \"x\", \"input\": \"answer: {\\\"answer\\\": \\\"x\\\"}\", \"expected\": {\"answer\": \"x\"}}\n",
    );
    let config = p.read("evals/.llm-evals.config.yml");
    p.write(
        "evals/.llm-evals.config.yml",
        &format!("{config}fake: {{ models: [echo] }}\n"),
    );
    let d = p
        .evals(&["compare", "-m", "fake/echo", "--no-autosave"])
        .ok();
    assert_eq!(d.cell("fake/echo", "field_accuracy"), "100.0%");
}

#[test]
fn a_missing_adapter_program_is_a_config_error_before_anything_runs() {
    let p = suite("http://127.0.0.1:9", &["red"]);
    let config = p.read("evals/.llm-evals.config.yml").replace(
        "[python3, evals/adapter.py]",
        "[no-such-program-xyz, adapter.py]",
    );
    p.write("evals/.llm-evals.config.yml", &config);
    p.evals(&["compare", "--no-autosave"]).code(2).stderr_has(
        "evals/.llm-evals.config.yml: adapter.command: 'no-such-program-xyz' is not a program here",
    );
}

#[test]
fn a_call_the_provider_rejects_errors_the_case_whatever_the_adapter_makes_of_it() {
    let server = Server::start();
    server.answer("/v1/chat/completions", Answer);
    let p = suite(&server.uri(), &["reject", "red"]);
    let d = p
        .evals(&["run", "--cassettes", "live", "--no-autosave"])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .code(1);
    // The adapter turned the 401 into an answer ("status 401"); it is still an error.
    d.stdout_has("reject error: local/m1: HTTP 401: bad key");
    assert_eq!(d.cell("local/m1", "errors"), "1");
    assert_eq!(d.cell("local/m1", "field_accuracy"), "100.0%");
}

#[test]
fn ctrl_c_stops_workers_started_through_a_wrapper() {
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nadapter: { kind: exec, command: [sh, evals/run.sh] }\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        // The wrapper does not `exec`: the real worker is its child.
        .file("evals/run.sh", "python3 evals/slow.py\n")
        .file(
            "evals/slow.py",
            "import os, sys, time\nopen('evals/worker.pid', 'w').write(str(os.getpid()))\nfor line in sys.stdin:\n    time.sleep(60)\n",
        )
        .file("evals/datasets/d/cases.jsonl", "{\"id\": \"a\", \"input\": \"x\", \"expect\": {\"min_chars\": 1}}\n");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_evals"))
        .args(["run", "--no-autosave"])
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn_bounded()
        .unwrap();
    let pid_file = p.path().join("evals/worker.pid");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !pid_file.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let worker = p.read("evals/worker.pid");
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The worker (a grandchild of evals) is gone too.
    let mut alive = true;
    for _ in 0..50 {
        // Gone, or a zombie waiting for init to reap it (it runs no more).
        alive = std::fs::read_to_string(format!("/proc/{}/stat", worker.trim()))
            .map(|stat| !stat.contains(") Z "))
            .unwrap_or(false);
        if !alive {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!alive, "worker {worker} outlived evals");
}

#[test]
fn cassette_status_says_it_cannot_check_an_exec_adapters_requests() {
    let server = Server::start();
    server.answer("/v1/chat/completions", Answer);
    let p = suite(&server.uri(), &["red"]);
    p.evals(&["record", "--no-autosave"])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .ok();
    let d = p.evals(&["cassettes", "status"]).ok();
    d.stdout_has("0 recorded, 0 missing, 0 stale, 0 unused, 1 unchecked");
}

#[test]
fn on_a_terminal_stray_stderr_goes_to_the_warnings_log_not_across_the_bars() {
    // `script` (util-linux) gives evals a terminal for stderr, so progress bars draw.
    assert!(
        std::process::Command::new("script")
            .arg("--version")
            .output_bounded()
            .is_ok(),
        "this test needs `script` from util-linux (Debian's bsdutils)"
    );
    let cases: String = (0..6)
        .map(|i| {
            format!(
                "{{\"id\": \"c{i}\", \"input\": \"x\", \"expect\": {{\"contains\": \"ok\"}}}}\n"
            )
        })
        .collect();
    let p = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nadapter: { kind: exec, command: [python3, evals/a.py] }\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        .file(
            "evals/a.py",
            "import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    print('noise from the adapter', file=sys.stderr, flush=True)\n    print('token planted-terminal-token-0123456789', file=sys.stderr, flush=True)\n    print(json.dumps({'id': m['id'], 'output': 'ok'}), flush=True)\n",
        )
        .file("evals/datasets/d/cases.jsonl", &cases);
    let evals = env!("CARGO_BIN_EXE_evals");
    let out = std::process::Command::new("script")
        .args([
            "-qec",
            &format!("{evals} run --no-autosave > out.txt"),
            "typescript",
        ])
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .env("GITHUB_TOKEN", "planted-terminal-token-0123456789")
        .env_remove("CI")
        .stdin(std::process::Stdio::null())
        .output_bounded()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let terminal = p.read("typescript");
    assert!(!terminal.contains("noise from the adapter"), "{terminal}");
    assert!(
        terminal.contains("messages written to stderr during the run"),
        "{terminal}"
    );
    let logs: Vec<_> = std::fs::read_dir(p.path().join("log"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(logs.len(), 1);
    let name = logs[0].file_name().to_string_lossy().into_owned();
    assert!(
        name.starts_with("run.warnings.") && name.ends_with(".log"),
        "{name}"
    );
    let log = p.read(&format!("log/{name}"));
    assert_eq!(log.matches("noise from the adapter").count(), 6);
    // Workers' stderr is scrubbed on its way into the log, like everything evals writes.
    assert!(!log.contains("planted-terminal-token"), "{log}");
    assert_eq!(log.matches("token [REDACTED]\n").count(), 6, "{log}");
    assert!(
        p.read("out.txt").contains("c5"),
        "the report still went to stdout"
    );
}

#[test]
fn a_200_error_body_through_the_gateway_errors_the_case_and_is_not_recorded() {
    let mut server = Server::start();
    server.answer("/v1/chat/completions", Answer);
    let p = suite(&server.uri(), &["red"]);
    p.evals(&["record", "--no-autosave"])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .ok();
    let recorded_uri = server.uri();
    server.stop();
    let files = crate::harness::files_under(&p.path().join("evals/cassettes"));
    assert_eq!(files.len(), 1, "{files:?}");
    let good = std::fs::read_to_string(&files[0]).unwrap();

    let mut down = Server::start();
    down.answer(
        "/v1/chat/completions",
        ResponseTemplate::new(200).set_body_json(json!({"error": {
            "message": "Insufficient credits", "code": 402}})),
    );
    let d = p
        .evals(&["record", "--no-autosave"])
        .env("LOCAL_KEY", "local-secret-key-123456")
        .env("EVALS_REDIRECT", &format!("{recorded_uri}={}", down.uri()))
        .output();
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), good);
    assert_eq!(d.code, 1, "{}", d.stderr);
    // The adapter made an answer of it ("status 200"); the case errors all the same.
    d.stderr_has(
        "local/m1 [temp 0.3] · d · red: local/m1: provider error (402): Insufficient credits",
    );
    assert_eq!(down.hits(), 1);
    down.stop();
    p.evals(&["run", "--cassettes", "replay", "--no-autosave"])
        .ok();
}

/// A suite of `cases` (ids; each input is its id) whose exec adapter is `script`, run as
/// `python3 evals/w.py` with `adapter_extra` added to the adapter's mapping.
fn worker_suite(script: &str, adapter_extra: &str, cases: &[&str]) -> Project {
    crate::protocol::suite(
        "[python3, evals/w.py]",
        "evals/w.py",
        script,
        &format!("{adapter_extra}fake: {{ models: [echo] }}\n"),
        cases,
    )
}

/// The one warnings log of a run that wrote to it.
pub(crate) fn warnings_log(p: &Project) -> (String, String) {
    let logs: Vec<_> = std::fs::read_dir(p.path().join("log"))
        .expect("a log folder")
        .flatten()
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let name = format!("log/{}", logs[0].file_name().to_string_lossy());
    let text = p.read(&name);
    (name, text)
}

#[test]
fn a_worker_gets_an_allow_listed_environment_not_evals_secrets() {
    let p = worker_suite(
        "import json, os, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    names = sorted(os.environ)\n    print(json.dumps({'id': m['id'], 'output': ' '.join(names) + ' | MY_SETTING=' + os.environ.get('MY_SETTING', ''), 'raw': os.environ.get('ANTHROPIC_API_KEY', '')}), flush=True)\n",
        "  pass_env: [MY_SETTING, NOT_SET_ANYWHERE]\n  env: { FROM_CONFIG: \"1\" }\n",
        &["a"],
    );
    let home = p.path().to_string_lossy().into_owned();
    p.evals(&["run", "--no-autosave", "--format", "json", "-o", "out.json"])
        .env("GITHUB_TOKEN", "ghp_notarealtoken0123456789abcdefghijklmn")
        .env("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key-0123456789")
        .env("SOME_SERVICE_TOKEN", "service-token-0123456789")
        .env("PLAIN_BUT_UNLISTED", "x")
        .env("MY_SETTING", "on")
        .env("HOME", &home)
        .ok();
    let out: Value = serde_json::from_str(&p.read("out.json")).unwrap();
    let seen = out["experiments"][0]["cases"][0]["output"]
        .as_str()
        .unwrap()
        .to_string();
    let (names, my_setting) = seen.split_once(" | ").unwrap();
    let names: Vec<&str> = names.split(' ').collect();
    // ANTHROPIC_API_KEY is the worker's gateway token (for Anthropic's SDK), never evals' key.
    let anthropic = out["experiments"][0]["cases"][0]["raw"].as_str().unwrap();
    assert!(anthropic.starts_with("evals-"), "{anthropic}");
    for absent in [
        "GITHUB_TOKEN",
        "SOME_SERVICE_TOKEN",
        "PLAIN_BUT_UNLISTED",
        "NOT_SET_ANYWHERE",
    ] {
        assert!(
            !names.contains(&absent),
            "the worker got {absent}: {names:?}"
        );
    }
    for present in [
        "PATH",
        "HOME",
        "MY_SETTING",
        "FROM_CONFIG",
        "OPENAI_BASE_URL",
        "EVALS_BASE_URL",
        "OPENAI_API_KEY",
    ] {
        assert!(
            names.contains(&present),
            "the worker lacks {present}: {names:?}"
        );
    }
    assert_eq!(my_setting, "MY_SETTING=on", "pass_env copies the value");
}

#[test]
fn a_secret_a_worker_prints_on_stderr_is_redacted_in_the_warnings_log() {
    let planted = "planted-github-token-0123456789abcdef";
    let p = worker_suite(
        &format!(
            "import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    print('my token is {planted}', file=sys.stderr, flush=True)\n    for i in range(5000):\n        print('line %d of what a chatty worker leaves in the pipe' % i, file=sys.stderr)\n    sys.stderr.write('last words, no newline')\n    sys.stderr.flush()\n    print(json.dumps({{'id': m['id'], 'output': 'ok'}}), flush=True)\n"
        ),
        "",
        &["a"],
    );
    p.evals(&["run", "--no-autosave"])
        .env("GITHUB_TOKEN", planted)
        .ok()
        .stderr_has("messages written to stderr during the run");
    let (name, log) = warnings_log(&p);
    assert!(!log.contains(planted), "{name} holds the secret:\n{log}");
    assert!(log.contains("my token is [REDACTED]\n"), "{name}:\n{log}");
    // Every line is written before the run reports, the last one too (it had no newline).
    assert_eq!(
        log.matches(" of what a chatty worker leaves in the pipe\n")
            .count(),
        5000
    );
    assert!(log.ends_with(
        "line 4999 of what a chatty worker leaves in the pipe\nlast words, no newline\n"
    ));
}

#[test]
fn a_crashed_worker_says_where_its_stderr_went() {
    let p = worker_suite(
        "import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    if m['case']['id'] == 'loud':\n        print('something broke', file=sys.stderr)\n    sys.exit(3)\n",
        "",
        &["loud", "quiet"],
    );
    p.evals(&[
        "run",
        "--no-autosave",
        "-p",
        "1",
        "--format",
        "json",
        "-o",
        "out.json",
    ])
    .code(1);
    let out: Value = serde_json::from_str(&p.read("out.json")).unwrap();
    let cases = out["experiments"][0]["cases"].as_array().unwrap();
    let error = |id: &str| {
        cases.iter().find(|c| c["case"] == id).unwrap()["error"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (name, log) = warnings_log(&p);
    assert_eq!(log, "something broke\n");
    let loud = error("loud");
    assert!(
        loud.starts_with("adapter crashed: the adapter closed its output")
            && loud.ends_with(&format!("; its stderr (1 line) went to {name}")),
        "{loud}"
    );
    let quiet = error("quiet");
    assert!(
        quiet.ends_with("; it wrote nothing on stderr") && !quiet.contains("log"),
        "never a log that does not exist: {quiet}"
    );
    for c in cases {
        assert_eq!(
            c["error_kind"], "adapter",
            "a crash is the adapter's error: {c}"
        );
    }
}

/// Whether `pid` still exists (running, or a zombie nobody reaped).
fn exists(pid: &str) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn descendants_that_leave_the_workers_process_group_do_not_outlive_the_run() {
    // Case `setsid`: a child that calls setsid (its own session and group) and sleeps.
    // Case `daemon`: a classic double fork: the middle process exits at once, so the
    // sleeper is nobody's child but evals' (a subreaper), and holds the worker's stderr.
    // Case `bare`: the same, then exec'd with an empty environment (no trace of the
    // worker's token left): ended when the run's workers are all gone.
    let p = worker_suite(
        r#"import json, os, subprocess, sys, time
def wait_for(path):
    for _ in range(500):
        if os.path.exists(path):
            return
        time.sleep(0.02)
for line in sys.stdin:
    m = json.loads(line)
    case = m['case']['id']
    pidfile = 'evals/%s.pid' % case
    sleeper = "import os, time; open('%s.tmp', 'w').write(str(os.getpid())); os.rename('%s.tmp', '%s'); time.sleep(60)" % (pidfile, pidfile, pidfile)
    if case == 'setsid':
        subprocess.Popen([sys.executable, '-c', 'import os; os.setsid(); ' + sleeper])
    else:
        child = os.fork()
        if child == 0:
            os.setsid()
            if os.fork() == 0:
                env = {} if case == 'bare' else dict(os.environ)
                os.execve(sys.executable, [sys.executable, '-c', sleeper], env)
            os._exit(0)
        os.waitpid(child, 0)
    wait_for(pidfile)
    print(json.dumps({'id': m['id'], 'output': 'ok'}), flush=True)
"#,
        "",
        &["setsid", "daemon", "bare"],
    );
    let done = p.evals(&["run", "--no-autosave", "-p", "1"]).output();
    let pids: Vec<String> = ["setsid", "daemon", "bare"]
        .iter()
        .filter_map(|c| std::fs::read_to_string(p.path().join(format!("evals/{c}.pid"))).ok())
        .collect();
    let alive: Vec<&String> = pids.iter().filter(|pid| exists(pid)).collect();
    for pid in &alive {
        // Don't leave them sleeping on the machine when the test fails.
        let _ = std::process::Command::new("kill")
            .args(["-9", pid])
            .status();
    }
    assert_eq!(done.code, 0, "{}", done.stderr);
    assert_eq!(pids.len(), 3, "every sleeper started");
    assert!(
        alive.is_empty(),
        "{alive:?} outlived evals (or were left as zombies)"
    );
}

#[test]
fn a_crashed_workers_setsid_child_is_ended_and_reaped_while_the_run_goes_on() {
    // Worker of case `a` starts a child that calls setsid, then hangs; the test kills that
    // worker (a crash). Worker of case `b` holds the run open until the test releases it.
    let p = worker_suite(
        r#"import json, os, subprocess, sys, time
for line in sys.stdin:
    m = json.loads(line)
    if m['case']['id'] == 'a':
        subprocess.Popen([sys.executable, '-c', "import os, time; os.setsid(); open('evals/child.tmp', 'w').write(str(os.getpid())); os.rename('evals/child.tmp', 'evals/child.pid'); time.sleep(60)"])
        open('evals/worker.tmp', 'w').write(str(os.getpid()))
        os.rename('evals/worker.tmp', 'evals/worker.pid')
        time.sleep(60)
    while not os.path.exists('evals/release'):
        time.sleep(0.02)
    print(json.dumps({'id': m['id'], 'output': 'ok'}), flush=True)
"#,
        "",
        &["a", "b"],
    );
    let running = p.evals(&["run", "--no-autosave", "-p", "2"]).spawn();
    let read_pid = |name: &str| {
        let path = p.path().join(name);
        for _ in 0..1000 {
            if let Ok(pid) = std::fs::read_to_string(&path) {
                return pid;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("{name} never appeared");
    };
    let child = read_pid("evals/child.pid");
    let worker = read_pid("evals/worker.pid");
    std::process::Command::new("kill")
        .args(["-9", &worker])
        .status()
        .unwrap();
    // evals sees the crash, ends the child (now its own, adopted) and reaps it: no zombie.
    let mut state = String::new();
    for _ in 0..250 {
        state = std::fs::read_to_string(format!("/proc/{child}/stat"))
            .map(|s| {
                s.rsplit_once(") ")
                    .map(|(_, r)| r[..1].to_string())
                    .unwrap_or_default()
            })
            .unwrap_or_else(|_| "gone".to_string());
        if state == "gone" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    p.write("evals/release", "");
    let done = running.wait();
    if state != "gone" {
        let _ = std::process::Command::new("kill")
            .args(["-9", &child])
            .status();
    }
    assert_eq!(
        state, "gone",
        "the crashed worker's child is still there (state {state})"
    );
    assert_eq!(done.code, 1, "{}", done.stderr);
}

#[test]
fn a_worker_cannot_read_evals_environment_or_memory_through_proc() {
    let p = worker_suite(
        r#"import json, os, sys
def attempt(what):
    try:
        with open('/proc/%d/%s' % (os.getppid(), what), 'rb') as f:
            f.read(1)
        return 'read'
    except Exception as e:
        return type(e).__name__
for line in sys.stdin:
    m = json.loads(line)
    out = 'environ: %s; mem: %s' % (attempt('environ'), attempt('mem'))
    print(json.dumps({'id': m['id'], 'output': out}), flush=True)
"#,
        "",
        &["a"],
    );
    // The worker runs as the same user as evals; root reads every process whatever it
    // says, so as root evals is run as `nobody`.
    let evals = env!("CARGO_BIN_EXE_evals");
    let uid = std::process::Command::new("id")
        .arg("-u")
        .output_bounded()
        .unwrap();
    let mut cmd = if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        use std::os::unix::fs::PermissionsExt;
        for e in walkdir::WalkDir::new(p.path()) {
            let e = e.unwrap();
            std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", evals]);
        c
    } else {
        std::process::Command::new(evals)
    };
    let out = cmd
        .args(["run", "--no-autosave", "--format", "json", "-o", "out.json"])
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .env("SOME_SERVICE_TOKEN", "service-token-0123456789")
        .output_bounded()
        .expect("run evals (as root this needs setpriv, from util-linux)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&p.read("out.json")).unwrap();
    assert_eq!(
        report["experiments"][0]["cases"][0]["output"],
        "environ: PermissionError; mem: PermissionError",
        "evals is not dumpable: its environment and memory are closed to its workers"
    );
}

#[test]
fn pass_env_names_variables_and_only_on_an_exec_adapter() {
    let script = "import sys\n";
    let bad_name = worker_suite(
        script,
        "  pass_env:\n    - MY_SETTING\n    - MY-SETTING\n",
        &["a"],
    );
    bad_name
        .evals(&["run", "--no-autosave"])
        .code(2)
        .stderr_has("error: evals/.llm-evals.config.yml:7:7: adapter.pass_env: 'MY-SETTING' is not a variable name (letters, digits and _, not starting with a digit); list each variable by its full name");
    let key = worker_suite(script, "  pass_env: [OPENROUTER_API_KEY]\n", &["a"]);
    key.evals(&["run", "--no-autosave"])
        .code(2)
        .stderr_has("evals/.llm-evals.config.yml:5:14: adapter.pass_env: 'OPENROUTER_API_KEY' holds the suite's API key, which workers never get");
    let prompt = Project::new()
        .file(
            "evals/.llm-evals.config.yml",
            "request_types: [prompt]\nadapter:\n  kind: prompt\n  user: '{{ input }}'\n  pass_env: [MY_SETTING]\nscorer: { kind: assertions }\nfake: { models: [echo] }\n",
        )
        .file("evals/datasets/d/cases.jsonl", "{\"id\": \"a\", \"input\": \"x\"}\n");
    prompt.evals(&["run", "--no-autosave"]).code(2).stderr_has(
        "error: evals/.llm-evals.config.yml:5:3: unknown key 'pass_env' in adapter ('pass_env' is a key of `kind: exec` adapters; remove it, or change the kind)",
    );
}

#[test]
fn a_worker_that_never_answers_is_stopped_and_its_case_errors_as_a_timeout() {
    // `defaults.timeout` is per call; a case gets five calls' worth (here 3 s: roomy enough
    // for the next case's new worker to start on a loaded machine), then the worker is
    // stopped and the case errors with its own kind, not as a crash.
    let p = worker_suite(
        "import json, sys, time\nfor line in sys.stdin:\n    m = json.loads(line)\n    if m['case']['id'] == 'slow':\n        time.sleep(30)\n    print(json.dumps({'id': m['id'], 'output': 'ok'}), flush=True)\n",
        "defaults: { timeout: 0.6 }\n",
        &["slow", "fast"],
    );
    p.evals(&[
        "run",
        "--no-autosave",
        "-p",
        "1",
        "--format",
        "json",
        "-o",
        "out.json",
    ])
    .code(1);
    let out: Value = serde_json::from_str(&p.read("out.json")).unwrap();
    let cases = out["experiments"][0]["cases"].as_array().unwrap();
    let by = |id: &str| cases.iter().find(|c| c["case"] == id).unwrap().clone();
    let slow = by("slow");
    assert_eq!(slow["error_kind"], "timeout", "{slow}");
    assert!(
        slow["error"]
            .as_str()
            .unwrap()
            .starts_with("adapter: no answer within 3s; it was stopped"),
        "{slow}"
    );
    assert_eq!(
        by("fast")["error"],
        Value::Null,
        "the next case gets a new worker"
    );
}

#[test]
fn a_workers_answer_line_had_no_cap() {
    // Case `big` is answered with a 300 KB line, over the suite's 64 KiB limit; case
    // `small` (by a new worker: the first was stopped) is answered as usual.
    let p = worker_suite(
        "import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    out = 'x' * 300000 if m['case']['id'] == 'big' else 'fine'\n    print(json.dumps({'id': m['id'], 'output': out}), flush=True)\n",
        "cassettes: { max_response_bytes: 65536 }\n",
        &["big", "small"],
    );
    let done = p
        .evals(&[
            "run",
            "--no-autosave",
            "-p",
            "1",
            "--format",
            "json",
            "-o",
            "out.json",
        ])
        .code(1);
    assert!(
        done.stderr.len() < 10_000 && done.stdout.len() < 10_000,
        "{}",
        done.stderr
    );
    let text = p.read("out.json");
    assert!(text.len() < 65536, "the snapshot holds the answer");
    let out: Value = serde_json::from_str(&text).unwrap();
    let cases = out["experiments"][0]["cases"].as_array().unwrap();
    let case = |id: &str| cases.iter().find(|c| c["case"] == id).unwrap().clone();
    let big = case("big");
    assert_eq!(big["error_kind"], "too-large", "{big}");
    let error = big["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "adapter: its answer line is over 64.0 KiB, the limit on a worker's answer \
             (cassettes.max_response_bytes); it was stopped ("
        ) && error
            .ends_with("; raise cassettes.max_response_bytes in the config if this is expected"),
        "{error}"
    );
    assert_eq!(case("small")["error"], Value::Null);
    assert_eq!(case("small")["output"], "fine");
}

#[test]
fn a_workers_stderr_line_had_no_cap() {
    let p = worker_suite(
        "import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    print('y' * 3000000, file=sys.stderr, flush=True)\n    print('after', file=sys.stderr, flush=True)\n    print(json.dumps({'id': m['id'], 'output': 'fine'}), flush=True)\n",
        "",
        &["loud"],
    );
    p.evals(&["run", "--no-autosave"]).ok();
    let (name, log) = warnings_log(&p);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{name}: one line cut, then the next");
    assert_eq!(
        lines[0],
        format!(
            "{} [cut: 2.8 MiB more of this line not kept; a worker's stderr line is kept to 64.0 KiB]",
            "y".repeat(65536)
        )
    );
    assert_eq!(lines[1], "after");
}

#[test]
fn an_exec_worker_killed_mid_case_fails_the_check_with_the_case_as_an_error() {
    // A guard beside the library's crash tests (tests/cli/crash.rs): a worker that dies
    // holding a case already errored it on 39e9115; the gate must keep failing on it.
    let p = worker_suite(
        "import json, os, signal, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    if m['case']['id'] == 'dies':\n        os.kill(os.getpid(), signal.SIGKILL)\n    print(json.dumps({'id': m['id'], 'output': 'fine'}), flush=True)\n",
        "",
        &["dies", "lives"],
    );
    p.evals(&["check", "-p", "1", "--json", "out.json"]).code(1);
    let out: Value = serde_json::from_str(&p.read("out.json")).unwrap();
    let e = &out["experiments"][0];
    assert_eq!(
        (e["cases_total"].as_u64(), e["errors"].as_u64()),
        (Some(2), Some(1)),
        "{e}"
    );
    let dies = e["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == "dies")
        .unwrap();
    assert_eq!(dies["error_kind"], "adapter", "{dies}");
}
