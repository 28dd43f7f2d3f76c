//! Renderers over the one result model: terminal leaderboard, JSON snapshot, Markdown,
//! JUnit XML and the output diff; and the pull-request comment (`github`).

pub mod diff;
pub mod github;
pub mod html;
pub mod json;
pub mod junit;
pub mod leaderboard;
pub mod markdown;
pub mod misses;
pub mod terminal;

use crate::results::RunResult;

/// One report format over the result model.
pub trait Report {
    fn render(&self, run: &RunResult) -> String;
}
