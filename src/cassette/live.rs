//! The live HTTP client: reqwest with a per-call timeout, a cap on the size of a response
//! body (read chunk by chunk, never held whole when over), `EVALS_REDIRECT`-style redirects
//! and errors that say what happened ("connection refused", "timed out after 30s"). It is
//! the [`Upstream`] the runner wraps with retries and rate limits.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::http::{
    Accept, CallError, HttpRequest, HttpResponse, Route, Upstream, UpstreamFuture, too_large,
};
use super::session::DEFAULT_MAX_RESPONSE_BYTES;

/// The real HTTP client: a `reqwest::Client` with a per-call timeout and a cap on the size
/// of a response body.
#[derive(Debug, Clone)]
pub struct LiveClient {
    client: reqwest::Client,
    timeout: Duration,
    redirects: Vec<(String, String)>,
    max_response_bytes: u64,
}

/// How far past the limit an oversized body is still counted (never kept) for the figure
/// its error gives; a longer one is "over" this.
const COUNT_OVERSIZED_UP_TO: u64 = 1024 * 1024 * 1024;

impl LiveClient {
    /// A client whose calls time out after `timeout`. A request whose URL starts with the
    /// first string of a `redirects` pair is sent to the second instead (the canonical URL
    /// stays in the cassette and the fingerprint): used to record against a local server.
    pub fn new(
        timeout: Duration,
        redirects: Vec<(String, String)>,
    ) -> Result<LiveClient, CallError> {
        // reqwest is built without a default TLS crypto provider; install ring's once.
        // An error only means one is installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .build()
            .map_err(|e| CallError::Transport(format!("cannot start the HTTP client: {e}")))?;
        Ok(LiveClient {
            client,
            timeout,
            redirects,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        })
    }

    /// Refuses a response body over `limit` bytes while reading it, so a huge one is never
    /// held whole: an error of the case naming its size (`cassettes.max_response_bytes`).
    pub fn with_max_response_bytes(mut self, limit: u64) -> LiveClient {
        self.max_response_bytes = limit;
        self
    }

    fn target_url(&self, url: &str) -> String {
        for (from, to) in &self.redirects {
            if let Some(rest) = url.strip_prefix(from.as_str()) {
                return format!("{to}{rest}");
            }
        }
        url.to_string()
    }

    async fn send_now(&self, req: HttpRequest) -> Result<HttpResponse, CallError> {
        let method_name = req.method.to_ascii_uppercase();
        let target = self.target_url(&req.url);
        let what = if target == req.url {
            format!("{method_name} {}", req.url)
        } else {
            format!("{method_name} {} (sent to {target})", req.url)
        };
        let method = reqwest::Method::from_bytes(method_name.as_bytes())
            .map_err(|_| CallError::Transport(format!("{what}: not an HTTP method")))?;
        let mut builder = self.client.request(method, &target).timeout(self.timeout);
        let mut has_content_type = false;
        for (name, value) in &req.headers {
            if name.eq_ignore_ascii_case(super::http::ENCODING) {
                continue;
            }
            has_content_type |= name.eq_ignore_ascii_case("content-type");
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some(bytes) = req
            .body_bytes()
            .map_err(|e| CallError::Transport(format!("{what}: {e}")))?
        {
            if !has_content_type {
                builder = builder.header("content-type", "application/json");
            }
            builder = builder.body(bytes);
        }
        let started = Instant::now();
        let mut response = builder
            .send()
            .await
            .map_err(|e| self.send_error(&what, &target, &e))?;
        let status = response.status().as_u16();
        let mut headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let limit = self.max_response_bytes;
        let subject = format!("{what}: the response");
        if let Some(length) = response.content_length()
            && length > limit
        {
            return Err(too_large(&subject, Some(length), limit, limit));
        }
        // Read chunk by chunk: a body that passes the limit is dropped there, then only
        // counted (for the figure of the error), never held whole.
        let mut body: Vec<u8> = Vec::new();
        let mut seen: u64 = 0;
        let read_error =
            |e: reqwest::Error| CallError::Transport(format!("{what}: {}", self.describe(&e)));
        while let Some(chunk) = response.chunk().await.map_err(read_error)? {
            seen += chunk.len() as u64;
            if seen > limit {
                body = Vec::new();
                if seen > COUNT_OVERSIZED_UP_TO {
                    return Err(too_large(&subject, None, seen, limit));
                }
                continue;
            }
            body.extend_from_slice(&chunk);
        }
        if seen > limit {
            return Err(too_large(&subject, Some(seen), limit, limit));
        }
        let latency = started.elapsed();
        // The text kept as it came (`raw`), beside the JSON read from it: an exec worker
        // is sent back the provider's bytes, not evals' serialization of them.
        let (body, raw) = match String::from_utf8(body) {
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(json) => (json, Some(text)),
                Err(_) => (Value::String(text.clone()), Some(text)),
            },
            // Bytes (an image, a PDF from an exec adapter's other API): kept whole, in base64.
            Err(e) => {
                use base64::Engine as _;
                headers.push((super::http::ENCODING.into(), "base64".into()));
                let bytes = e.into_bytes();
                (
                    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
                    None,
                )
            }
        };
        Ok(HttpResponse {
            status,
            headers,
            body,
            raw,
            latency,
        })
    }

