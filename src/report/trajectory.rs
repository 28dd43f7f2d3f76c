//! A case's trajectory as an HTML fragment: the calls its exec adapter's program made
//! through the gateway, in order — the model's and its other APIs' (`adapter.upstreams`) —
//! for the HTML report's case view. Every value from the run is escaped here.

use super::format::html_escape as escape;
use crate::results::{Step, StepKind};

/// The trajectory as an ordered list (`<ol class="trajectory">`), one item per call: its
/// kind, who was called (the contender and the model it was forwarded to, or the
/// upstream's name), method, path and query, the status (or "no answer"), and an upstream
/// call's body, compact. Empty for no steps.
pub fn html(steps: &[Step]) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ol class=\"trajectory\">\n");
    for s in steps {
        let kind = match s.kind {
            StepKind::Model => "model",
            StepKind::Upstream => "upstream",
        };
        let query: Vec<String> = s.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let target = if query.is_empty() {
            s.path.clone()
        } else {
            format!("{}?{}", s.path, query.join("&"))
        };
        let (status, class) = match s.status {
            Some(code) if (200..400).contains(&code) => (code.to_string(), "ok"),
            Some(code) => (code.to_string(), "failed"),
            None => ("no answer".to_string(), "failed"),
        };
        let model = s
            .model
            .as_deref()
            .map(|m| format!(" <span class=\"model\">({})</span>", escape(m)))
            .unwrap_or_default();
        out.push_str(&format!(
            "<li class=\"step {kind}\"><span class=\"kind\">{kind}</span> <span class=\"name\">{}</span>{model} <code>{} {}</code> <span class=\"status {class}\">{}</span>",
            escape(&s.name),
            escape(&s.method),
            escape(&target),
            escape(&status),
        ));
        if let Some(body) = &s.body {
            out.push_str(&format!(
                " <code class=\"body\">{}</code>",
                escape(&body.to_string())
            ));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ol>\n");
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_trajectory_is_an_ordered_list_of_its_calls_every_value_escaped() {
        let steps = vec![
            Step {
                kind: StepKind::Upstream,
                name: "ship<ping>".into(),
                method: "GET".into(),
                path: "/orders".into(),
                query: crate::results::trajectory::query_map("id=4%262&x=%3Cb%3E"),
                body: None,
                status: Some(200),
                model: None,
            },
            Step {
                kind: StepKind::Upstream,
                name: "shipping".into(),
                method: "POST".into(),
                path: "/events".into(),
                query: Default::default(),
                body: Some(json!({"note": "<script>alert('x')</script>"})),
                status: None,
                model: None,
            },
            Step {
                kind: StepKind::Model,
                name: "openai/gpt-x".into(),
                method: "POST".into(),
                path: "/v1/chat/completions".into(),
                query: Default::default(),
                body: None,
                status: Some(429),
                model: Some("gpt-<x>".into()),
            },
        ];
        let html = html(&steps);
        assert_eq!(
            html,
            "<ol class=\"trajectory\">\n\
             <li class=\"step upstream\"><span class=\"kind\">upstream</span> <span class=\"name\">ship&lt;ping&gt;</span> <code>GET /orders?id=4&amp;2&amp;x=&lt;b&gt;</code> <span class=\"status ok\">200</span></li>\n\
             <li class=\"step upstream\"><span class=\"kind\">upstream</span> <span class=\"name\">shipping</span> <code>POST /events</code> <span class=\"status failed\">no answer</span> <code class=\"body\">{&quot;note&quot;:&quot;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;}</code></li>\n\
             <li class=\"step model\"><span class=\"kind\">model</span> <span class=\"name\">openai/gpt-x</span> <span class=\"model\">(gpt-&lt;x&gt;)</span> <code>POST /v1/chat/completions</code> <span class=\"status failed\">429</span></li>\n\
             </ol>\n"
        );
        assert!(!html.contains("<script"));
        assert_eq!(super::html(&[]), "");
    }
}
