//! The git branch and commit of a run: CI variables first, then git itself.

use std::path::Path;
use std::process::Command;

/// The branch and commit a run was made on, when they can be told.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GitInfo {
    /// The branch (`main`, a pull request's head branch).
    pub branch: Option<String>,
    /// The commit's full hash.
    pub commit: Option<String>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!s.is_empty() && s != "HEAD").then_some(s)
}

/// `GITHUB_HEAD_REF` (a pull request's branch), `GITHUB_REF_NAME`, `GITHUB_SHA`; else git.
pub fn detect(dir: &Path) -> GitInfo {
    let branch = env("EVALS_BRANCH")
        .or_else(|| env("GITHUB_HEAD_REF"))
        .or_else(|| env("GITHUB_REF_NAME"))
        .or_else(|| git(dir, &["rev-parse", "--abbrev-ref", "HEAD"]));
    let commit = env("GITHUB_SHA").or_else(|| git(dir, &["rev-parse", "HEAD"]));
    GitInfo { branch, commit }
}