    /// The error of a request that got no response. A connection refused at a loopback or
    /// private address is a local server that is not running: [`CallError::NotListening`],
    /// which is not retried (waiting 15 seconds of back-off per case mends nothing); any
    /// other failure is a [`CallError::Transport`].
    fn send_error(&self, what: &str, target: &str, error: &reqwest::Error) -> CallError {
        if caused_by(error, std::io::ErrorKind::ConnectionRefused)
            && let Some(at) = local_address(target)
        {
            return CallError::NotListening(format!(
                "{what}: nothing listens on {at}: is the server running?"
            ));
        }
        CallError::Transport(format!("{what}: {}", self.describe(error)))
    }

    fn describe(&self, error: &reqwest::Error) -> String {
        if error.is_timeout() {
            return format!("timed out after {}", human_duration(self.timeout));
        }
        // The innermost cause says what happened ("Connection refused (os error 111)").
        if caused_by(error, std::io::ErrorKind::ConnectionRefused) {
            return "connection refused".into();
        }
        if caused_by(error, std::io::ErrorKind::TimedOut) {
            return format!("timed out after {}", human_duration(self.timeout));
        }
        let mut source: &dyn std::error::Error = error;
        while let Some(next) = source.source() {
            source = next;
        }
        if error.is_connect() {
            format!("cannot connect: {source}")
        } else {
            source.to_string()
        }
    }
}

/// Whether an I/O error of `kind` is among the causes of `error`.
fn caused_by(error: &reqwest::Error, kind: std::io::ErrorKind) -> bool {
    let mut source: &dyn std::error::Error = error;
    while let Some(next) = source.source() {
        if next
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
        {
            return true;
        }
        source = next;
    }
    false
}

