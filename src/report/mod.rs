//! Renderers over the one result model: terminal leaderboard, JSON snapshot.

pub mod json;
pub mod leaderboard;
pub mod terminal;

use crate::results::RunResult;

/// One report format over the result model.
pub trait Report {
    fn render(&self, run: &RunResult) -> String;
}
