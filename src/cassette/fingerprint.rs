//! Request fingerprints: the SHA-256 of a canonical form of a request, hashed as every
//! fingerprint is ([`crate::fingerprint`]).
//!
//! Two requests that mean the same thing must hash the same, whatever the key order of
//! their JSON, the order of their query parameters, or their headers (auth and SDK
//! telemetry differ from machine to machine, so no header counts). Fields listed in
//! `ignore_fields` (volatile ids, trace ids) are removed before hashing.

use serde_json::Value;

use super::http::HttpRequest;
use crate::fingerprint::{sha256_hex, write_canonical};

/// The hex SHA-256 of the canonical request: method, the whole URL with its query sorted,
/// and the JSON body with sorted keys, minus `ignore_fields` (dotted paths such as `user` or
/// `metadata.trace_id`). Headers never count. The fingerprint of cassettes recorded before
/// they were relative to the provider's `base_url` ([`fingerprint_at`] with no base).
#[cfg(test)]
pub(crate) fn fingerprint(req: &HttpRequest, ignore_fields: &[String]) -> String {
    fingerprint_at(req, ignore_fields, "")
}

/// [`fingerprint`] of the request relative to its provider's `base_url`: a URL under `base`
/// counts from there (`/chat/completions`), so the same provider behind a proxy, or a local
/// server on another port, replays the same recordings (the cassette's folder names the
/// provider). A URL not under `base` (or an empty `base`) counts whole.
pub fn fingerprint_at(req: &HttpRequest, ignore_fields: &[String], base: &str) -> String {
    let body = req.body.as_ref().map(|b| strip_fields(b, ignore_fields));
    let mut canonical = String::new();
    canonical.push_str(&req.method.to_ascii_uppercase());
    canonical.push('\n');
    canonical.push_str(&canonical_url(relative_url(&req.url, base)));
    canonical.push('\n');
    match &body {
        Some(b) => write_canonical(b, &mut canonical),
        None => canonical.push_str("(no body)"),
    }
    sha256_hex(canonical.as_bytes())
}

/// The fingerprint of a request to an exec adapter's other API `name` at `base` (its real
/// base URL): method, the API's name and the path below `base` (query sorted), the body
/// minus `ignore_fields`; so the same request to the API behind another address replays,
/// and two APIs' `GET /status` are two requests.
pub fn upstream_fingerprint(
    req: &HttpRequest,
    ignore_fields: &[String],
    name: &str,
    base: &str,
) -> String {
    let rest = relative_url(&req.url, base);
    let named = HttpRequest {
        url: format!("upstream:{name}/{}", rest.trim_start_matches('/')),
        ..req.clone()
    };
    fingerprint_at(&named, ignore_fields, "")
}

/// `url` below `base` (`/chat/completions`, `?a=1`, or `` for `base` itself), or `url`
/// whole when it is not under `base`. A trailing `/` of `base` does not count.
pub(crate) fn relative_url<'a>(url: &'a str, base: &str) -> &'a str {
    let base = base.trim_end_matches('/');
    if base.is_empty() {
        return url;
    }
    match url.strip_prefix(base) {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '?', '#']) => rest,
        _ => url,
    }
}

/// The URL with its query parameters sorted (and any `#fragment` dropped, as it is never
/// sent), so `?b=2&a=1` and `?a=1&b=2` are the same request.
pub(crate) fn canonical_url(url: &str) -> String {
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    match url.split_once('?') {
        None => url.to_string(),
        Some((base, query)) => {
            let mut params: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
            if params.is_empty() {
                return base.to_string();
            }
            params.sort_unstable();
            format!("{base}?{}", params.join("&"))
        }
    }
}

/// A copy of `body` without the fields named by dotted paths. A path segment that meets an
/// array applies to each element (`messages.name`), unless it is an index (`messages.0.name`).
pub(crate) fn strip_fields(body: &Value, ignore_fields: &[String]) -> Value {
    let mut body = body.clone();
    for path in ignore_fields {
        let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
        if !segments.is_empty() {
            remove_path(&mut body, &segments);
        }
    }
    body
}