/// `host:port` of `url` when its host is this machine or a private network: `localhost`
/// (and `*.localhost`), a loopback address (`127.0.0.0/8`, `::1`), `0.0.0.0` (which
/// connects to this machine; servers print it), a private IPv4 range (`10/8`,
/// `172.16/12`, `192.168/16`) or an IPv6 unique local one (`fc00::/7`); `None` for any
/// other host (a name is taken for remote: it may be a server still starting up).
pub(crate) fn local_address(url: &str) -> Option<String> {
    use std::net::{IpAddr, Ipv4Addr};
    let url = reqwest::Url::parse(url).ok()?;
    let port = url.port_or_known_default()?;
    // An IPv6 host is written in brackets (`[::1]`), as `host:port` needs it.
    let host = url.host_str()?;
    let v4 = |ip: Ipv4Addr| ip.is_loopback() || ip.is_private() || ip.is_unspecified();
    let local = match host.trim_start_matches('[').trim_end_matches(']').parse() {
        Ok(IpAddr::V4(ip)) => v4(ip),
        Ok(IpAddr::V6(ip)) => match ip.to_ipv4_mapped() {
            Some(mapped) => v4(mapped),
            None => {
                ip.is_loopback() || ip.is_unspecified() || (ip.segments()[0] & 0xfe00) == 0xfc00
            }
        },
        Err(_) => {
            let name = host.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    };
    local.then(|| format!("{host}:{port}"))
}

impl Upstream for LiveClient {
    fn send<'a>(
        &'a self,
        req: HttpRequest,
        _route: &'a Route,
        _accept: Accept,
    ) -> UpstreamFuture<'a> {
        Box::pin(self.send_now(req))
    }
}

