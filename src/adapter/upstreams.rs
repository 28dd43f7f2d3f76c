//! The gateway's `/upstream/<name>/<token>/…`: an exec adapter's calls to its other APIs
//! (`adapter.upstreams`), sent to the real API with the real credential through the case's
//! cassette session, or answered by the case's hand-written fixtures; each one a step of the
//! case's trajectory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::gateway::{Binding, UpstreamApi};
use crate::cassette::{CallError, HttpRequest, HttpResponse, Mode};
use crate::results::{CaseError, CaseErrorKind, Step, StepKind};

/// Headers of the worker's request never passed on: hop-by-hop ones, the gateway's own,
/// and every credential (the API's is the gateway's to add).
const DROPPED: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "accept-encoding",
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "cookie",
    "x-evals-token",
    super::mcp_stdio::CONNECTION,
];

/// An error the worker's HTTP client reads as the API's failure, final.
fn refused(status: StatusCode, message: &str) -> Response {
    (
        status,
        [("x-should-retry", "false")],
        axum::Json(json!({"error": {"message": message, "type": "evals_gateway"}})),
    )
        .into_response()
}

/// The token's place: `/upstream/<name>/<token>/<path>`, or (a client that sends it) the
/// `x-evals-token` header with `/upstream/<name>/<path>`. Returns (name, token, path).
pub(super) fn split<'a>(rest: &'a str, headers: &'a HeaderMap) -> (&'a str, &'a str, String) {
    let (name, after) = rest.split_once('/').unwrap_or((rest, ""));
    let (first, path) = after.split_once('/').unwrap_or((after, ""));
    if first.starts_with("evals-") {
        return (name, first, format!("/{path}"));
    }
    let token = headers
        .get("x-evals-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    (name, token, format!("/{after}"))
}

