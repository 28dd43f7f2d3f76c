//! What the database stores (PostgreSQL, MySQL) share beside the SQL: each drives its
//! async client on a runtime of its own, off any caller's runtime (`outside_runtime`);
//! every wait on the server is bounded ([`Limits`]: the connect timeout, the statement
//! timeout and its grace, the lock wait), and a server that said nothing within the connect
//! timeout is not asked again for as long ([`silent_lately`]), so `check` waits once, not
//! once to store and once to find its baseline. Failures become [`HistoryError::Server`]
//! or, for silence, [`HistoryError::ServerTimeout`], named by the URL without its password.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::HistoryError;
use crate::error::Error;

/// How much longer than the statement timeout the client waits for the server's own
/// "statement timeout" error before it takes the server for gone.
pub const SILENCE_GRACE: Duration = Duration::from_secs(5);

/// A wait for another runner's lock (migrating, numbering its run) may take this many
/// statement timeouts: that runner may be storing a large run meanwhile.
pub const LOCK_WAIT_FACTOR: u32 = 10;

/// A failed call on the server: what it (or the client) said, or nothing in time.
#[derive(Debug)]
pub(super) enum Fail {
    /// The server's or the client's error, in words.
    Said(String),
    /// No answer within a limit; the text names it and the key that changes it.
    Silent(String),
}

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fail::Said(s) | Fail::Silent(s) => f.write_str(s),
        }
    }
}

/// A failed call as the store's error, named by `shown` (the URL without its password).
pub(super) fn server_err(shown: &str, e: Fail) -> Error {
    match e {
        Fail::Said(why) => HistoryError::Server {
            shown: shown.to_string(),
            why: crate::secrets::scrub(&why).into_owned(),
        },
        Fail::Silent(why) => HistoryError::ServerTimeout {
            shown: shown.to_string(),
            why,
        },
    }
    .into()
}

/// How a store's messages name its engine and the keys that change its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Keys {
    /// `PostgreSQL`, `MySQL`.
    pub engine: &'static str,
    /// Where the connect timeout is changed, as a message ends: `?connect_timeout=SECONDS
    /// in the URL (or PGCONNECT_TIMEOUT)`.
    pub connect: &'static str,
    /// Where the statement timeout is changed, after "allow longer with".
    pub statement: &'static str,
    /// The same, inside parentheses (no nested ones).
    pub statement_inline: &'static str,
}

/// The limits a store's connections work under, each with where it came from (named in
/// the messages that report it).
#[derive(Debug, Clone)]
pub(super) struct Limits {
    pub connect: Duration,
    pub connect_from: &'static str,
    /// `None`: turned off (a statement timeout of 0).
    pub statement: Option<Duration>,
    pub statement_from: &'static str,
    /// The server as messages name it: `host:port` (each, when the URL lists several).
    pub server: String,
    pub keys: Keys,
}

/// Which limit a call waits under.
#[derive(Debug, Clone, Copy)]
pub(super) enum Wait {
    Statement,
    Lock,
}

impl Limits {
    /// How long the client waits for an answer of `kind`: the statement timeout (or as
    /// many as a lock wait takes) and the grace; `None` without a statement timeout.
    pub fn within(&self, kind: Wait) -> Option<Duration> {
        self.statement.map(|s| match kind {
            Wait::Statement => s + SILENCE_GRACE,
            Wait::Lock => s * LOCK_WAIT_FACTOR + SILENCE_GRACE,
        })
    }

    /// Nothing within the connect timeout.
    pub fn silent_at_connect(&self) -> String {
        format!(
            "no answer from {} within {} of connecting (the connect timeout, {}): the server accepts connections but says nothing (not {}, or hung); check the URL's host and port, or allow longer with {}",
            self.server,
            shown_duration(self.connect),
            self.connect_from,
            self.keys.engine,
            self.keys.connect,
        )
    }

    /// Nothing within `waited`, the statement timeout (and its grace) in force.
    pub fn silent_at_statement(&self, waited: Duration) -> String {
        let limit = self.statement.map_or("none".to_string(), shown_duration);
        format!(
            "no answer from {} within {} to a statement (the statement timeout is {limit}, {}): the server is hung or the network dropped; check the server, or allow longer with {}",
            self.server,
            shown_duration(waited),
            self.statement_from,
            self.keys.statement,
        )
    }

