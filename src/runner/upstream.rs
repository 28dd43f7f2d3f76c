//! The live path below the cassette layer: rate limits, vendor pauses and retries around the
//! real HTTP client. Replayed calls never get here, so they never wait.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use super::ratelimit::RateLimits;
use super::retry::{Decision, RetryPolicy};
use crate::cassette::{Accept, CallError, HttpRequest, Route, Upstream, UpstreamFuture};

/// Wraps an upstream with the run's rate limits and retry policy.
pub struct Scheduled {
    inner: Arc<dyn Upstream>,
    limits: RateLimits,
    policy: RetryPolicy,
    /// Vendor → until when every call to it waits (set by a retry).
    pauses: Mutex<HashMap<String, Instant>>,
    calls: AtomicU64,
}

impl Scheduled {
    pub fn new(inner: Arc<dyn Upstream>, policy: RetryPolicy) -> Scheduled {
        Scheduled {
            inner,
            limits: RateLimits::default(),
            policy,
            pauses: Mutex::new(HashMap::new()),
            calls: AtomicU64::new(0),
        }
    }

    fn paused_until(&self, vendor: &str) -> Option<Instant> {
        let map = self
            .pauses
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(vendor).copied().filter(|t| *t > Instant::now())
    }

    fn pause(&self, vendor: &str, until: Instant) {
        let mut map = self
            .pauses
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let e = map.entry(vendor.to_string()).or_insert(until);
        if *e < until {
            *e = until;
        }
    }

    async fn send_now(
        &self,
        req: HttpRequest,
        route: &Route,
        accept: Accept,
    ) -> Result<crate::cassette::HttpResponse, CallError> {
        let seed = self.calls.fetch_add(1, Ordering::Relaxed);
        let mut attempt = 1u32;
        loop {
            while let Some(until) = self.paused_until(&route.vendor) {
                tokio::time::sleep_until(until).await;
            }
            self.limits.acquire(&route.limits).await;
            let result = self.inner.send(req.clone(), route, accept).await;
            match self.policy.decide(attempt, &result, accept, seed) {
                Decision::Accept => return result,
                Decision::GiveUp(message) => return Err(CallError::Transport(message)),
                Decision::Retry(wait) => {
                    self.pause(&route.vendor, Instant::now() + wait);
                    attempt += 1;
                }
            }
        }
    }
}

