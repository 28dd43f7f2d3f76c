//! Your own provider, through the library: a model server with a wire format of its own
//! (not OpenAI's), served here on 127.0.0.1 so the example runs offline, and a `Provider`
//! that builds its requests and reads its responses. The bundled atlas suite
//! (`fixtures/world-atlas`) names it with `kind: atlas`; the run is live (nothing is recorded) and
//! prints the leaderboard the CLI prints.
//!
//! ```sh
//! cargo run --example own_provider
//! ```

use std::net::SocketAddr;

use llm_evals::cassette::{Accept, CallError, HttpRequest, HttpResponse, Mode, Verdict};
use llm_evals::provider::{ChatRequest, Completion, Provider};
use llm_evals::report::Report;
use llm_evals::report::{Terminal, Totals};
use llm_evals::results::Usage;
use llm_evals::runner::{RunOptions, evaluate};
use llm_evals::suite::config::Pricing;
use llm_evals::suite::{Contender, Suite};
use serde_json::{Value, json};

/// The atlas server's API: `POST /lookup {"model", "question"}` answers
/// `{"answer": "...", "tokens": {"in": N, "out": N}}`.
struct Atlas {
    base_url: String,
}

impl Provider for Atlas {
    fn models(&self) -> Option<Vec<String>> {
        Some(vec!["full".into(), "pocket".into()])
    }

    fn sends(&self) -> bool {
        true
    }

    fn base_url(&self, _contender: &Contender) -> Option<String> {
        Some(self.base_url.clone())
    }

    fn build_request(
        &self,
        contender: &Contender,
        req: &ChatRequest,
        _key: Option<&str>,
    ) -> Result<HttpRequest, CallError> {
        Ok(HttpRequest {
            method: "POST".into(),
            url: format!("{}/lookup", self.base_url),
            headers: vec![("content-type".into(), "application/json".into())],
            body: Some(json!({ "model": contender.info.model, "question": req.user })),
            raw: None,
        })
    }

    fn accept(&self) -> Accept {
        answered
    }

    fn read_response(
        &self,
        contender: &Contender,
        resp: HttpResponse,
        pricing: Option<&Pricing>,
    ) -> Result<Completion, CallError> {
        if let Verdict::Failure { reason, .. } = answered(&resp) {
            return Err(CallError::Transport(format!(
                "{}: {reason}",
                contender.id()
            )));
        }
        let tokens = |k: &str| resp.body.pointer(&format!("/tokens/{k}"))?.as_u64();
        let mut usage = Usage {
            input_tokens: tokens("in"),
            output_tokens: tokens("out"),
            ..Usage::default()
        };
        usage.cost_usd = llm_evals::provider::price(&usage, pricing).or(Some(0.0));
        Ok(Completion {
            text: resp.body["answer"].as_str().unwrap_or_default().to_string(),
            usage,
            latency_s: resp.latency.as_secs_f64(),
            ..Completion::default()
        })
    }
}

/// A response is an answer when it is a 2xx carrying one; anything else is an error of the
/// case (never a score), and a server error is worth another try.
fn answered(resp: &HttpResponse) -> Verdict {
    match resp.body.get("answer") {
        Some(Value::String(_)) if (200..300).contains(&resp.status) => Verdict::Success,
        _ => Verdict::Failure {
            reason: format!("HTTP {}: no answer in {}", resp.status, resp.body),
            transient: resp.status >= 500,
        },
    }
}

/// The model server: `full` knows four capitals, `pocket` only two.
fn lookup(model: &str, question: &str) -> String {
    let known: &[(&str, &str)] = match model {
        "full" => &[
            ("France", "Paris"),
            ("Japan", "Tokyo"),
            ("Kenya", "Nairobi"),
            ("Peru", "Lima"),
        ],
        _ => &[("France", "Paris"), ("Japan", "Tokyo")],
    };
    match known.iter().find(|(country, _)| question.contains(country)) {
        Some((_, capital)) => json!({ "capital": capital }).to_string(),
        None => "I do not know that one.".into(),
    }
}

/// Serves the atlas API on an ephemeral port of 127.0.0.1, on a thread of its own (the run
/// has its own runtime).
fn serve() -> std::io::Result<SocketAddr> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                Ok(l) => l,
                Err(e) => return tx.send(Err(e)).unwrap_or_default(),
            };
            let _ = tx.send(listener.local_addr());
            let app = axum::Router::new().route(
                "/lookup",
                axum::routing::post(|axum::Json(body): axum::Json<Value>| async move {
                    let model = body["model"].as_str().unwrap_or_default();
                    let question = body["question"].as_str().unwrap_or_default();
                    let answer = lookup(model, question);
                    axum::Json(json!({
                        "tokens": {
                            "in": question.split_whitespace().count(),
                            "out": answer.split_whitespace().count(),
                        },
                        "answer": answer,
                    }))
                }),
            );
            let _ = axum::serve(listener, app).await;
        });
    });
    rx.recv().map_err(std::io::Error::other)?
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = serve()?;
    let cwd = std::env::current_dir()?;
    // The atlas suite ships with the repository: run this from its root.
    let config = cwd.join("fixtures/world-atlas/evals/.llm-evals.config.yml");
    let suite = Suite::load(&config, &cwd)?;
    let atlas = Atlas {
        base_url: format!("http://{addr}"),
    };
    let options = RunOptions::default()
        .provider("atlas", atlas)
        // Called, not recorded: the server is right here. `Mode::Record` would write
        // cassettes that `Mode::Replay` (the default) answers from without it.
        .mode(Mode::Live);
    let run = evaluate(&suite, options)?;
    let leaderboard = Terminal {
        color: false,
        breakdown: false,
        totals: Totals::Overall,
        width: None,
        explain: true,
    }
    .render(&run, None);
    print!("{leaderboard}");
    Ok(())
}
