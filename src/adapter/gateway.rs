//! The gateway: an OpenAI-compatible endpoint `evals` serves on 127.0.0.1 for exec adapters.
//!
//! Each worker process gets its own token as `OPENAI_API_KEY`; while a worker is on a case,
//! its token is bound to that case's contender and cassette session. A call is rewritten
//! with the contender's model (and its effort, temperature and max tokens, where set) and
//! sent to the contender's real provider, with the real key, through the cassette layer: an
//! exec adapter's calls are recorded and replayed like any other. Unknown tokens are refused.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::cassette::{CallError, Session, Verdict};
use crate::provider::Provider;
use crate::results::{CaseError, CaseErrorKind, Usage};
use crate::suite::config::Pricing;
use crate::suite::{Case, Contender};

/// What a token is bound to while its worker is on a case.
pub struct Binding {
    pub contender: Contender,
    /// The case the worker is on (an offline provider answers from it: `mock_response`).
    pub case: Case,
    /// The contender's provider: it forwards the call, or answers it.
    pub provider: Arc<dyn Provider>,
    pub session: Arc<Session>,
    pub api_key: Option<String>,
    pub pricing: Option<Pricing>,
    /// Usage and call latency summed over the case's calls.
    pub spent: Arc<Mutex<Spent>>,
}

/// What a case's calls through the gateway cost.
#[derive(Debug, Clone, Default)]
pub struct Spent {
    pub usage: Usage,
    pub latency_s: f64,
    pub calls: usize,
    /// The first call that failed below the gateway (transport, cassette miss): the case's
    /// error, whatever the adapter makes of the failed call.
    pub error: Option<CaseError>,
}

#[derive(Default)]
struct Bindings {
    by_token: Mutex<HashMap<String, Arc<Binding>>>,
}

/// A running gateway; dropped with the run's runtime.
pub struct Gateway {
    pub addr: SocketAddr,
    bindings: Arc<Bindings>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("addr", &self.addr).finish()
    }
}

impl Gateway {
    /// Serves on an ephemeral port of 127.0.0.1 (loopback only).
    pub async fn start() -> std::io::Result<Gateway> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let bindings = Arc::new(Bindings::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .with_state(bindings.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Gateway { addr, bindings })
    }

    /// `http://127.0.0.1:PORT/v1`, handed to workers as `OPENAI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn bind(&self, token: &str, binding: Binding) {
        let mut map = self
            .bindings
            .by_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.insert(token.to_string(), Arc::new(binding));
    }

    pub fn unbind(&self, token: &str) {
        let mut map = self
            .bindings
            .by_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.remove(token);
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"message": message, "type": "evals_gateway"}})),
    )
        .into_response()
}

