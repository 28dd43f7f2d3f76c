//! Retries: a typed policy. 429, 408, 500, 502, 503, 504, 529 (unless its error says no
//! wait mends it: `insufficient_quota`, billing, a bad key), a 2xx the provider calls a
//! transient failure (an error object saying the server failed or is overloaded), and
//! dropped connections or timeouts are retried, up to 5 attempts in all, after `Retry-After` (seconds or an HTTP
//! date) or else 1, 2, 4, 8 seconds with jitter. A wait over 5 minutes is not retried. A
//! connection refused at a loopback or private address ([`CallError::NotListening`]: a local
//! server that is not running) fails at once; one refused by a remote host is retried.

use std::time::Duration;

use crate::cassette::{Accept, CallError, ErrorClass, HttpResponse, Verdict, classify_error};

/// Statuses worth another attempt.
pub const RETRY_STATUSES: &[u16] = &[408, 429, 500, 502, 503, 504, 529];

#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Waits after the 1st, 2nd, ... failed attempt when the provider names none.
    pub backoff: Vec<Duration>,
    /// Up to this share of the backoff is added at random, so workers do not retry in step.
    pub jitter: f64,
    /// A longer wait than this is not retried.
    pub max_wait: Duration,
    /// Multiplies `backoff` (never a `Retry-After`): 1 in use, small in tests, which set it
    /// through `EVALS_BACKOFF_SCALE` ([`crate::env::Env::backoff_scale`]).
    pub backoff_scale: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            backoff: [1, 2, 4, 8].map(Duration::from_secs).to_vec(),
            jitter: 0.25,
            max_wait: Duration::from_secs(300),
            backoff_scale: 1.0,
        }
    }
}

/// What to do after an attempt.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Decision {
    /// The attempt is the answer (a success, or a failure not worth retrying).
    Accept,
    /// Wait this long (pausing the vendor), then try again.
    Retry(Duration),
    /// Give up with this error.
    GiveUp(String),
}

impl RetryPolicy {
    /// The default policy with its backoff multiplied by `scale` when one is given (the
    /// environment's test knob, [`crate::env::Env::backoff_scale`]).
    pub fn scaled(scale: Option<f64>) -> RetryPolicy {
        RetryPolicy {
            backoff_scale: scale.unwrap_or(1.0),
            ..RetryPolicy::default()
        }
    }

    /// Decides after attempt number `attempt` (1-based). `accept` is the provider's
    /// judgement of a 2xx response; `seed` varies the jitter.
    pub fn decide(
        &self,
        attempt: u32,
        result: &Result<HttpResponse, CallError>,
        accept: Accept,
        seed: u64,
    ) -> Decision {
        let (what, asked) = match result {
            Ok(r) if (200..300).contains(&r.status) => match accept(r) {
                Verdict::Failure {
                    reason,
                    transient: true,
                } => (reason, retry_after(r)),
                // A success, or a failure another attempt would not mend (a bad key, no
                // quota, garbage): the caller makes it the case's error.
                _ => return Decision::Accept,
            },
            Ok(r) if !RETRY_STATUSES.contains(&r.status) => return Decision::Accept,
            // A retryable status whose error says no wait mends it (a 429 of
            // `insufficient_quota`: out of credit): the answer, so one attempt, no pause.
            Ok(r)
                if r.body
                    .get("error")
                    .is_some_and(|e| classify_error(e) == ErrorClass::Permanent) =>
            {
                return Decision::Accept;
            }
            Ok(r) => (format!("HTTP {}", r.status), retry_after(r)),
            Err(CallError::Transport(m)) => (m.clone(), None),
            // Nothing listens at a local address: no wait starts the server, and every case
            // of the contender would wait 15 seconds to learn it.
            Err(CallError::NotListening(_)) => return Decision::Accept,
            Err(_) => return Decision::Accept,
        };
        if attempt >= self.max_attempts {
            return match result {
                Ok(r) if (200..300).contains(&r.status) => {
                    Decision::GiveUp(format!("{what} (after {attempt} attempts)"))
                }
                Ok(r) => Decision::GiveUp(format!(
                    "{what} (after {attempt} attempts){}",
                    error_detail(&r.body)
                )),
                Err(e) => Decision::GiveUp(format!("{e} (after {attempt} attempts)")),
            };
        }
        let wait = match asked {
            Some(w) => w,
            None => {
                let base = self
                    .backoff
                    .get(attempt as usize - 1)
                    .or(self.backoff.last())
                    .copied()
                    .unwrap_or(Duration::from_secs(1))
                    .mul_f64(self.backoff_scale);
                base.mul_f64(1.0 + self.jitter * unit(seed ^ u64::from(attempt)))
            }
        };
        if wait > self.max_wait {
            return Decision::GiveUp(format!(
                "{what}: the provider asked to wait {}s (Retry-After), over the {}s limit; not retried",
                wait.as_secs(),
                self.max_wait.as_secs()
            ));
        }
        Decision::Retry(wait)
    }
}

