//! The official SDKs and agent frameworks the exec-adapter tests run unmodified through the
//! gateway: Python `openai`, `anthropic`, `google-genai`, `openai-agents`, `mcp`,
//! `pydantic-ai`, `langchain-openai` and `litellm` in a venv, and the npm `openai`, `ai`,
//! `@ai-sdk/openai` and `@anthropic-ai/sdk` packages, pinned and installed once under `target/tools/` (from the package
//! registries, the only network a test ever needs, and only the first time). `.ci/run`
//! installs them before `cargo test` and exports `EVALS_TEST_PYTHON` /
//! `EVALS_TEST_NODE_MODULES`; a bare `cargo test` installs them here, under a lock so
//! parallel tests install once.

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::harness::Bounded;

/// Pinned versions, the same as `.ci/run`'s (a test holds them equal).
pub const PY_PACKAGES: &[&str] = &[
    "openai==3.57.0",
    "anthropic==2.15.0",
    "google-genai==3.6.1",
    "openai-agents==0.24.0",
    // MCP's official SDK, client and server (tests/cli/mcp.rs); openai-agents needs it too.
    "mcp==2.3.0",
    // The framework matrix (tests/cli/frameworks.rs).
    "pydantic-ai-slim[openai]==2.68.0",
    "langchain-openai==1.8.1",
    "litellm==1.110.2",
];

/// What the venv must import to be taken as it is (else it is made again), with
/// [`PY_IMPORT_ENV`] set.
const PY_IMPORTS: &str = "import openai, anthropic, google.genai, agents, mcp.server.mcpserver, pydantic_ai, langchain_openai, litellm";

/// litellm fetches its cost map at import (a minute of retries offline) without this.
pub const PY_IMPORT_ENV: (&str, &str) = ("LITELLM_LOCAL_MODEL_COST_MAP", "True");

/// The npm `openai` package, pinned.
pub const NODE_PACKAGE: &str = "openai@6.49.0";

/// Every npm package the tests load, pinned: `openai`, the Vercel AI SDK (`ai`, its
/// OpenAI provider, and `zod`, their peer), and `@anthropic-ai/sdk`.
pub const NODE_PACKAGES: &[&str] = &[
    NODE_PACKAGE,
    "ai@7.0.173",
    "@ai-sdk/openai@4.0.118",
    "zod@4.6.7",
    "@anthropic-ai/sdk@1.10.0",
];

/// The name of a pinned npm package (`@ai-sdk/openai@4.0.118` is `@ai-sdk/openai`).
pub fn npm_name(pin: &str) -> &str {
    pin.rsplit_once('@').map_or(pin, |(name, _)| name)
}

fn tools() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tools")
}

/// An install from a registry: slow the first time, so its deadline is 15 minutes.
fn run(cmd: &mut Command, what: &str) {
    let out = cmd
        .output_within(std::time::Duration::from_secs(900))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A lock file under `target/tools`, held while installing.
fn locked<T>(name: &str, f: impl FnOnce() -> T) -> T {
    std::fs::create_dir_all(tools()).unwrap();
    let lock = File::create(tools().join(format!("{name}.lock"))).unwrap();
    lock.lock().unwrap();
    let out = f();
    lock.unlock().unwrap();
    out
}

/// The venv's python, with the Python SDKs importable.
pub fn python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        if let Some(p) = std::env::var_os("EVALS_TEST_PYTHON") {
            return PathBuf::from(p);
        }
        let venv = tools().join("py-sdk-1");
        let py = venv.join("bin/python");
        locked("py-sdk-1", || {
            let ok = py.exists()
                && Command::new(&py)
                    .env(PY_IMPORT_ENV.0, PY_IMPORT_ENV.1)
                    .args(["-c", PY_IMPORTS])
                    .output_bounded()
                    .is_ok_and(|o| o.status.success());
            if !ok {
                let _ = std::fs::remove_dir_all(&venv);
                run(
                    Command::new("python3").arg("-m").arg("venv").arg(&venv),
                    "python3 -m venv",
                );
                run(
                    Command::new(venv.join("bin/pip"))
                        .args(["install", "--quiet", "--disable-pip-version-check"])
                        .args(PY_PACKAGES),
                    "pip install the SDKs",
                );
            }
        });
        py
    })
    .clone()
}

/// A `node_modules` folder holding the npm packages (for `NODE_PATH`).
pub fn node_modules() -> PathBuf {
    static NODE: OnceLock<PathBuf> = OnceLock::new();
    NODE.get_or_init(|| {
        if let Some(p) = std::env::var_os("EVALS_TEST_NODE_MODULES") {
            return PathBuf::from(p);
        }
        let prefix = tools().join("node-sdk-1");
        locked("node-sdk-1", || {
            let missing = NODE_PACKAGES.iter().any(|pin| {
                !prefix
                    .join("node_modules")
                    .join(npm_name(pin))
                    .join("package.json")
                    .exists()
            });
            if missing {
                run(
                    Command::new("npm")
                        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
                        .arg(&prefix)
                        .args(NODE_PACKAGES),
                    "npm install the npm packages",
                );
            }
        });
        prefix.join("node_modules")
    })
    .clone()
}

#[test]
fn ci_run_pins_the_same_sdk_versions() {
    let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/run")).unwrap();
    for pin in PY_PACKAGES.iter().chain(NODE_PACKAGES) {
        assert!(ci.contains(pin), ".ci/run does not pin {pin}");
    }
}

#[test]
fn the_sdks_load() {
    let py = Command::new(python())
        .env(PY_IMPORT_ENV.0, PY_IMPORT_ENV.1)
        .args(["-c", &format!("{PY_IMPORTS}; print(openai.__version__)")])
        .output_bounded()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&py.stdout).trim(), "3.57.0");
    let node = Command::new("node")
        .env("NODE_PATH", node_modules())
        .args(["-e", "const { OpenAI } = require('openai'); require('ai'); require('@ai-sdk/openai'); require('@anthropic-ai/sdk'); console.log(require('openai/version').VERSION, typeof OpenAI)"])
        .output_bounded()
        .unwrap();
    assert!(
        node.status.success(),
        "{}",
        String::from_utf8_lossy(&node.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&node.stdout).trim(),
        "6.49.0 function"
    );
}