async fn chat(State(bindings): State<Arc<Bindings>>, headers: HeaderMap, body: String) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let binding = {
        let map = bindings
            .by_token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(token).cloned()
    };
    let Some(b) = binding else {
        return error(
            StatusCode::UNAUTHORIZED,
            "unknown token: use the OPENAI_API_KEY evals gave this worker, while it is on a case",
        );
    };
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let forwarded = b.provider.sends().then(|| {
        b.provider
            .forward_request(&b.contender, request.clone(), b.api_key.as_deref())
    });
    // A forwarded response is judged here; a translated one was judged (and read) by its
    // provider already, and is a chat completion by construction.
    let (result, accept) = match forwarded.flatten() {
        Some(req) => {
            let accept = b.provider.accept_forwarded();
            (b.session.send(req, accept).await, accept)
        }
        None => (
            translated_response(&b, &request).await,
            crate::cassette::any_2xx as crate::cassette::Accept,
        ),
    };
    let mut spent = b
        .spent
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    spent.calls += 1;
    match result {
        Ok(resp) => {
            spent.latency_s += resp.latency.as_secs_f64();
            if !(200..300).contains(&resp.status) {
                // A rejected key, a bad request, an exhausted rate limit: a failure of the
                // call, not an answer of the model. The case errors, whatever the adapter
                // makes of it (the adapter still gets the response, as it would in production).
                let detail = resp
                    .body
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        // Scrubbed before it is cut: a key across the cut would keep half.
                        crate::secrets::scrub(&resp.body.to_string())
                            .chars()
                            .take(200)
                            .collect()
                    });
                spent.error.get_or_insert_with(|| {
                    CaseError::new(
                        CaseErrorKind::Transport,
                        format!("{}: HTTP {}: {detail}", b.contender.id(), resp.status),
                    )
                });
            } else if let Verdict::Failure { reason, .. } = accept(&resp) {
                // A 200 holding garbage or an error object: not an answer either (and not
                // recorded). The adapter gets it as it came.
                spent.error.get_or_insert_with(|| {
                    CaseError::new(
                        CaseErrorKind::Transport,
                        format!("{}: {reason}", b.contender.id()),
                    )
                });
            }
            let mut usage = crate::provider::usage_of(&resp.body);
            if usage.cost_usd.is_none() {
                usage.cost_usd = crate::provider::price(&usage, b.pricing.as_ref());
            }
            spent.usage.add(&usage);
            let status = StatusCode::from_u16(resp.status).unwrap_or(StatusCode::BAD_GATEWAY);
            let content_type = resp
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                .map(|(_, v)| v.clone());
            match resp.body {
                // A body that was not JSON (server-sent events of a `stream: true` call, or
                // text) goes back as it came, with its content type.
                Value::String(text)
                    if content_type.as_deref().is_some_and(|t| !t.contains("json")) =>
                {
                    (
                        status,
                        [(
                            axum::http::header::CONTENT_TYPE,
                            content_type.unwrap_or_default(),
                        )],
                        text,
                    )
                        .into_response()
                }
                body => (status, axum::Json(body)).into_response(),
            }
        }
        Err(e) => {
            let message = e.to_string();
            spent.error.get_or_insert_with(|| CaseError::from(e));
            error(StatusCode::BAD_GATEWAY, &message)
        }
    }
}

