//! A shard of a run: which of N disjoint slices of the selected cases a run ran, in which
//! run group, and where its cases stand in the whole selection, so `evals merge` can put
//! the slices back in suite order without the suite.

use serde::{Deserialize, Serialize};

/// One slice of a sharded run (`evals check --shard K/N --group ID`), kept in the run's
/// selection: a shard selected less than the whole suite, so it is never a baseline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// K: which slice, from 1.
    pub index: usize,
    /// N: how many slices the selection was cut into.
    pub count: usize,
    /// The run group: every shard of one run (and their merge) carries the same.
    pub group: String,
    /// How many cases the whole selection holds, every shard's together.
    pub selected: usize,
    /// Where each of this shard's cases (its settings' `cases`, in that order) stands in
    /// the whole selection, from 0.
    pub positions: Vec<usize>,
}

impl Shard {
    /// `K/N`, as the flag is written.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}
