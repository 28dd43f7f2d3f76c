//! The README's "Your suite, step by step", run as written: each line of its code block in
//! `bash` in a fresh git repository on `main`, with the built `evals` first on PATH, the
//! "OpenAI-compatible server" a scripted one on loopback (its URL put in place of the
//! README's Ollama port) and GitHub a wiremock server. Each step's exit code and key line
//! are checked, so the README cannot drift from what the program does.
//!
//! With `EVALS_SCREENSHOTS=DIR` set, the failing check's terminal output (in colour) and its
//! Markdown are kept in DIR as `check.ansi` (`EVALS_SCREENSHOT_COLUMNS` wide, default 100) and
//! `comment.md`: `docs/pictures.sh` makes the README's pictures from them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, Request, Respond, ResponseTemplate};

use crate::harness::{Bounded, Done, Project, Run};
use crate::mock::{Server, chat};

const TOKEN: &str = "ghs_walkthrough0123456789abcdefghijABCD";

/// The README's marker line before the walk-through's code block.
const MARKER: &str = "<!-- tested: tests/cli/walkthrough.rs";

/// The port the README points the suite at (Ollama's).
const README_SERVER: &str = "http://127.0.0.1:11434";

/// The walk-through's lines, as the README has them.
fn readme_walkthrough() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let at = readme
        .find(MARKER)
        .expect("the README marks its walk-through with `<!-- tested: tests/cli/walkthrough.rs`");
    let start = at + readme[at..].find("```sh\n").expect("a sh block") + "```sh\n".len();
    let len = readme[start..].find("```").expect("the block ends");
    readme[start..start + len]
        .lines()
        .map(str::to_string)
        .collect()
}

/// An OpenAI-compatible model that reads the suite's own cases: it answers each ticket with
/// the case's expected JSON, unless the system prompt asks for as few words as it can, when
/// it answers in one word (not JSON, as a model told to be terse might).
struct Desk {
    cases: PathBuf,
}

impl Respond for Desk {
    fn respond(&self, req: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&req.body).expect("a JSON request");
        let messages = body["messages"].as_array().expect("chat messages");
        let system = messages[0]["content"].as_str().unwrap_or_default();
        let user = messages.last().unwrap()["content"]
            .as_str()
            .unwrap_or_default();
        let usage = json!({"prompt_tokens": 120, "completion_tokens": 18});
        if system.contains("as few words") {
            return chat("Billing.", usage);
        }
        let cases = std::fs::read_to_string(&self.cases).expect("the suite's cases");
        let expected = cases
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a JSONL case"))
            .find(|c| user.contains(c["input"].as_str().unwrap_or("\u{0}")))
            .map(|c| c["expected"].to_string())
            .unwrap_or_else(|| panic!("no case for the message {user:?}"));
        chat(&expected, usage)
    }
}

/// `bash -c line` in `dir`: the harness's scrubbed environment, the built `evals` first on
/// PATH, git with an identity of its own and no global config, GitHub at `github`.
fn step(dir: &Path, line: &str, github: &str, git_config: &Path) -> Done {
    let evals = Run::new(dir, &[]).into_command();
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(line).current_dir(dir);
    for (k, v) in evals.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_evals")).parent().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin.to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(dirs).unwrap())
        .env("GIT_CONFIG_GLOBAL", git_config)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", github);
    Done::from(cmd.output_bounded().expect("run bash"))
}