/// One request of the worker to the API `name`, `path` below its base URL.
pub(super) async fn serve(
    b: Arc<Binding>,
    name: &str,
    method: &str,
    path: &str,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Response {
    let Some(api) = b.upstreams.apis.get(name) else {
        let known: Vec<&str> = b.upstreams.apis.keys().map(String::as_str).collect();
        let message = format!(
            "the adapter called the upstream '{name}', which adapter.upstreams does not name ({}): add it there, or call one of those",
            if known.is_empty() {
                "it names none".to_string()
            } else {
                format!("it names {}", known.join(", "))
            }
        );
        fail(&b, CaseErrorKind::Adapter, message.clone());
        return refused(StatusCode::NOT_FOUND, &message);
    };
    if api.mcp && method.eq_ignore_ascii_case("GET") {
        // The optional stream of a streamable-HTTP MCP server's own messages: long-lived,
        // never a recording; the spec lets a server decline it so.
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [("allow", "POST, DELETE")],
            "evals records an MCP server's answers to requests, not its own stream",
        )
            .into_response();
    }
    // A stdio MCP server: each relay's connection has its own (started when a request
    // goes live); the relay's client closing it stops it.
    let stdio = api.stdio.as_ref().map(|launch| {
        let connection = headers
            .get(super::mcp_stdio::CONNECTION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        (connection.to_string(), launch)
    });
    if let Some((connection, _)) = &stdio
        && method.eq_ignore_ascii_case("DELETE")
    {
        b.upstreams.stdio.close(name, connection);
        return StatusCode::NO_CONTENT.into_response();
    }
    let via = stdio.map(|(connection, launch)| b.upstreams.stdio.server(name, &connection, launch));
    let req = request(api, method, path, headers, query, body);
    // An MCP request's JSON-RPC `id` counts the client's requests; what it asks is the rest.
    let rpc_id = api
        .mcp
        .then(|| req.body.as_ref()?.get("id").cloned())
        .flatten();
    let ignore = if api.mcp {
        vec!["id".to_string()]
    } else {
        vec![]
    };
    if via.is_none() && leaves_base(&api.base_url, &req.url) {
        // Past the base path the real credential would go to whatever else the host
        // serves (`/api/../v1/models` with the API's key): never sent, in any mode.
        let message = format!(
            "upstream {name}: {} {path} leaves the API's base URL ({}) once its `..` are \
             resolved: the gateway sends only paths below adapter.upstreams.{name}.base_url; \
             call a path under it",
            req.method, api.base_url
        );
        fail(&b, CaseErrorKind::Adapter, message.clone());
        return refused(StatusCode::BAD_REQUEST, &message);
    }

    // A fixture's `query` is matched on what the worker sent; the trajectory (results,
    // history, reports) keeps each credential parameter as the cassette does, `[REDACTED]`.
    let sent_query = query
        .map(crate::results::trajectory::query_map)
        .unwrap_or_default();
    let mut step = Step {
        kind: StepKind::Upstream,
        name: name.to_string(),
        model: None,
        method: req.method.clone(),
        path: path.to_string(),
        query: query
            .map(|q| crate::results::trajectory::query_map(&b.session.redact_query(q)))
            .unwrap_or_default(),
        body: req.body.clone(),
        status: None,
    };
    let fixture = match b.fixtures.as_deref() {
        Some(dir) => match fixture(dir, name, &step, &sent_query) {
            Ok(f) => f,
            Err(message) => {
                fail(&b, CaseErrorKind::Other, message.clone());
                b.spent_lock().trajectory.push(step);
                return refused(StatusCode::BAD_GATEWAY, &message);
            }
        },
        None => None,
    };
    let replay = b.session.mode() == Mode::Replay;
    let result = match fixture {
        // A hand-written answer stands for an API with no live server: it answers before
        // the network, and after the recordings in replay.
        Some(f) if !replay => Ok(f),
        fixture => {
            let missing_key = api
                .key
                .as_ref()
                .filter(|(_, v)| v.is_none())
                .map(|(k, _)| k.clone());
            match (missing_key, replay) {
                (Some(var), false) => Err(CallError::Transport(format!(
                    "{var} is not set: the upstream {name} needs it for live calls (export {var}=..., or replay recorded cassettes with --cassettes replay)"
                ))),
                _ => match b
                    .session
                    .send_upstream_via(
                        name,
                        &api.base_url,
                        req,
                        &ignore,
                        via.as_deref().map(|s| s as &dyn crate::cassette::Upstream),
                    )
                    .await
                {
                    Err(CallError::Miss(_)) if fixture.is_some() => {
                        Ok(fixture.unwrap_or_else(|| unreachable!("a fixture was just found")))
                    }
                    other => other,
                },
            }
        }
    };
    match result {
        Ok(resp) => {
            step.status = Some(resp.status);
            let mut spent = b.spent_lock();
            spent.latency_s += resp.latency.as_secs_f64();
            if resp.status == 429 || resp.status >= 500 {
                spent.error.get_or_insert_with(|| {
                    CaseError::new(
                        CaseErrorKind::Transport,
                        format!(
                            "upstream {name}: {} {path} answered HTTP {}",
                            step.method, resp.status
                        ),
                    )
                });
            }
            // A tool an MCP server ran (answered, not refused): a call for the checks.
            if api.mcp
                && resp.status < 400
                && let Some(call) = step
                    .body
                    .as_ref()
                    .and_then(crate::results::ToolCall::of_mcp_request)
            {
                spent.mcp_tool_calls.push(call);
            }
            spent.trajectory.push(step);
            drop(spent);
            match &rpc_id {
                Some(id) => passed_on(answering(resp, id)),
                None => passed_on(resp),
            }
        }
        Err(e) => {
            let message = format!("upstream {name}: {} {path}: {e}", step.method);
            let kind = CaseError::from(e).kind;
            fail(&b, kind, message.clone());
            b.spent_lock().trajectory.push(step);
            refused(StatusCode::BAD_GATEWAY, &message)
        }
    }
}

/// An MCP server's response made the answer to the request of JSON-RPC `id`: its JSON body,
/// or each `data:` event of its stream, that answers another id answers this one (a replayed
/// recording made by a client that counted its requests otherwise). A response that already
/// answers `id` is kept byte for byte.
pub(super) fn answering(mut resp: HttpResponse, id: &Value) -> HttpResponse {
    // The id changed in the text, every other byte kept.
    let retarget = |text: &str| -> Option<String> {
        let old: Value = serde_json::from_str(text).ok()?;
        let answers = old.get("result").is_some() || old.get("error").is_some();
        if !answers || old.get("id").is_none_or(|o| o == id) {
            return None;
        }
        let mut new = old.clone();
        new["id"] = id.clone();
        Some(super::splice::splice(text, &old, &new))
    };
    if let Some(text) = resp.body.as_str().map(str::to_string) {
        // A stream of events (`event: message`, `data: {...}`), kept as text.
        let mut changed = false;
        let lines: Vec<String> = text
            .split('\n')
            .map(|line| {
                let (body, cr) = match line.strip_suffix('\r') {
                    Some(l) => (l, "\r"),
                    None => (line, ""),
                };
                // An event's `data:`, or (a stdio server's lines) a message of its own.
                let (prefix, message) = match body.strip_prefix("data:") {
                    Some(d) => ("data: ", d.trim_start()),
                    None => ("", body),
                };
                match retarget(message) {
                    Some(new) => {
                        changed = true;
                        format!("{prefix}{new}{cr}")
                    }
                    None => line.to_string(),
                }
            })
            .collect();
        if changed {
            resp.body = Value::String(lines.join("\n"));
            resp.raw = None;
        }
    } else if resp.body.get("id").is_some() {
        let text = resp.raw.clone().unwrap_or_else(|| resp.body.to_string());
        if let Some(new) = retarget(&text) {
            resp.body["id"] = id.clone();
            resp.raw = Some(new);
        }
    }
    resp
}

/// The case's error, once (its first failure).
fn fail(b: &Binding, kind: CaseErrorKind, message: String) {
    b.session.mark_failed();
    b.spent_lock()
        .error
        .get_or_insert_with(|| CaseError::new(kind, message));
}

/// The request to the real API: its URL, the worker's headers but credentials, the API's
/// credential, and the body as JSON, text or base64 bytes.
fn request(
    api: &UpstreamApi,
    method: &str,
    path: &str,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> HttpRequest {
    let mut url = format!("{}{path}", api.base_url);
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        url.push('?');
        url.push_str(q);
    }
    let mut out: Vec<(String, String)> = headers
        .iter()
        .filter(|(k, _)| {
            let k = k.as_str();
            !DROPPED.contains(&k)
                && k != api.header
                && !k.eq_ignore_ascii_case(crate::cassette::ENCODING)
        })
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect();
    if let Some((_, Some(key))) = &api.key {
        let value = if api.header == "authorization" {
            format!("Bearer {key}")
        } else {
            key.clone()
        };
        out.push((api.header.clone(), value));
    }
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let (body, raw) = if body.is_empty() {
        (None, None)
    } else {
        let json_type = content_type.as_deref().is_none_or(|t| t.contains("json"));
        match std::str::from_utf8(body) {
            // JSON as sent, byte for byte (`raw`), and parsed for the fingerprint.
            Ok(text) => match json_type
                .then(|| serde_json::from_str::<Value>(text).ok())
                .flatten()
            {
                Some(json) => (Some(json), Some(text.to_string())),
                None => (Some(Value::String(text.to_string())), None),
            },
            Err(_) => {
                use base64::Engine as _;
                out.push((crate::cassette::ENCODING.into(), "base64".into()));
                (
                    Some(Value::String(
                        base64::engine::general_purpose::STANDARD.encode(body),
                    )),
                    None,
                )
            }
        }
    };
    // A text body keeps its type; one sent with none is text, not JSON.
    if matches!(body, Some(Value::String(_))) && content_type.is_none() {
        out.push(("content-type".into(), "text/plain".into()));
    }
    HttpRequest {
        method: method.to_ascii_uppercase(),
        url,
        headers: out,
        body,
        raw,
    }
}

/// Whether `url` (the API's base URL with the worker's path) is anywhere but below `base`
/// once resolved as the HTTP client resolves it (`..`, `%2e%2e` in any case, `.%2e`,
/// backslashes): another origin, a path outside the base path, or a segment below it that
/// a server decoding it once more would read as `..` (`%252e%252e`, `..%2f`). A URL that
/// does not parse leaves it too: nothing is sent that cannot be checked.
fn leaves_base(base: &str, url: &str) -> bool {
    let (Ok(b), Ok(u)) = (reqwest::Url::parse(base), reqwest::Url::parse(url)) else {
        return true;
    };
    if b.origin() != u.origin() {
        return true;
    }
    let root = b.path().trim_end_matches('/');
    let Some(below) = u.path().strip_prefix(root) else {
        return true;
    };
    !(below.is_empty() || below.starts_with('/')) || below.split('/').any(hides_dots)
}

/// A path segment that reads as `..` once `%25`, `%2e`, `%2f` and `%5c` are decoded (up to
/// three times over) and `\` is taken for `/`, as some servers take them.
fn hides_dots(segment: &str) -> bool {
    let mut s = segment.to_ascii_lowercase();
    for _ in 0..3 {
        let next = s
            .replace("%25", "%")
            .replace("%2e", ".")
            .replace("%2f", "/")
            .replace("%5c", "/")
            .replace('\\', "/");
        if next == s {
            break;
        }
        s = next;
    }
    s.split('/').any(|part| part == "..")
}

/// The response as the worker gets it: its status, its content type, and its body as it
/// came (JSON, text, or the bytes a base64 recording holds); final when a failure.
fn passed_on(resp: HttpResponse) -> Response {
    let status = StatusCode::from_u16(resp.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let content_type = header("content-type");
    let bytes = resp.body_bytes();
    let mut out = (status, bytes).into_response();
    let h = out.headers_mut();
    let content_type = content_type.unwrap_or_else(|| "application/json".into());
    if let Ok(v) = axum::http::HeaderValue::from_str(&content_type) {
        h.insert(axum::http::header::CONTENT_TYPE, v);
    }
    for (k, v) in &resp.headers {
        let k = k.to_ascii_lowercase();
        if matches!(k.as_str(), "retry-after" | "location" | "mcp-session-id")
            && let (Ok(name), Ok(value)) = (
                axum::http::HeaderName::from_bytes(k.as_bytes()),
                axum::http::HeaderValue::from_str(v),
            )
        {
            h.insert(name, value);
        }
    }
    if !status.is_success() {
        h.insert(
            "x-should-retry",
            axum::http::HeaderValue::from_static("false"),
        );
    }
    out
}

/// `fixtures/<upstream>/<METHOD>_<path>.json` (the path's `/` as `_`: `GET /orders` is
/// `GET_orders.json`), and its optional `.meta.json` beside it.
pub fn fixture_file(dir: &Path, upstream: &str, method: &str, path: &str) -> PathBuf {
    let name = path.trim_matches('/').replace('/', "_");
    dir.join(upstream)
        .join(format!("{}_{name}.json", method.to_ascii_uppercase()))
}

/// A fixture's `.meta.json`: what the answer adds to the body, and the query it is for.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    /// The answer's status (default 200).
    #[serde(default)]
    status: Option<u16>,
    /// The answer's headers (`content-type` defaults to JSON).
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    /// The query parameters a request must have (each as a string) for this answer.
    #[serde(default)]
    query: std::collections::BTreeMap<String, String>,
}

/// The hand-written answer of `step` in the case's fixtures folder `dir`, if there is one
/// (and its `query` matches `query`, the one sent); `Err`: a fixture that cannot be read,
/// named.
fn fixture(
    dir: &Path,
    upstream: &str,
    step: &Step,
    query: &std::collections::BTreeMap<String, String>,
) -> Result<Option<HttpResponse>, String> {
    let file = fixture_file(dir, upstream, &step.method, &step.path);
    let (body, raw) = match std::fs::read_to_string(&file) {
        // Passed on as written, byte for byte.
        Ok(text) => (
            serde_json::from_str::<Value>(&text).map_err(|e| {
                format!(
                    "{}: not JSON ({e}): a fixture holds the JSON body the API returns",
                    file.display()
                )
            })?,
            text,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let meta_file = file.with_extension("meta.json");
    let meta = match std::fs::read_to_string(&meta_file) {
        Ok(text) => serde_json::from_str::<Meta>(&text).map_err(|e| {
            format!(
                "{}: {e}: a fixture's meta file holds {{\"status\", \"headers\", \"query\"}}",
                meta_file.display()
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Meta::default(),
        Err(e) => return Err(format!("{}: {e}", meta_file.display())),
    };
    if meta.query.iter().any(|(k, v)| query.get(k) != Some(v)) {
        return Ok(None);
    }
    let mut headers: Vec<(String, String)> = meta
        .headers
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    if !headers.iter().any(|(k, _)| k == "content-type") {
        headers.push(("content-type".into(), "application/json".into()));
    }
    Ok(Some(HttpResponse {
        status: meta.status.unwrap_or(200),
        headers,
        body,
        latency: std::time::Duration::ZERO,
        raw: Some(raw),
    }))
}

/// The fixtures folder of a case: `fixtures/` in its case folder, or beside its JSONL file.
pub fn fixtures_dir(case: &crate::suite::Case) -> Option<PathBuf> {
    let dir = case.source.parent()?.join("fixtures");
    dir.is_dir().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mcp_answer_is_made_the_answer_to_the_requests_own_id() {
        let resp = |body: Value, raw: Option<&str>| HttpResponse {
            status: 200,
            headers: vec![],
            body,
            raw: raw.map(str::to_string),
            latency: std::time::Duration::ZERO,
        };
        // A stream: each answer's `data:` retargeted, a notification and the framing kept.
        let stream = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n\r\n";
        let out = answering(resp(Value::String(stream.into()), None), &json!(7));
        assert_eq!(
            out.body,
            Value::String(stream.replace("\"id\":3", "\"id\":7"))
        );
        // A JSON answer (an error too); one that already answers the id is kept byte for byte.
        let json_body = json!({"id": "a", "error": {"code": 1}});
        let raw = "{ \"id\": \"a\",  \"error\": {\"code\": 1} }";
        let out = answering(resp(json_body.clone(), Some(raw)), &json!("b"));
        assert_eq!(
            (out.body["id"].clone(), out.raw.as_deref()),
            (
                json!("b"),
                Some("{ \"id\": \"b\",  \"error\": {\"code\": 1} }")
            )
        );
        let out = answering(resp(json_body, Some(raw)), &json!("a"));
        assert_eq!(out.raw.as_deref(), Some(raw));
    }

    #[test]
    fn a_path_is_checked_below_the_base_as_the_client_resolves_it() {
        let base = "http://127.0.0.1:9/api";
        let leaves = |path: &str| leaves_base(base, &format!("{base}{path}"));
        for ok in [
            "/orders",
            "/",
            "",
            "/a/../orders",
            "/a/./b",
            "/%2e%2e.txt",
            "/a..b",
        ] {
            assert!(!leaves(ok), "{ok} stays below /api");
        }
        for bad in [
            "/../v1/models",
            "/%2e%2e/v1/models",
            "/%2E%2E/v1/models",
            "/%2E./v1/models",
            "/.%2e/v1/models",
            "/..\\v1\\models",
            "/a/../../v1",
            "/../apix",
            "/%252e%252e/v1",
            "/..%2fv1",
            "/..%5Cv1",
        ] {
            assert!(leaves(bad), "{bad} leaves /api");
        }
        // Another origin never passes, whatever its path.
        assert!(leaves_base(base, "http://127.0.0.1:10/api/orders"));
        // A base at the host's root: anything on that host is below it.
        assert!(!leaves_base("http://h:1", "http://h:1/../x"));
    }
}
