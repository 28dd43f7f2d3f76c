//! The one wiremock helper every HTTP test uses: a `MockServer` on loopback with the
//! current-thread runtime that drives the test's calls to it, mounting, what it received,
//! and stopping it.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockBuilder, MockServer, Request, Respond, ResponseTemplate};

/// A mock server on loopback, with the runtime that drives the test's calls to it.
pub struct Server {
    rt: tokio::runtime::Runtime,
    server: Option<MockServer>,
    uri: String,
}

impl Server {
    pub fn start() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let server = rt.block_on(MockServer::start());
        let uri = server.uri();
        Server {
            rt,
            server: Some(server),
            uri,
        }
    }

    /// The server's base URI; still known after [`Server::stop`].
    pub fn uri(&self) -> String {
        self.uri.clone()
    }

    fn server(&self) -> &MockServer {
        self.server.as_ref().expect("the mock server is stopped")
    }

    pub fn mount(&self, mock: Mock) {
        self.rt.block_on(mock.mount(self.server()));
    }

    /// Answers every POST to `route` with `responder`.
    pub fn answer(&self, route: &str, responder: impl Respond + 'static) {
        self.mount(post(route).respond_with(responder));
    }

    /// Forgets every mounted mock and every request received.
    pub fn reset(&self) {
        self.rt.block_on(self.server().reset());
    }

    /// The requests received, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.rt
            .block_on(self.server().received_requests())
            .unwrap_or_default()
    }

    /// How many requests reached the server.
    pub fn hits(&self) -> usize {
        self.requests().len()
    }

    /// The JSON bodies received, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).expect("json body"))
            .collect()
    }

    /// The values of header `name` on the requests that carried it, in order.
    pub fn headers(&self, name: &str) -> Vec<String> {
        self.requests()
            .iter()
            .filter_map(|r| r.headers.get(name).map(|v| v.to_str().unwrap().to_string()))
            .collect()
    }

    /// (method, path, body) of every request received; a body that is not JSON is `null`.
    pub fn seen(&self) -> Vec<(String, String, Value)> {
        self.requests()
            .iter()
            .map(|r| {
                (
                    r.method.to_string(),
                    r.url.path().to_string(),
                    serde_json::from_slice(&r.body).unwrap_or(Value::Null),
                )
            })
            .collect()
    }

    /// Shuts the server down (its port refuses connections from now on); a mock mounted
    /// with an expectation is verified here. Dropping the `Server` does the same (wiremock
    /// verifies on drop, without panicking twice when a test already failed).
    pub fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            self.rt.block_on(server.verify());
            drop(server);
        }
    }
}

/// Any POST to `route`.
pub fn post(route: &str) -> MockBuilder {
    Mock::given(method("POST")).and(path(route))
}

/// An OpenAI-style chat completion answering `content`, with `usage`.
pub fn chat(content: &str, usage: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "gen-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": usage,
    }))
}
