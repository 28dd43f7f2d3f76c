//! A case's trajectory: the calls an exec adapter's program made through the gateway, in
//! order — to the model and to its other APIs (`adapter.upstreams`) — as the gateway saw
//! them. Request assertions (`expect.requests`) check its upstream steps; the reports show
//! it in a case's view.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Whom a step called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StepKind {
    /// The contender's model (any API the gateway serves).
    Model,
    /// One of the adapter's other APIs (`adapter.upstreams`).
    Upstream,
}

/// One call of the trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The model or another API.
    pub kind: StepKind,
    /// The contender's id for a model call; the upstream's name (`shipping`) otherwise.
    pub name: String,
    /// `GET`, `POST`.
    pub method: String,
    /// The path called: below the upstream's base URL (`/orders`), or the gateway's
    /// endpoint for a model call (`/v1/chat/completions`).
    pub path: String,
    /// The query parameters (an upstream call's), each value as sent (a string); a
    /// parameter given twice keeps its last value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query: BTreeMap<String, String>,
    /// The JSON body an upstream call sent (text as a JSON string); `None` for none and
    /// for model calls (their prompts are in the cassette).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// The status it was answered with; `None` when it got no answer (a replay miss, a
    /// network failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl Step {
    /// `GET shipping /orders?id=42 → 200`: the step in one line.
    pub fn summary(&self) -> String {
        let query: Vec<String> = self.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        };
        let status = self
            .status
            .map_or_else(|| "no answer".to_string(), |s| s.to_string());
        format!(
            "{} {} {}{query} → {status}",
            self.method, self.name, self.path
        )
    }
}

/// The query of a URL as [`Step::query`] holds it (percent-decoded, `+` as a space).
pub fn query_map(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(b) => {
                    out.push(b);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_decoded_and_a_step_reads_as_one_line() {
        let q = query_map("id=42&name=a%20b+c&flag&bad=%zz&end=%4");
        assert_eq!(q["id"], "42");
        assert_eq!(q["name"], "a b c");
        assert_eq!(q["flag"], "");
        assert_eq!(q["bad"], "%zz");
        assert_eq!(q["end"], "%4");
        let step = Step {
            kind: StepKind::Upstream,
            name: "shipping".into(),
            method: "GET".into(),
            path: "/orders".into(),
            query: query_map("id=42"),
            body: None,
            status: Some(200),
        };
        assert_eq!(step.summary(), "GET shipping /orders?id=42 → 200");
    }
}