/// `: message` from an error body (`{"error": {"message": ...}}` or text), or nothing.
fn error_detail(body: &serde_json::Value) -> String {
    let text = match body {
        serde_json::Value::Null => return String::new(),
        serde_json::Value::String(s) => s.clone(),
        v => v
            .pointer("/error/message")
            .and_then(|m| m.as_str())
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string()),
    };
    // Scrubbed before it is cut: a key across the cut would keep its first half.
    let t: String = crate::secrets::scrub(&text).chars().take(200).collect();
    if t.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", t.trim())
    }
}

/// `Retry-After` as seconds or an HTTP date.
fn retry_after(r: &HttpResponse) -> Option<Duration> {
    let v = r
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("retry-after"))?
        .1
        .trim()
        .to_string();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs >= 0.0 && secs.is_finite()).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(&v).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// A number in [0, 1) from a seed (splitmix64); jitter needs spread, not secrecy.
fn unit(seed: u64) -> f64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassette::any_2xx;

    fn status(s: u16, retry_after: Option<&str>) -> Result<HttpResponse, CallError> {
        Ok(HttpResponse {
            status: s,
            headers: retry_after
                .map(|v| vec![("retry-after".to_string(), v.to_string())])
                .unwrap_or_default(),
            body: serde_json::Value::Null,
            latency: Duration::ZERO,
            raw: None,
        })
    }

    #[test]
    fn success_and_client_errors_are_answers() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.decide(1, &status(200, None), any_2xx, 0),
            Decision::Accept
        );
        assert_eq!(
            p.decide(1, &status(400, None), any_2xx, 0),
            Decision::Accept
        );
        assert_eq!(
            p.decide(1, &status(401, None), any_2xx, 0),
            Decision::Accept
        );
    }

    #[test]
    fn every_retry_status_is_retried_with_growing_backoff() {
        let p = RetryPolicy::default();
        for s in RETRY_STATUSES {
            for (attempt, base) in [(1u32, 1.0f64), (2, 2.0), (3, 4.0), (4, 8.0)] {
                let Decision::Retry(w) = p.decide(attempt, &status(*s, None), any_2xx, 7) else {
                    panic!("{s} attempt {attempt} not retried");
                };
                assert!(
                    w.as_secs_f64() >= base && w.as_secs_f64() < base * 1.25,
                    "{s}: {w:?}"
                );
            }
        }
    }

    #[test]
    fn five_attempts_in_all() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.decide(5, &status(503, None), any_2xx, 0),
            Decision::GiveUp("HTTP 503 (after 5 attempts)".into())
        );
        let e: Result<HttpResponse, CallError> =
            Err(CallError::Transport("connection reset".into()));
        assert!(matches!(p.decide(4, &e, any_2xx, 0), Decision::Retry(_)));
        assert_eq!(
            p.decide(5, &e, any_2xx, 0),
            Decision::GiveUp("connection reset (after 5 attempts)".into())
        );
    }

    #[test]
    fn nothing_listening_on_a_local_server_fails_at_once_and_a_refused_remote_is_retried() {
        let p = RetryPolicy::default();
        let local: Result<HttpResponse, CallError> = Err(CallError::NotListening(
            "POST http://127.0.0.1:9/v1: nothing listens on 127.0.0.1:9: is the server running?"
                .into(),
        ));
        assert_eq!(p.decide(1, &local, any_2xx, 0), Decision::Accept);
        let remote: Result<HttpResponse, CallError> = Err(CallError::Transport(
            "POST https://api.example.com/v1: connection refused".into(),
        ));
        assert!(matches!(
            p.decide(1, &remote, any_2xx, 0),
            Decision::Retry(_)
        ));
    }

    /// OpenAI's "out of credit" 429 (the body openai-python's docs and its issue #1051
    /// quote): no wait mends it.
    #[test]
    fn a_429_out_of_quota_is_not_retried_but_a_rate_limited_429_is() {
        let p = RetryPolicy::default();
        let with = |error: serde_json::Value| -> Result<HttpResponse, CallError> {
            Ok(HttpResponse {
                status: 429,
                headers: vec![],
                body: serde_json::json!({ "error": error }),
                latency: Duration::ZERO,
                raw: None,
            })
        };
        let quota = with(serde_json::json!({
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota", "param": null, "code": "insufficient_quota"
        }));
        assert_eq!(p.decide(1, &quota, any_2xx, 0), Decision::Accept);
        let limited = with(serde_json::json!({
            "message": "Rate limit reached for gpt-4o-mini", "type": "requests", "code": "rate_limit_exceeded"
        }));
        assert!(matches!(
            p.decide(1, &limited, any_2xx, 0),
            Decision::Retry(_)
        ));
    }

    #[test]
    fn retry_after_seconds_and_dates_are_honoured() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.decide(1, &status(429, Some("3")), any_2xx, 0),
            Decision::Retry(Duration::from_secs(3))
        );
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(20)).to_rfc2822();
        let Decision::Retry(w) = p.decide(1, &status(429, Some(&soon)), any_2xx, 0) else {
            panic!()
        };
        assert!(
            w <= Duration::from_secs(20) && w >= Duration::from_secs(18),
            "{w:?}"
        );
    }

    #[test]
    fn a_wait_over_five_minutes_is_not_retried() {
        let p = RetryPolicy::default();
        let Decision::GiveUp(m) = p.decide(1, &status(429, Some("600")), any_2xx, 0) else {
            panic!()
        };
        assert!(m.contains("600s") && m.contains("not retried"), "{m}");
    }

    /// A provider's judgement for the tests: the body names the verdict.
    fn by_body(r: &HttpResponse) -> Verdict {
        match r.body.as_str() {
            Some("overloaded") => Verdict::Failure {
                reason: "provider error (overloaded_error): Overloaded".into(),
                transient: true,
            },
            Some("no quota") => Verdict::Failure {
                reason: "provider error (insufficient_quota): no quota".into(),
                transient: false,
            },
            _ => Verdict::Success,
        }
    }

    fn ok_with(body: &str) -> Result<HttpResponse, CallError> {
        Ok(HttpResponse {
            status: 200,
            headers: vec![],
            body: serde_json::json!(body),
            latency: Duration::ZERO,
            raw: None,
        })
    }

    #[test]
    fn a_2xx_the_provider_calls_transient_is_retried_like_a_5xx_and_a_permanent_one_is_not() {
        let p = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::default()
        };
        assert_eq!(
            p.decide(1, &ok_with("overloaded"), by_body, 0),
            Decision::Retry(Duration::from_secs(1))
        );
        assert_eq!(
            p.decide(5, &ok_with("overloaded"), by_body, 0),
            Decision::GiveUp(
                "provider error (overloaded_error): Overloaded (after 5 attempts)".into()
            )
        );
        assert_eq!(
            p.decide(1, &ok_with("no quota"), by_body, 0),
            Decision::Accept
        );
        assert_eq!(p.decide(1, &ok_with("fine"), by_body, 0), Decision::Accept);
    }

    #[test]
    fn the_backoff_scale_shrinks_the_backoff_but_never_a_retry_after() {
        let p = RetryPolicy {
            jitter: 0.0,
            ..RetryPolicy::scaled(Some(0.01))
        };
        let busy = |headers: Vec<(String, String)>| {
            Ok(HttpResponse {
                status: 503,
                headers,
                body: serde_json::Value::Null,
                latency: Duration::ZERO,
                raw: None,
            })
        };
        assert_eq!(
            p.decide(2, &busy(vec![]), any_2xx, 0),
            Decision::Retry(Duration::from_millis(20))
        );
        assert_eq!(
            p.decide(
                2,
                &busy(vec![("retry-after".into(), "3".into())]),
                any_2xx,
                0
            ),
            Decision::Retry(Duration::from_secs(3))
        );
        assert_eq!(RetryPolicy::scaled(None), RetryPolicy::default());
    }

    #[test]
    fn cassette_misses_are_not_retried() {
        let p = RetryPolicy::default();
        let miss = crate::cassette::Miss {
            path: "c.json".into(),
            reason: crate::cassette::MissReason::NoCassette,
            hint: String::new(),
        };
        let e: Result<HttpResponse, CallError> = Err(miss.into());
        assert_eq!(p.decide(1, &e, any_2xx, 0), Decision::Accept);
    }
}