fn human_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;
    use crate::cassette::any_2xx;

    fn prompt_to(url: &str) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            url: url.to_string(),
            headers: vec![],
            body: Some(json!({"prompt": 1})),
            raw: None,
        }
    }

    #[tokio::test]
    async fn live_client_names_timeouts_and_refused_connections() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
            .mount(&server)
            .await;
        let client = LiveClient::new(Duration::from_millis(200), vec![]).unwrap();
        let url = format!("{}/chat/completions", server.uri());
        let err = client
            .send(prompt_to(&url), &Route::default(), any_2xx)
            .await
            .unwrap_err();
        assert_eq!(
            err,
            CallError::Transport(format!("POST {url}: timed out after 200ms"))
        );

        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        // Refused on loopback: a local server that is not running, said as such.
        for host in ["127.0.0.1", "localhost"] {
            let url = format!("http://{host}:{port}/v1");
            let err = client
                .send(prompt_to(&url), &Route::default(), any_2xx)
                .await
                .unwrap_err();
            assert_eq!(
                err,
                CallError::NotListening(format!(
                    "POST {url}: nothing listens on {host}:{port}: is the server running?"
                ))
            );
        }
        // A redirected request names the address it was sent to.
        let canonical = "https://api.example.com/v1";
        let redirected = LiveClient::new(
            Duration::from_secs(5),
            vec![(canonical.into(), format!("http://127.0.0.1:{port}/v1"))],
        )
        .unwrap();
        let err = redirected
            .send(
                prompt_to(&format!("{canonical}/chat")),
                &Route::default(),
                any_2xx,
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "POST {canonical}/chat (sent to http://127.0.0.1:{port}/v1/chat): nothing listens on 127.0.0.1:{port}: is the server running?"
            )
        );
    }

    #[test]
    fn loopback_private_and_localhost_addresses_are_local_and_the_rest_remote() {
        for (url, at) in [
            ("http://127.0.0.1:8000/v1", "127.0.0.1:8000"),
            ("http://127.3.2.1:9", "127.3.2.1:9"),
            ("http://localhost:11434/v1", "localhost:11434"),
            ("http://LocalHost./v1", "localhost.:80"),
            ("http://vllm.localhost:8000", "vllm.localhost:8000"),
            ("http://0.0.0.0:8000/v1", "0.0.0.0:8000"),
            ("http://10.1.2.3:8080", "10.1.2.3:8080"),
            ("http://172.16.0.9:80", "172.16.0.9:80"),
            ("http://172.31.255.1:80", "172.31.255.1:80"),
            ("https://192.168.1.20/v1", "192.168.1.20:443"),
            ("http://[::1]:8000/v1", "[::1]:8000"),
            ("http://[fd12:3456::1]:8000", "[fd12:3456::1]:8000"),
            ("http://[fc00::1]:1", "[fc00::1]:1"),
            ("http://[::ffff:127.0.0.1]:8000", "[::ffff:7f00:1]:8000"),
        ] {
            assert_eq!(local_address(url).as_deref(), Some(at), "{url}");
        }
        for remote in [
            "https://api.openai.com/v1",
            "http://8.8.8.8:80",
            "http://172.32.0.1:80",
            "http://172.15.255.255:80",
            "http://192.169.0.1",
            "http://11.0.0.1",
            "http://[2001:db8::1]:80",
            "http://[fe00::1]:80",
            "http://vllm:8000/v1",
            "http://localhost.example.com/v1",
            "not a url",
        ] {
            assert_eq!(local_address(remote), None, "{remote}");
        }
    }

    #[tokio::test]
    async fn live_client_returns_error_statuses_and_text_bodies() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "3")
                    .set_body_string("slow down"),
            )
            .mount(&server)
            .await;
        let client = LiveClient::new(Duration::from_secs(5), vec![]).unwrap();
        let response = client
            .send(prompt_to(&server.uri()), &Route::default(), any_2xx)
            .await
            .unwrap();
        assert_eq!(response.status, 429);
        assert_eq!(response.body, json!("slow down"));
        assert!(
            response
                .headers
                .contains(&("retry-after".into(), "3".into()))
        );
        let sent = &server.received_requests().await.unwrap()[0];
        assert_eq!(
            sent.headers.get("content-type").unwrap(),
            "application/json"
        );
        assert_eq!(sent.body_json::<Value>().unwrap(), json!({"prompt": 1}));
    }

    #[tokio::test]
    async fn live_client_refuses_a_body_over_the_limit_with_its_size() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_string("x".repeat(3000)))
            .mount(&server)
            .await;
        let url = server.uri();
        let client = LiveClient::new(Duration::from_secs(5), vec![])
            .unwrap()
            .with_max_response_bytes(2048);
        let err = client
            .send(prompt_to(&url), &Route::default(), any_2xx)
            .await
            .unwrap_err();
        assert_eq!(
            err,
            CallError::TooLarge(format!(
                "POST {url}: the response is 2.9 KiB, over cassettes.max_response_bytes \
                 (2.0 KiB): raise it in the config if this is expected"
            ))
        );
        // At the limit it is an answer.
        let client = client.with_max_response_bytes(3000);
        let ok = client
            .send(prompt_to(&url), &Route::default(), any_2xx)
            .await
            .unwrap();
        assert_eq!(ok.body, json!("x".repeat(3000)));
    }

    /// Serves one chunked response (no Content-Length) of `chunks` chunks of `size` bytes.
    async fn chunked_server(chunks: usize, size: usize) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let chunk = format!("{size:x}\r\n{}\r\n", "y".repeat(size));
            for _ in 0..chunks {
                if socket.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
            }
            let _ = socket.write_all(b"0\r\n\r\n").await;
        });
        format!("http://{addr}/v1")
    }

    #[tokio::test]
    async fn live_client_reads_a_body_of_unknown_length_up_to_the_limit_only() {
        // 50 chunks of 64 KiB, no Content-Length: 3.1 MiB, over a 1 MiB limit.
        let url = chunked_server(50, 64 * 1024).await;
        let client = LiveClient::new(Duration::from_secs(10), vec![])
            .unwrap()
            .with_max_response_bytes(1024 * 1024);
        let err = client
            .send(prompt_to(&url), &Route::default(), any_2xx)
            .await
            .unwrap_err();
        assert_eq!(
            err,
            CallError::TooLarge(format!(
                "POST {url}: the response is 3.1 MiB, over cassettes.max_response_bytes \
                 (1.0 MiB): raise it in the config if this is expected"
            ))
        );
        let url = chunked_server(4, 1000).await;
        let ok = client
            .send(prompt_to(&url), &Route::default(), any_2xx)
            .await
            .unwrap();
        assert_eq!(ok.body, json!("y".repeat(4000)));
    }
}