    /// What follows the server's error for a statement it stopped at the statement
    /// timeout: which limit, and how to change it.
    pub fn stopped_at_timeout(&self) -> String {
        match self.statement {
            Some(limit) => format!(
                " (the statement timeout is {}, {}: allow longer with {})",
                shown_duration(limit),
                self.statement_from,
                self.keys.statement_inline
            ),
            None => String::new(),
        }
    }

    /// Waits for `call` on `rt` under the limit of `kind`: its output, `Err(None)` when the
    /// limit ran out (the message says which), or the call's own error.
    pub fn wait<T, E>(
        &self,
        rt: &tokio::runtime::Runtime,
        kind: Wait,
        call: impl Future<Output = std::result::Result<T, E>>,
    ) -> std::result::Result<T, Option<E>> {
        let within = self.within(kind);
        let done = rt.block_on(async {
            match within {
                Some(d) => tokio::time::timeout(d, call).await.ok(),
                None => Some(call.await),
            }
        });
        match done {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => Err(Some(e)),
            None => Err(None),
        }
    }
}

/// `d` as messages give it: `2 s`, `1.5 s`, `500 ms`.
pub(super) fn shown_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// A duration as PostgreSQL writes a setting's (and a MySQL URL's `statement-timeout`): a
/// number, in milliseconds unless a unit (`us`, `ms`, `s`, `min`, `h`, `d`) follows.
/// `None`: not one.
pub(super) fn duration(value: &str) -> Option<Duration> {
    let v = value.trim().trim_matches('\'');
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let n: f64 = number.parse().ok().filter(|n: &f64| n.is_finite())?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "us" => n / 1000.0,
        "s" => n * 1000.0,
        "min" => n * 60_000.0,
        "h" => n * 3_600_000.0,
        "d" => n * 86_400_000.0,
        _ => return None,
    };
    // Past a year is no limit anyone means; it also keeps the arithmetic below in range.
    (ms <= 365.0 * 86_400_000.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

/// Servers that said nothing within the connect timeout, by URL, and when: not asked
/// again until as long has passed (the same error is given at once).
static SILENT: Mutex<Vec<(String, Instant, Duration, String)>> = Mutex::new(Vec::new());

/// Why the server at `url` was silent, when it was within its connect timeout.
pub(super) fn silent_lately(url: &str) -> Option<String> {
    let mut silent = SILENT.lock().unwrap_or_else(|e| e.into_inner());
    silent.retain(|(_, at, wait, _)| at.elapsed() < *wait);
    silent
        .iter()
        .find(|(u, ..)| u == url)
        .map(|(.., why)| why.clone())
}

/// Remembers that the server at `url` said nothing within `wait`, and `why`.
pub(super) fn remember_silence(url: &str, wait: Duration, why: &str) {
    let mut silent = SILENT.lock().unwrap_or_else(|e| e.into_inner());
    silent.retain(|(u, ..)| u != url);
    silent.push((url.to_string(), Instant::now(), wait, why.to_string()));
}

/// A current-thread runtime for one connection: the connection is driven while a call
/// waits, as a sync client does.
pub(super) fn runtime() -> crate::error::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the database client: {e}")))
}

/// A store blocks on a runtime of its own, which tokio refuses inside another: such calls
/// move to a thread of their own there ([`crate::blocking`]).
pub(super) use crate::blocking::outside_runtime;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_read_as_postgresql_writes_them() {
        let ms = |v: &str| duration(v).map(|d| d.as_millis());
        assert_eq!(ms("30000"), Some(30_000));
        assert_eq!(ms("30s"), Some(30_000));
        assert_eq!(ms(" 2min "), Some(120_000));
        assert_eq!(ms("1.5s"), Some(1_500));
        assert_eq!(ms("250ms"), Some(250));
        assert_eq!(ms("'5s'"), Some(5_000));
        assert_eq!(ms("0"), Some(0));
        for bad in ["", "soon", "-1", "5 parsecs", "1e9d"] {
            assert_eq!(duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_silent_server_is_not_asked_again_until_its_timeout_passed() {
        let url = "postgres://u@silent.test/db";
        remember_silence(url, Duration::from_millis(200), "no answer");
        assert_eq!(silent_lately(url).as_deref(), Some("no answer"));
        assert_eq!(silent_lately("postgres://u@other.test/db"), None);
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(silent_lately(url), None);
    }
}
