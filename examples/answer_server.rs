//! The benchmarks' model: a loopback OpenAI-compatible server answering every chat
//! completion with the JSON object at the end of the last message, after a fixed delay.
//! Bench-only (an example, so it is never installed); the Python server it replaces capped
//! a bare client at 78% of the ideal at 64 calls in flight, this one is not what a live
//! benchmark measures.
//!
//! ```text
//! cargo run --release --example answer_server -- PORT [DELAY_SECONDS]
//! ```
//!
//! It prints `listening on 127.0.0.1:PORT` once it accepts connections.

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().as_deref().unwrap_or("18766").parse()?;
    let delay: f64 = args.next().as_deref().unwrap_or("0").parse()?;
    let delay = Duration::from_secs_f64(delay);
    let app = Router::new()
        .route("/v1/chat/completions", post(answer))
        .with_state(delay);
    // With Nagle off no reply waits on a delayed ACK of a kept-alive connection.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    println!("listening on 127.0.0.1:{port}");
    axum::serve(listener, app).await?;
    Ok(())
}

/// The chat completion answering `body`: the text from the last `{` of its last message.
async fn answer(State(delay): State<Duration>, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let user = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let text = user.rfind('{').map_or(user, |at| &user[at..]);
    let reply = json!({
        "choices": [{"message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12, "cost": 0.00001},
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        reply.to_string(),
    )
        .into_response()
}
