//! Rate limits: `rate_limit: { burst, per_minute }` on a provider, a vendor or a model. The
//! first `burst` calls of the run go at once, then `per_minute`, evenly spaced; a burst does
//! not refill. One table of limiters per run, so limits hold across every experiment and case.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::cassette::Limit;

#[derive(Debug)]
struct Limiter {
    burst_left: u32,
    interval: Duration,
    /// The earliest time the next paced call may go.
    next: Option<Instant>,
}

impl Limiter {
    fn new(limit: &Limit) -> Limiter {
        Limiter {
            burst_left: limit.burst,
            interval: Duration::from_secs_f64(60.0 / f64::from(limit.per_minute.max(1))),
            next: None,
        }
    }

    /// Reserves a slot and returns when it is.
    fn reserve(&mut self, now: Instant) -> Instant {
        if self.burst_left > 0 {
            self.burst_left -= 1;
            let after = now + self.interval;
            self.next = Some(self.next.map_or(after, |n| n.max(after)));
            return now;
        }
        let slot = self.next.map_or(now, |n| n.max(now));
        self.next = Some(slot + self.interval);
        slot
    }
}

/// Every limiter of a run, keyed by where the limit was set.
#[derive(Debug, Default)]
pub struct RateLimits {
    limiters: Mutex<HashMap<String, Limiter>>,
}

impl RateLimits {
    /// Waits until every limit that matches lets the call go; returns how long it waited.
    pub async fn acquire(&self, limits: &[Limit]) -> Duration {
        if limits.is_empty() {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let slot = {
            let mut table = self
                .limiters
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            limits
                .iter()
                .map(|l| {
                    table
                        .entry(l.key.clone())
                        .or_insert_with(|| Limiter::new(l))
                        .reserve(now)
                })
                .max()
                .unwrap_or(now)
        };
        if slot > now {
            tokio::time::sleep_until(slot).await;
        }
        slot.saturating_duration_since(now)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn limit(key: &str, burst: u32, per_minute: u32) -> Limit {
        Limit {
            key: key.into(),
            burst,
            per_minute,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn burst_then_evenly_spaced_across_concurrent_callers() {
        let limits = Arc::new(RateLimits::default());
        let start = Instant::now();
        let mut handles = Vec::new();
        // Two "experiments" share one provider limit: 3 at once, then 60/min (one a second).
        for _ in 0..2 {
            for _ in 0..4 {
                let limits = limits.clone();
                handles.push(tokio::spawn(async move {
                    limits.acquire(&[limit("openrouter", 3, 60)]).await;
                    Instant::now().duration_since(start)
                }));
            }
        }
        let mut times = Vec::new();
        for h in handles {
            times.push(h.await.unwrap().as_secs_f64().round() as u64);
        }
        times.sort();
        assert_eq!(times, vec![0, 0, 0, 1, 2, 3, 4, 5]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_waits_on_every_matching_limit() {
        let limits = RateLimits::default();
        let both = [
            limit("openrouter", 10, 600),
            limit("openrouter.anthropic", 1, 30),
        ];
        assert_eq!(limits.acquire(&both).await, Duration::ZERO);
        // The vendor's limit (30/min: every 2 s) is the slower one.
        assert_eq!(limits.acquire(&both).await, Duration::from_secs(2));
        assert_eq!(limits.acquire(&both).await, Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_does_not_refill() {
        let limits = RateLimits::default();
        let l = [limit("m", 2, 60)];
        limits.acquire(&l).await;
        limits.acquire(&l).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
        // Thirty seconds of quiet give back no burst: the next call is paced, not free...
        let t0 = Instant::now();
        limits.acquire(&l).await;
        limits.acquire(&l).await;
        assert_eq!(Instant::now().duration_since(t0), Duration::from_secs(1));
    }
}