fn remove_path(value: &mut Value, segments: &[&str]) {
    let Some((first, rest)) = segments.split_first() else {
        return;
    };
    match value {
        Value::Object(map) => {
            if rest.is_empty() {
                map.remove(*first);
            } else if let Some(child) = map.get_mut(*first) {
                remove_path(child, rest);
            }
        }
        Value::Array(items) => match first.parse::<usize>() {
            Ok(index) if rest.is_empty() => {
                // Removing an element would shift the others; null it so indexes stay put.
                if let Some(item) = items.get_mut(index) {
                    *item = Value::Null;
                }
            }
            Ok(index) => {
                if let Some(item) = items.get_mut(index) {
                    remove_path(item, rest);
                }
            }
            Err(_) => {
                for item in items {
                    remove_path(item, segments);
                }
            }
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn req(url: &str, headers: &[(&str, &str)], body: Value) -> HttpRequest {
        HttpRequest {
            method: "post".into(),
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Some(body),
            raw: None,
        }
    }

    #[test]
    fn a_fingerprint_keeps_its_value_recorded_cassettes_are_keyed_by() {
        let r = req(
            "https://x/v1/chat/completions?b=2&a=1",
            &[("authorization", "Bearer k")],
            json!({"model": "m", "messages": [{"role": "user", "content": "hé \"q\"\n"}], "temperature": 0.1, "n": 1, "stop": null, "stream": false}),
        );
        assert_eq!(
            fingerprint(&r, &[]),
            "75eee18a403040ef68c6f3c2cfa518240c1ebf630f7852a6cf1730e6c7e7d388"
        );
        assert_eq!(
            fingerprint_at(&r, &["n".into()], "https://x/v1"),
            "a0651e3eaf9cad75997f0adb8f08595fc2860b6a5a1a2d6190b17df267f54047"
        );
        let empty = HttpRequest {
            method: "GET".into(),
            url: "https://x/v1/models".into(),
            headers: vec![],
            body: None,
            raw: None,
        };
        assert_eq!(
            fingerprint(&empty, &[]),
            "083da15d8af7af63a9c1540546460327bba81d42f7396709af10ae5967a6fd86"
        );
    }

    #[test]
    fn key_order_does_not_change_the_fingerprint() {
        let a: Value = serde_json::from_str(
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.1}"#,
        )
        .unwrap();
        let b: Value = serde_json::from_str(
            r#"{"temperature":0.1,"messages":[{"content":"hi","role":"user"}],"model":"m"}"#,
        )
        .unwrap();
        let u = "https://x/v1/chat";
        assert_eq!(
            fingerprint(&req(u, &[], a), &[]),
            fingerprint(&req(u, &[], b), &[])
        );
    }

    #[test]
    fn headers_never_count() {
        let body = json!({"model": "m"});
        let a = req(
            "https://x/v1",
            &[("authorization", "Bearer one")],
            body.clone(),
        );
        let b = req(
            "https://x/v1",
            &[("authorization", "Bearer two"), ("x-stainless-os", "Linux")],
            body,
        );
        assert_eq!(fingerprint(&a, &[]), fingerprint(&b, &[]));
    }

    #[test]
    fn query_order_does_not_matter_but_values_do() {
        let body = json!({});
        let a = req("https://x/v1?b=2&a=1", &[], body.clone());
        let b = req("https://x/v1?a=1&b=2", &[], body.clone());
        let c = req("https://x/v1?a=1&b=3", &[], body);
        assert_eq!(fingerprint(&a, &[]), fingerprint(&b, &[]));
        assert_ne!(fingerprint(&a, &[]), fingerprint(&c, &[]));
    }

    #[test]
    fn ignore_fields_are_removed_before_hashing() {
        let ignore = vec!["user".to_string(), "metadata.trace_id".to_string()];
        let a = req(
            "https://x/v1",
            &[],
            json!({"model": "m", "user": "u1", "metadata": {"trace_id": "t1", "keep": 1}}),
        );
        let b = req(
            "https://x/v1",
            &[],
            json!({"model": "m", "user": "u2", "metadata": {"trace_id": "t2", "keep": 1}}),
        );
        let c = req(
            "https://x/v1",
            &[],
            json!({"model": "m", "user": "u2", "metadata": {"trace_id": "t2", "keep": 2}}),
        );
        assert_ne!(fingerprint(&a, &[]), fingerprint(&b, &[]));
        assert_eq!(fingerprint(&a, &ignore), fingerprint(&b, &ignore));
        assert_ne!(fingerprint(&a, &ignore), fingerprint(&c, &ignore));
    }

    #[test]
    fn ignore_fields_reach_into_arrays() {
        let ignore = vec!["messages.name".to_string()];
        let a = req(
            "u",
            &[],
            json!({"messages": [{"name": "a", "content": "x"}]}),
        );
        let b = req(
            "u",
            &[],
            json!({"messages": [{"name": "b", "content": "x"}]}),
        );
        assert_eq!(fingerprint(&a, &ignore), fingerprint(&b, &ignore));
    }

    #[test]
    fn the_url_counts_relative_to_the_base_url() {
        let body = json!({"model": "m"});
        let a = req(
            "http://127.0.0.1:4000/v1/chat/completions",
            &[],
            body.clone(),
        );
        let b = req(
            "https://proxy.example/llm/v1/chat/completions",
            &[],
            body.clone(),
        );
        let c = req("http://127.0.0.1:4000/v1/embeddings", &[], body.clone());
        let at_a = fingerprint_at(&a, &[], "http://127.0.0.1:4000/v1");
        assert_eq!(
            at_a,
            fingerprint_at(&b, &[], "https://proxy.example/llm/v1/")
        );
        assert_ne!(at_a, fingerprint_at(&c, &[], "http://127.0.0.1:4000/v1"));
        // Not under the base, or no base: the whole URL counts.
        assert_eq!(
            fingerprint_at(&a, &[], "http://127.0.0.1:4000/v"),
            fingerprint(&a, &[])
        );
        assert_eq!(fingerprint_at(&a, &[], ""), fingerprint(&a, &[]));
        assert_ne!(at_a, fingerprint(&a, &[]));
        assert_eq!(relative_url("http://h/v1?b=1", "http://h/v1"), "?b=1");
    }

    #[test]
    fn method_case_does_not_matter_but_body_and_url_do() {
        let mut a = req("https://x/v1", &[], json!({"t": 0.1}));
        let b = a.clone();
        a.method = "POST".into();
        assert_eq!(fingerprint(&a, &[]), fingerprint(&b, &[]));
        let c = req("https://x/v1", &[], json!({"t": 0.7}));
        let d = req("https://x/v2", &[], json!({"t": 0.1}));
        assert_ne!(fingerprint(&a, &[]), fingerprint(&c, &[]));
        assert_ne!(fingerprint(&a, &[]), fingerprint(&d, &[]));
    }
}
