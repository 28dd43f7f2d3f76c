//! MCP servers over stdio (`adapter.upstreams.<name>: { kind: mcp, command: [...] }`).
//! A worker's MCP client starts the command in `EVALS_MCP_<NAME>_COMMAND`: `evals
//! mcp-relay URL`, a relay that posts each JSON-RPC line the client writes to the
//! gateway's `/upstream/<name>/<token>/` (one connection per relay, named in
//! [`CONNECTION`]) and writes the answers back on its stdout. The gateway treats each line
//! as a request to an MCP upstream (fingerprint, cassette, trajectory, misses); what goes
//! live goes to the real server, which evals starts (in the project folder, with the
//! workers' environment) the first time a relay's connection needs it, and stops when the
//! relay's client closes it. Replay never starts it.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::cassette::{Accept, CallError, HttpRequest, HttpResponse, Route, UpstreamFuture};

/// The header naming a relay's connection: one server process (record) per connection.
pub const CONNECTION: &str = "x-evals-mcp-connection";

/// `EVALS_MCP_<NAME>_COMMAND`: the variable a worker reads a stdio MCP server's command
/// line from (a JSON array).
pub fn command_var(name: &str) -> String {
    format!(
        "EVALS_MCP_{}_COMMAND",
        name.to_ascii_uppercase().replace('-', "_")
    )
}

/// How a stdio MCP server is started.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// `adapter.upstreams.<name>.command`.
    pub command: Vec<String>,
    /// The project folder.
    pub cwd: PathBuf,
    /// The workers' environment (evals' basics, `pass_env`, `adapter.env`).
    pub env: BTreeMap<OsString, OsString>,
}

/// The servers started for the relays' connections, by connection.
#[derive(Debug, Default)]
pub struct Connections {
    servers: Mutex<HashMap<String, Arc<Server>>>,
}

impl Connections {
    /// The server of `connection` (not started until a request goes live).
    pub(crate) fn server(&self, name: &str, connection: &str, launch: &Launch) -> Arc<Server> {
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        servers
            .entry(format!("{name}\n{connection}"))
            .or_insert_with(|| {
                Arc::new(Server {
                    name: name.to_string(),
                    launch: launch.clone(),
                    proc: tokio::sync::Mutex::new(None),
                })
            })
            .clone()
    }

    /// The relay's client closed `connection`: its server (if started) is stopped.
    pub(crate) fn close(&self, name: &str, connection: &str) {
        self.servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&format!("{name}\n{connection}"));
    }
}

/// One relay's server: started at its first live request, killed when dropped.
#[derive(Debug)]
pub(crate) struct Server {
    name: String,
    launch: Launch,
    proc: tokio::sync::Mutex<Option<Proc>>,
}

#[derive(Debug)]
struct Proc {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Server {
    fn start(&self) -> Result<Proc, CallError> {
        let (program, args) = self
            .launch
            .command
            .split_first()
            .ok_or_else(|| CallError::Transport("an empty command".into()))?;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .current_dir(&self.launch.cwd)
            .env_clear()
            .envs(&self.launch.env)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                CallError::Transport(format!(
                    "cannot start the MCP server `{}` (adapter.upstreams.{}.command): {e}: fix the command, or replay recorded cassettes with --cassettes replay",
                    self.launch.command.join(" "),
                    self.name
                ))
            })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        Ok(Proc {
            _child: child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
        })
    }

    /// Writes the message to the server and, for a request (one with an `id`), reads its
    /// lines up to its answer: one line is its JSON body; more (the server's notifications
    /// before it) are kept as text, a line each. A notification is answered 202, empty.
    async fn exchange(&self, req: HttpRequest) -> Result<HttpResponse, CallError> {
        let started = Instant::now();
        let bytes = req
            .body_bytes()
            .map_err(CallError::Transport)?
            .unwrap_or_default();
        let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let exited = |what: &str| {
            CallError::Transport(format!(
                "the MCP server `{}` (adapter.upstreams.{}.command) {what}: run it by hand to see why",
                self.launch.command.join(" "),
                self.name
            ))
        };
        let mut guard = self.proc.lock().await;
        let proc = match &mut *guard {
            Some(p) => p,
            slot => slot.insert(self.start()?),
        };
        let mut line = bytes;
        line.retain(|b| *b != b'\n' && *b != b'\r');
        line.push(b'\n');
        if proc.stdin.write_all(&line).await.is_err() || proc.stdin.flush().await.is_err() {
            *guard = None;
            return Err(exited("exited before it read a request"));
        }
        let id = message.get("method").and(message.get("id"));
        let Some(id) = id else {
            return Ok(HttpResponse {
                status: 202,
                headers: vec![],
                body: Value::Null,
                raw: None,
                latency: started.elapsed(),
            });
        };
        let mut lines: Vec<String> = Vec::new();
        loop {
            let next = match proc.stdout.next_line().await {
                Ok(Some(l)) => l,
                _ => {
                    *guard = None;
                    return Err(exited("exited before it answered"));
                }
            };
            let next = next.trim_end_matches('\r').to_string();
            if next.trim().is_empty() {
                continue;
            }
            let parsed: Option<Value> = serde_json::from_str(&next).ok();
            lines.push(next);
            if let Some(v) = parsed
                && v.get("id") == Some(id)
                && (v.get("result").is_some() || v.get("error").is_some())
            {
                break;
            }
        }
        let latency = started.elapsed();
        Ok(if let [only] = lines.as_slice() {
            HttpResponse {
                status: 200,
                headers: vec![("content-type".into(), "application/json".into())],
                body: serde_json::from_str(only).unwrap_or(Value::Null),
                raw: Some(only.clone()),
                latency,
            }
        } else {
            HttpResponse {
                status: 200,
                headers: vec![("content-type".into(), "application/x-ndjson".into())],
                body: Value::String(lines.join("\n")),
                raw: None,
                latency,
            }
        })
    }
}

