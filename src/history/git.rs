//! The git branch and commit of a run: what CI names ([`GitSource`], read by the caller's
//! [`crate::env::Environment`]) first, then git itself when the source says to ask it.

use std::path::Path;
use std::process::Command;

use crate::env::GitSource;

/// The branch and commit a run was made on, when they can be told.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GitInfo {
    /// The branch (`main`, a pull request's head branch).
    pub branch: Option<String>,
    /// The commit's full hash.
    pub commit: Option<String>,
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

/// What `source` names (`EVALS_BRANCH`, `GITHUB_HEAD_REF`, `GITHUB_REF_NAME`;
/// `GITHUB_SHA`); the rest asked of git in `dir` when `source.ask_git`, else left unknown
/// (no process started).
pub fn detect(dir: &Path, source: &GitSource) -> GitInfo {
    let ask = |args: &[&str]| source.ask_git.then(|| git(dir, args)).flatten();
    let branch = source
        .branch
        .clone()
        .or_else(|| ask(&["rev-parse", "--abbrev-ref", "HEAD"]));
    let commit = source
        .commit
        .clone()
        .or_else(|| ask(&["rev-parse", "HEAD"]));
    GitInfo { branch, commit }
}
