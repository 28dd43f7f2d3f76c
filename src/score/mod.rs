//! Scorers: what good means. A scorer turns a case and a reply into a [`Score`]; it is pure
//! and never calls anything.
//!
//! The config's scorers (`scorer:` → [`build`]) implement [`Scorer`]; so can yours: pass it
//! to [`crate::runner::evaluate`] in [`crate::runner::RunOptions::scorer`] to replace them
//! or to add its metrics beside theirs ([`ScorerChoice`]). `examples/own_scorer.rs` does.

pub(crate) mod assertions;
mod build;
pub(crate) mod components;
pub(crate) mod exec;
pub(crate) mod fields;
pub(crate) mod judge;
pub mod weighted;

pub use build::{ScorerChoice, build, build_with};
pub use judge::{JudgeScorer, judge_cassette_key, judges};

use std::future::Future;
use std::pin::Pin;

use std::collections::HashMap;
use std::sync::Mutex;

use crate::cassette::{CallError, CassetteKey, Repeats, Session, SessionMeta, Transport};
use crate::provider::Registry;
use crate::results::{CaseError, MetricDef, Reply, Score, Usage};
use crate::suite::{Case, Contender};

/// What [`Scorer::score_checked`] returns: a score, or an error of the case.
pub type ScoreFuture<'a> = Pin<Box<dyn Future<Output = Result<Score, CaseError>> + Send + 'a>>;

/// Grades replies. Implementations are deterministic and side-effect free: a replayed run
/// must score as the recorded one did. The runner calls them from several threads.
pub trait Scorer: Send + Sync {
    /// The metrics this scorer reports, exactly one of them primary. Every report shows
    /// them in this order, primary first.
    fn metrics(&self) -> Vec<MetricDef>;
    /// Scores one reply: [`Score::value`] is the primary metric's value, and
    /// [`Score::metrics`] holds every declared metric (`None`: does not apply to this case).
    /// A reply with an error ([`Reply::error`]) scores 0 (it is the model's failure). A case
    /// that never got a reply (a transport failure, a cassette miss) is never scored.
    fn score(&self, case: &Case, reply: &Reply) -> Score;
    /// Scores one reply where scoring may wait or fail (an exec scorer's worker): the
    /// runner calls this one. `Err` is an error of the case (a crashed scorer, a metric it
    /// never declared), never a 0. Default: [`Scorer::score`], which cannot fail.
    fn score_checked<'a>(&'a self, case: &'a Case, reply: &'a Reply) -> ScoreFuture<'a> {
        Box::pin(async move { Ok(self.score(case, reply)) })
    }
    /// Scores one reply with what the run has (the contender that answered, the cassette
    /// layer, the keys): the runner calls this one, and a judge's calls go through it.
    /// Default: [`Scorer::score_checked`].
    fn score_in<'a>(
        &'a self,
        case: &'a Case,
        reply: &'a Reply,
        run: &'a ScoreContext<'a>,
    ) -> ScoreFuture<'a> {
        let _ = run;
        self.score_checked(case, reply)
    }
    /// Offline problems with a case (expected values the schema does not allow, ...): a
    /// run refuses to start while a selected case has one, and `evals verify` lists them.
    ///
    /// Default: no problem (a scorer that reads nothing of the case beyond its reply).
    fn verify(&self, case: &Case) -> Vec<String> {
        let _ = case;
        Vec::new()
    }
    /// A short summary for `evals cases`: `2/8 answered`, `3 assertions`.
    ///
    /// Default: the metrics it reports (`names_it, brief`), the same for every case.
    fn summary(&self, case: &Case) -> String {
        let _ = case;
        self.metrics()
            .into_iter()
            .map(|m| m.name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How a JSON value is named in messages: `a string`, `an object`.
pub(crate) fn kind_of(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// What a scorer may reach while the runner scores one case ([`Scorer::score_in`]): the
/// contender that answered, and the run's cassette layer, keys and providers, so a judge's
/// calls are recorded and replayed like the contender's.
pub struct ScoreContext<'a> {
    /// The contender whose reply is scored.
    pub contender: &'a Contender,
    pub(crate) transport: &'a Transport,
    pub(crate) keys: &'a HashMap<String, String>,
    pub(crate) providers: &'a Registry,
    /// What the judges' calls of this case used: kept apart from the contender's usage.
    pub(crate) judge_usage: Mutex<Usage>,
    /// The judge cassettes this case's scoring opened, held open across its metrics (and,
    /// under `--repeat K`, across its tries): written once, when the case is done.
    pub(crate) judged: &'a JudgeCassettes,
}

impl std::fmt::Debug for ScoreContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScoreContext")
            .field("contender", &self.contender)
            .finish_non_exhaustive()
    }
}

impl<'a> ScoreContext<'a> {
    /// The context of one case's scoring.
    pub(crate) fn new(
        contender: &'a Contender,
        transport: &'a Transport,
        keys: &'a HashMap<String, String>,
        providers: &'a Registry,
        judged: &'a JudgeCassettes,
    ) -> ScoreContext<'a> {
        ScoreContext {
            contender,
            transport,
            keys,
            providers,
            judge_usage: Mutex::default(),
            judged,
        }
    }

    /// The session of the judge cassette `key`: the one this case's scoring already holds
    /// (so every metric and every try lands in one file, in the order asked, and a replay
    /// goes on down its recordings), else a new one. Hand it back with [`Session::finish`].
    pub(crate) fn judge_session(
        &self,
        key: &CassetteKey,
        meta: SessionMeta,
    ) -> Result<Session, CallError> {
        let repeats = self.judged.of(key);
        self.transport.session_in(key, meta, &repeats)
    }

    /// The tokens and cost the judges' calls of this case used.
    pub fn judge_usage(&self) -> Usage {
        self.judge_usage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// The judge cassettes one case's scoring opened (one per judge key), shared by its
/// metrics and its tries the way a repeated case's tries share the contender's cassette
/// ([`Repeats`]): a judge asked about two metrics, or once per try under `--repeat K`,
/// records every exchange in one file, in order, and replays them in that order.
#[derive(Default)]
pub(crate) struct JudgeCassettes {
    held: Mutex<Vec<(CassetteKey, std::sync::Arc<Repeats>)>>,
}

impl JudgeCassettes {
    /// The tries' holder of `key`'s session, made on first use.
    fn of(&self, key: &CassetteKey) -> std::sync::Arc<Repeats> {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, r)) = held.iter().find(|(k, _)| k == key) {
            return r.clone();
        }
        let r = Repeats::new();
        held.push((key.clone(), r.clone()));
        r
    }

    /// Writes every judge cassette opened, as [`Session::finish`] writes one (the first
    /// error stops nothing: each is written, and the first error is returned).
    pub(crate) fn finish(&self, transport: &Transport) -> Result<(), CallError> {
        let held = std::mem::take(
            &mut *self
                .held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let mut first = Ok(());
        for (_, r) in held {
            if let Err(e) = transport.finish_repeats(&r)
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    }
}