#[test]
fn the_readmes_walk_through_runs_as_written_against_a_local_server() {
    let lines = readme_walkthrough();
    // Each line's exit code and a line it must print (stdout or stderr); "" for git's.
    let steps: [(i32, &str); 10] = [
        (0, "a suite with 3 cases"),
        (0, ""),
        (0, "wrote 3 cassettes (3 new"),
        (0, ""),
        (0, "no earlier run of main: this run is the first baseline"),
        (0, ""),
        (0, "wrote 3 cassettes (0 new, 3 changed)"),
        (0, ""),
        (
            1,
            "error: evals check: 4 regressions in helpdesk (main → terse)",
        ),
        (0, "commented on #1"),
    ];
    assert_eq!(
        lines.len(),
        steps.len(),
        "the README's walk-through has {} lines, this test knows {}: update `steps`\n{}",
        lines.len(),
        steps.len(),
        lines.join("\n")
    );
    // Where the README's comment on a line says its exit code, it says the one checked.
    let said_exit = regex::Regex::new(r"#.*\bexit (\d+)").unwrap();
    for (line, (code, _)) in lines.iter().zip(steps) {
        if let Some(c) = said_exit.captures(line) {
            assert_eq!(
                c[1].parse::<i32>().unwrap(),
                code,
                "the README says: {line}"
            );
        }
    }
    assert!(
        lines[1].contains(README_SERVER),
        "the walk-through no longer points at {README_SERVER}: {}",
        lines[1]
    );

    // The project's folder names the suite `evals init` writes.
    let p = Project::new().dir("helpdesk");
    let dir = p.path().join("helpdesk");
    let model = Server::start();
    model.answer(
        "/v1/chat/completions",
        Desk {
            cases: dir.join("evals/datasets/tickets/cases.jsonl"),
        },
    );
    let github = Server::start();
    github.mount(
        Mock::given(method("GET"))
            .and(path("/repos/you/project/issues/1/comments"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([]))),
    );
    github.mount(
        Mock::given(method("POST"))
            .and(path("/repos/you/project/issues/1/comments"))
            .respond_with(
                ResponseTemplate::new(201).set_body_json(json!({"id": 7, "html_url": "u7"})),
            ),
    );
    let home = tempfile::tempdir().unwrap();
    let git_config = home.path().join("gitconfig");
    std::fs::write(
        &git_config,
        "[user]\n\tname = walker\n\temail = walker@example.com\n[commit]\n\tgpgsign = false\n",
    )
    .unwrap();
    let init = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(&dir)
        .env("GIT_CONFIG_GLOBAL", &git_config)
        .output_bounded()
        .unwrap();
    assert!(init.status.success(), "git init: {init:?}");

    for (i, (line, (code, key))) in lines.iter().zip(steps).enumerate() {
        let line = line.replace(README_SERVER, &model.uri());
        let d = step(&dir, &line, &github.uri(), &git_config);
        eprintln!("$ {line}\n{}{}", d.stdout, d.stderr);
        let said = format!("{}{}", d.stdout, d.stderr);
        assert_eq!(
            d.code,
            code,
            "step {} `{line}` exited {}\n--- stdout\n{}\n--- stderr\n{}",
            i + 1,
            d.code,
            d.stdout,
            d.stderr
        );
        assert!(
            said.contains(key),
            "step {} `{line}` did not say {key:?}\n--- stdout\n{}\n--- stderr\n{}",
            i + 1,
            d.stdout,
            d.stderr
        );
    }

    // The server was called once per case on main and once per case on the branch, and
    // the check on main replayed (no call).
    assert_eq!(model.hits(), 6);
    // The comment reached GitHub: the check's verdict, as the Markdown said it.
    let seen = github.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let body = seen[1].2["body"].as_str().unwrap();
    assert!(
        body.starts_with("**evals check: 4 regressions** in helpdesk (main → terse)"),
        "{body}"
    );
    assert_eq!(body.trim_end(), p.read("helpdesk/comment.md").trim_end());

    if let Some(keep) = std::env::var_os("EVALS_SCREENSHOTS") {
        // The failing check as a terminal shows it (both streams, in order), for
        // docs/pictures.sh.
        let columns = std::env::var("EVALS_SCREENSHOT_COLUMNS").unwrap_or("100".into());
        let d = step(
            &dir,
            &format!("COLUMNS={columns} evals check --baseline main --color always 2>&1"),
            &github.uri(),
            &git_config,
        );
        assert_eq!(d.code, 1, "{}", d.stdout);
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).unwrap();
        std::fs::write(keep.join("check.ansi"), &d.stdout).unwrap();
        std::fs::write(keep.join("comment.md"), p.read("helpdesk/comment.md")).unwrap();
    }
}