impl crate::cassette::Upstream for Server {
    fn send<'a>(&'a self, req: HttpRequest, _: &'a Route, _: Accept) -> UpstreamFuture<'a> {
        Box::pin(self.exchange(req))
    }
}

/// `evals mcp-relay URL`: the stdio MCP server a worker's client starts. Each line read
/// from stdin is posted to `url` (the gateway); the answer's lines are written to stdout;
/// a refused message that asked something is answered with a JSON-RPC error saying why,
/// so the client fails at once rather than waiting. At the end of stdin the connection is
/// closed (the real server, if evals started one, stops). Returns the exit code.
pub fn relay(url: &str) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("evals mcp-relay: cannot start: {e}");
            return 1;
        }
    };
    runtime.block_on(relay_lines(url))
}

async fn relay_lines(url: &str) -> i32 {
    // Plain HTTP to the loopback gateway, but reqwest wants a provider all the same.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = match reqwest::Client::builder().no_proxy().build() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("evals mcp-relay: cannot make an HTTP client: {e}");
            return 1;
        }
    };
    let connection = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    // One message at a time: the relay has nothing else to do while it waits on stdin.
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    let mut code = 0;
    for line in std::io::BufRead::lines(stdin.lock()) {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let sent = client
            .post(url)
            .header(CONNECTION, &connection)
            .header("content-type", "application/json")
            .body(line.clone())
            .send()
            .await;
        let (ok, text) = match sent {
            Ok(resp) => (
                resp.status().is_success(),
                resp.text().await.unwrap_or_default(),
            ),
            Err(e) => (false, format!("cannot reach evals at {url}: {e}")),
        };
        let out = if ok {
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        } else {
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                .unwrap_or(text);
            eprintln!("evals mcp-relay: {message}");
            let asked: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            match asked.get("method").and(asked.get("id")) {
                Some(id) => format!(
                    "{}\n",
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}})
                ),
                None => String::new(),
            }
        };
        if std::io::Write::write_all(&mut stdout, out.as_bytes()).is_err()
            || std::io::Write::flush(&mut stdout).is_err()
        {
            code = 1;
            break;
        }
    }
    let _ = client
        .delete(url)
        .header(CONNECTION, &connection)
        .send()
        .await;
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(script: &str) -> Server {
        Server {
            name: "orders".into(),
            launch: Launch {
                command: vec!["sh".into(), "-c".into(), script.into()],
                cwd: std::env::temp_dir(),
                env: crate::worker::basic_env(crate::env::process_vars(), &[]),
            },
            proc: tokio::sync::Mutex::new(None),
        }
    }

    fn message(body: Value) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            url: "stdio://orders/".into(),
            headers: vec![],
            raw: Some(body.to_string()),
            body: Some(body),
        }
    }

    #[tokio::test]
    async fn a_request_is_answered_with_the_lines_up_to_its_answer_and_a_notification_at_once() {
        // The server: to a request, a notification of its own, then the answer; to a
        // notification, nothing.
        let s = server(
            r#"while read l; do case "$l" in *'"id"'*) echo '{"jsonrpc":"2.0","method":"notifications/message"}'; echo '{"jsonrpc":"2.0","id":7,"result":{}}';; esac; done"#,
        );
        let notified = s
            .exchange(message(
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            ))
            .await
            .unwrap();
        assert_eq!((notified.status, notified.body), (202, Value::Null));
        // The server's notification is kept before the answer, a line each.
        let answered = s
            .exchange(message(
                json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
            ))
            .await
            .unwrap();
        assert_eq!(
            answered.body,
            Value::String(
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}".into()
            )
        );
        // Given another id in replay, the answer's line is retargeted, the others kept.
        let replayed = super::super::upstreams::answering(answered, &json!(9));
        let lines: Vec<&str> = replayed.body.as_str().unwrap().lines().collect();
        assert_eq!(
            lines.last(),
            Some(&r#"{"jsonrpc":"2.0","id":9,"result":{}}"#)
        );
        assert!(
            lines[..lines.len() - 1]
                .iter()
                .all(|l| l.contains("notifications/message")),
            "{lines:?}"
        );
    }

    #[tokio::test]
    async fn a_server_that_cannot_start_or_exits_is_a_transport_error_naming_its_command() {
        let s = server("exit 3");
        let e = s
            .exchange(message(
                json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            ))
            .await
            .unwrap_err();
        assert!(matches!(e, CallError::Transport(_)), "{e}");
        assert!(
            e.to_string()
                .contains("the MCP server `sh -c exit 3` (adapter.upstreams.orders.command)"),
            "{e}"
        );
        let mut missing = server("");
        missing.launch.command = vec!["/nonexistent/mcp-server".into()];
        let e = missing
            .exchange(message(
                json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            ))
            .await
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot start the MCP server `/nonexistent/mcp-server`"),
            "{e}"
        );
    }
}