impl Upstream for Scheduled {
    fn send<'a>(
        &'a self,
        req: HttpRequest,
        route: &'a Route,
        accept: Accept,
    ) -> UpstreamFuture<'a> {
        Box::pin(self.send_now(req, route, accept))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::time::Duration;

    use super::*;
    use crate::cassette::{HttpResponse, any_2xx};

    /// Answers from a script, one response per call, and notes when each call came.
    struct Script {
        answers: Mutex<VecDeque<Result<u16, &'static str>>>,
        seen: Mutex<Vec<(String, Duration)>>,
        start: Instant,
    }

    impl Upstream for Script {
        fn send<'a>(
            &'a self,
            req: HttpRequest,
            _route: &'a Route,
            _accept: Accept,
        ) -> UpstreamFuture<'a> {
            Box::pin(async move {
                self.seen
                    .lock()
                    .unwrap()
                    .push((req.url.clone(), Instant::now() - self.start));
                match self.answers.lock().unwrap().pop_front().unwrap_or(Ok(200)) {
                    Ok(status) => Ok(HttpResponse {
                        status,
                        headers: if status == 429 {
                            vec![("retry-after".into(), "2".into())]
                        } else {
                            vec![]
                        },
                        body: serde_json::json!({}),
                        latency: Duration::from_millis(10),
                        raw: None,
                    }),
                    Err(m) => Err(CallError::Transport(m.into())),
                }
            })
        }
    }

    fn req(url: &str) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            url: url.into(),
            headers: vec![],
            body: None,
            raw: None,
        }
    }

    fn route(vendor: &str) -> Route {
        Route {
            vendor: vendor.into(),
            limits: vec![],
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_pauses_the_vendor_for_every_worker_then_succeeds() {
        let script = Arc::new(Script {
            answers: Mutex::new(VecDeque::from([Ok(429), Ok(200), Ok(200)])),
            seen: Mutex::new(vec![]),
            start: Instant::now(),
        });
        let s = Arc::new(Scheduled::new(script.clone(), RetryPolicy::default()));
        let r = route("openrouter/openai");
        let first = s.send(req("a"), &r, any_2xx).await.unwrap();
        assert_eq!(first.status, 200);
        // Another worker's call to the same vendor after the pause was set... waits out the
        // rest of it; one to another vendor would not.
        let seen = script.seen.lock().unwrap().clone();
        assert_eq!(seen[0].1, Duration::ZERO);
        assert_eq!(seen[1].1, Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn exhausted_retries_are_errors_with_backoff_between() {
        let script = Arc::new(Script {
            answers: Mutex::new(VecDeque::from([Err("connection reset"); 5])),
            seen: Mutex::new(vec![]),
            start: Instant::now(),
        });
        let s = Scheduled::new(
            script.clone(),
            RetryPolicy {
                jitter: 0.0,
                ..RetryPolicy::default()
            },
        );
        let err = s.send(req("a"), &route("v"), any_2xx).await.unwrap_err();
        assert_eq!(
            err,
            CallError::Transport("connection reset (after 5 attempts)".into())
        );
        let at: Vec<u64> = script
            .seen
            .lock()
            .unwrap()
            .iter()
            .map(|(_, t)| t.as_secs())
            .collect();
        assert_eq!(at, vec![0, 1, 3, 7, 15]);
    }

    /// A real port bound, then closed: nothing listens there.
    fn closed_port() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }

    #[tokio::test]
    async fn a_refused_loopback_server_errors_at_once_with_no_back_off() {
        let port = closed_port();
        let live = crate::cassette::LiveClient::new(Duration::from_secs(5), vec![]).unwrap();
        // The default policy: a retried refusal would wait 1 + 2 + 4 + 8 seconds.
        let s = Scheduled::new(Arc::new(live), RetryPolicy::default());
        let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
        let local = route("local");
        let call = s.send(req(&url), &local, any_2xx);
        // A deadline, not a benchmark: no back-off fits in it.
        let err = tokio::time::timeout(Duration::from_secs(1), call)
            .await
            .expect("a refused loopback call fails within a second")
            .unwrap_err();
        assert_eq!(
            err,
            CallError::NotListening(format!(
                "POST {url}: nothing listens on 127.0.0.1:{port}: is the server running?"
            ))
        );
    }

    /// Refuses every call, as a remote host or a local server would.
    struct Refusing {
        local: bool,
        seen: Mutex<Vec<Duration>>,
        start: Instant,
    }

    impl Upstream for Refusing {
        fn send<'a>(
            &'a self,
            _req: HttpRequest,
            _route: &'a Route,
            _accept: Accept,
        ) -> UpstreamFuture<'a> {
            Box::pin(async move {
                self.seen.lock().unwrap().push(Instant::now() - self.start);
                Err(if self.local {
                    CallError::NotListening(
                        "POST http://10.0.0.2:8000/v1: nothing listens on 10.0.0.2:8000: is the server running?".into(),
                    )
                } else {
                    CallError::Transport(
                        "POST https://api.example.com/v1: connection refused".into(),
                    )
                })
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_remote_host_keeps_its_retries_and_a_local_one_gets_none() {
        let policy = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        };
        for (local, attempts) in [(false, vec![0, 1, 3, 7, 15]), (true, vec![0])] {
            let refusing = Arc::new(Refusing {
                local,
                seen: Mutex::new(vec![]),
                start: Instant::now(),
            });
            let s = Scheduled::new(refusing.clone(), policy.clone());
            let err = s.send(req("a"), &route("v"), any_2xx).await.unwrap_err();
            let at: Vec<u64> = refusing
                .seen
                .lock()
                .unwrap()
                .iter()
                .map(Duration::as_secs)
                .collect();
            assert_eq!(at, attempts, "local: {local}");
            if local {
                assert!(matches!(err, CallError::NotListening(_)), "{err:?}");
            } else {
                assert_eq!(
                    err,
                    CallError::Transport(
                        "POST https://api.example.com/v1: connection refused (after 5 attempts)"
                            .into()
                    )
                );
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_holds_other_calls_to_the_vendor_only() {
        let script = Arc::new(Script {
            answers: Mutex::new(VecDeque::new()),
            seen: Mutex::new(vec![]),
            start: Instant::now(),
        });
        let s = Scheduled::new(script.clone(), RetryPolicy::default());
        s.pause("slow", Instant::now() + Duration::from_secs(5));
        s.send(req("other"), &route("fast"), any_2xx).await.unwrap();
        s.send(req("held"), &route("slow"), any_2xx).await.unwrap();
        let seen = script.seen.lock().unwrap().clone();
        assert_eq!(seen[0], ("other".to_string(), Duration::ZERO));
        assert_eq!(seen[1], ("held".to_string(), Duration::from_secs(5)));
    }
}