/// A provider that does not speak the OpenAI shape itself (`fake`, `mock`, one of yours):
/// the call's messages asked of it as the prompt adapter would ask them, through the case's
/// cassette session, and its answer sent back OpenAI-shaped.
async fn translated_response(
    b: &Binding,
    request: &Value,
) -> Result<crate::cassette::HttpResponse, CallError> {
    let (contender, case) = (&b.contender, &b.case);
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let text_of = |role: &str| {
        messages
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some(role))
            .and_then(|m| m.get("content").and_then(Value::as_str))
            .map(str::to_string)
    };
    let req = crate::provider::ChatRequest {
        system: text_of("system"),
        user: text_of("user").unwrap_or_default(),
        json: false,
    };
    let completion = crate::provider::complete(
        b.provider.as_ref(),
        contender,
        case,
        &req,
        b.api_key.as_deref(),
        b.pricing.as_ref(),
        &b.session,
    )
    .await?;
    Ok(crate::cassette::HttpResponse {
        status: 200,
        headers: vec![],
        body: json!({
            "object": "chat.completion",
            "model": contender.info.model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": completion.text}}],
            "usage": {
                "prompt_tokens": completion.usage.input_tokens,
                "completion_tokens": completion.usage.output_tokens,
                "cost": completion.usage.cost_usd,
            },
        }),
        latency: std::time::Duration::from_secs_f64(completion.latency_s.max(0.0)),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::cassette::{
        Accept, CassetteOptions, HttpRequest, HttpResponse, Mode, Route, Transport, Upstream,
        UpstreamFuture,
    };
    use crate::provider::{ChatRequest, Completion, Registry};
    use crate::suite::config::Pricing;

    /// A provider with a wire format of its own (`{"question"}` in, `{"answer"}` out) and
    /// no OpenAI shape to forward.
    struct Atlas;

    impl Provider for Atlas {
        fn sends(&self) -> bool {
            true
        }

        fn build_request(
            &self,
            c: &Contender,
            req: &ChatRequest,
            _key: Option<&str>,
        ) -> Result<HttpRequest, CallError> {
            Ok(HttpRequest {
                method: "POST".into(),
                url: "http://atlas.test/lookup".into(),
                headers: vec![],
                body: Some(json!({"model": c.info.model, "question": req.user})),
            })
        }

        fn read_response(
            &self,
            _: &Contender,
            resp: crate::cassette::HttpResponse,
            _: Option<&Pricing>,
        ) -> Result<Completion, CallError> {
            Ok(Completion {
                text: resp.body["answer"].as_str().unwrap_or_default().into(),
                usage: Usage {
                    input_tokens: Some(3),
                    output_tokens: Some(1),
                    cost_usd: Some(0.5),
                },
                latency_s: 0.25,
            })
        }
    }

    /// Answers every request with Paris, keeping what it was sent.
    #[derive(Default)]
    struct Server {
        sent: Mutex<Vec<HttpRequest>>,
    }

    impl Upstream for Server {
        fn send<'a>(&'a self, req: HttpRequest, _: &'a Route, _: Accept) -> UpstreamFuture<'a> {
            self.sent.lock().unwrap().push(req);
            Box::pin(async {
                Ok(HttpResponse {
                    status: 200,
                    headers: vec![],
                    body: json!({"answer": "Paris"}),
                    latency: std::time::Duration::from_millis(250),
                })
            })
        }
    }

    async fn post(gateway: &Gateway, token: &str, body: &Value) -> Value {
        let body = body.to_string();
        let mut stream = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).await.unwrap();
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        serde_json::from_str(body).unwrap()
    }

    #[tokio::test]
    async fn a_call_to_a_provider_that_does_not_speak_openai_is_translated_both_ways() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let suite = crate::suite::Suite::load(
            &root.join("fixtures/world-atlas/evals/.llm-evals.config.yml"),
            root,
        )
        .unwrap();
        let mut providers = Registry::default();
        providers.register("atlas", Atlas);
        let lineup = crate::suite::lineup::expand(&suite.config, &Default::default(), &providers);
        let contender = lineup.contenders[0].clone();
        let case = suite.cases.cases.get(0).unwrap();
        let server = Arc::new(Server::default());
        let transport = Transport::new(Mode::Live, CassetteOptions::default(), server.clone());
        let session = transport
            .session(
                &crate::runner::cassette_key(&contender, &case),
                crate::cassette::SessionMeta {
                    case: case.key(),
                    contender: (&contender.info).into(),
                    hint: String::new(),
                    route: Route::default(),
                    base_url: String::new(),
                },
            )
            .unwrap();
        let gateway = Gateway::start().await.unwrap();
        let spent = Arc::new(Mutex::new(Spent::default()));
        gateway.bind(
            "tok",
            Binding {
                contender: contender.clone(),
                case,
                provider: Arc::new(Atlas),
                session: Arc::new(session),
                api_key: None,
                pricing: None,
                spent: spent.clone(),
            },
        );
        let answer = post(
            &gateway,
            "tok",
            &json!({"model": "anything", "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "The capital of France?"},
            ]}),
        )
        .await;
        assert_eq!(
            answer["choices"][0]["message"]["content"], "Paris",
            "{answer}"
        );
        assert_eq!(answer["usage"]["prompt_tokens"], 3);
        // The provider's own request, from the call's last user message.
        let sent = server.sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 1);
        assert_eq!(
            sent[0].body,
            Some(json!({"model": contender.info.model, "question": "The capital of France?"}))
        );
        let spent = spent.lock().unwrap().clone();
        assert_eq!((spent.calls, spent.error), (1, None));
        assert_eq!(spent.usage.cost_usd, Some(0.5));
        assert!((spent.latency_s - 0.25).abs() < 1e-9);
    }
}
