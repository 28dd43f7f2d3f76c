//! `evals comment`: puts the check's Markdown on the pull request as one comment, updated in
//! place on every push (found by the hidden marker line), through GitHub's REST API.

use std::time::Duration;

use serde_json::{Value, json};

use super::markdown::MARKER;
use crate::error::{Error, Result};

/// Where the comment goes and with which token.
#[derive(Debug, Clone)]
pub struct Target {
    /// `https://api.github.com` or `GITHUB_API_URL` (GitHub Enterprise).
    pub api_url: String,
    /// `owner/name`.
    pub repo: String,
    pub pr: u64,
    pub token: String,
}

/// What happened to the comment.
#[derive(Debug, Clone, PartialEq)]
pub enum Posted {
    Created(String),
    Updated(String),
}

impl Target {
    /// From flags and the Actions environment: `GITHUB_TOKEN`, `GITHUB_REPOSITORY`,
    /// `GITHUB_API_URL`, and the PR number from `--pr` or `GITHUB_EVENT_PATH`.
    pub fn from_env(pr: Option<u64>, repo: Option<String>) -> Result<Target> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let token = var("GITHUB_TOKEN").ok_or_else(|| {
            Error::Usage(
                "GITHUB_TOKEN is not set: the comment needs a token that may write pull-request comments (in Actions: `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`)".into(),
            )
        })?;
        let repo = repo.or_else(|| var("GITHUB_REPOSITORY")).ok_or_else(|| {
            Error::Usage("no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY".into())
        })?;
        if repo.split('/').filter(|p| !p.is_empty()).count() != 2 {
            return Err(Error::Usage(format!("--repo {repo}: expected OWNER/NAME")));
        }
        let pr = match pr {
            Some(n) => n,
            None => pr_from_event(var("GITHUB_EVENT_PATH"))?,
        };
        let api_url = var("GITHUB_API_URL")
            .unwrap_or_else(|| "https://api.github.com".into())
            .trim_end_matches('/')
            .to_string();
        Ok(Target {
            api_url,
            repo,
            pr,
            token,
        })
    }
}

fn pr_from_event(path: Option<String>) -> Result<u64> {
    let Some(path) = path else {
        return Err(Error::Usage(
            "no pull request: pass --pr N, or run in a pull_request workflow (GITHUB_EVENT_PATH)"
                .into(),
        ));
    };
    let text = crate::error::read_text(std::path::Path::new(&path), &path)?;
    let event: Value = serde_json::from_str(&text)
        .map_err(|e| Error::Usage(format!("{path}: not a GitHub event payload: {e}")))?;
    event
        .pointer("/pull_request/number")
        .or_else(|| event.pointer("/issue/number"))
        .or_else(|| event.get("number"))
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{path}: this event has no pull request number; pass --pr N (comments go on pull requests)"
            ))
        })
}

/// Creates the comment, or updates the one that carries the marker.
pub fn post(target: &Target, markdown: &str) -> Result<Posted> {
    let body = if markdown.contains(MARKER) {
        markdown.to_string()
    } else {
        format!("{MARKER}\n{markdown}")
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the runtime: {e}")))?;
    rt.block_on(post_async(target, &body))
}

async fn post_async(t: &Target, body: &str) -> Result<Posted> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .user_agent(concat!("llm-evals/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Failed(format!("cannot start the HTTP client: {e}")))?;
    let send = |req: reqwest::RequestBuilder| {
        req.bearer_auth(&t.token)
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28")
            .send()
    };
    // Find our comment: the first one holding the marker, page by page.
    let mut existing: Option<u64> = None;
    for page in 1..=50u32 {
        let url = format!(
            "{}/repos/{}/issues/{}/comments?per_page=100&page={page}",
            t.api_url, t.repo, t.pr
        );
        let resp = send(client.get(&url))
            .await
            .map_err(|e| http_error("list the comments", &e))?;
        let comments: Vec<Value> = read(resp, "list the comments").await?;
        existing = comments
            .iter()
            .find(|c| {
                c.get("body")
                    .and_then(Value::as_str)
                    .is_some_and(|b| b.contains(MARKER))
            })
            .and_then(|c| c.get("id").and_then(Value::as_u64));
        if existing.is_some() || comments.len() < 100 {
            break;
        }
    }
    let payload = json!({ "body": body });
    match existing {
        Some(id) => {
            let url = format!("{}/repos/{}/issues/comments/{id}", t.api_url, t.repo);
            let resp = send(client.patch(&url).json(&payload))
                .await
                .map_err(|e| http_error("update the comment", &e))?;
            let c: Value = read(resp, "update the comment").await?;
            Ok(Posted::Updated(html_url(&c)))
        }
        None => {
            let url = format!("{}/repos/{}/issues/{}/comments", t.api_url, t.repo, t.pr);
            let resp = send(client.post(&url).json(&payload))
                .await
                .map_err(|e| http_error("create the comment", &e))?;
            let c: Value = read(resp, "create the comment").await?;
            Ok(Posted::Created(html_url(&c)))
        }
    }
}

fn html_url(c: &Value) -> String {
    c.get("html_url")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn http_error(what: &str, e: &reqwest::Error) -> Error {
    // reqwest errors carry the URL, never the token.
    Error::Failed(format!("could not {what}: {e}"))
}

async fn read<T: serde::de::DeserializeOwned>(resp: reqwest::Response, what: &str) -> Result<T> {
    let status = resp.status();
    let text = resp.text().await.map_err(|e| http_error(what, &e))?;
    if !status.is_success() {
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| text.chars().take(200).collect());
        let hint = match status.as_u16() {
            401 => " (is GITHUB_TOKEN valid?)",
            403 | 404 => {
                " (does the token have `pull-requests: write`, and is the PR number right?)"
            }
            _ => "",
        };
        return Err(Error::Failed(format!(
            "could not {what}: HTTP {status}: {message}{hint}"
        )));
    }
    serde_json::from_str(&text).map_err(|e| {
        Error::Failed(format!(
            "could not {what}: GitHub answered something unexpected: {e}"
        ))
    })
}
