//! The suite's side of `evals cassettes status`: which cassettes it expects (every case for
//! every contender that records) and the request each should hold now, predicted through
//! the adapter and the provider without calling anything.

use crate::cassette::status::{self, Expected, StatusReport};
use crate::error::Result;
use crate::suite::{Overrides, Suite, lineup};

/// The state of the suite's cassette folder: per case and contender recorded, missing,
/// stale or unchecked; then the unused and the partial files.
pub fn cassette_status(suite: &Suite) -> Result<StatusReport> {
    let adapter = crate::adapter::build(suite)?;
    let providers = crate::provider::Registry::default();
    let lineup = lineup::expand(&suite.config, &Overrides::default(), &providers);
    let mut expected = Vec::new();
    for c in &lineup.contenders {
        let Some(provider) = providers.get(&c.kind.name).filter(|p| p.sends()) else {
            continue;
        };
        for case in suite.cases.cases.iter() {
            let case = &case?;
            // An exec adapter's requests cannot be predicted without running it.
            let request = adapter
                .predict(case)
                .and_then(|req| crate::provider::predict_request(provider.as_ref(), c, &req));
            expected.push(Expected {
                key: super::cassette_key(c, case),
                contender: format!("{} [{}]", c.id(), c.settings_slug()),
                case: case.key(),
                request,
                base_url: provider.base_url(c).unwrap_or_default(),
            });
        }
    }
    // A judge's verdicts on every contender's cases are the suite's too (never unused, so
    // `prune` keeps them); their requests hold the reply, known only by running.
    for j in crate::score::judges(suite) {
        let Some(provider) = providers.get(&j.kind.name).filter(|p| p.sends()) else {
            continue;
        };
        for c in &lineup.contenders {
            for case in suite.cases.cases.iter() {
                let case = &case?;
                expected.push(Expected {
                    key: crate::score::judge_cassette_key(&j, c, &case.dataset, &case.id),
                    contender: format!("judge {} of {} [{}]", j.id(), c.id(), c.settings_slug()),
                    case: case.key(),
                    request: None,
                    base_url: provider.base_url(&j).unwrap_or_default(),
                });
            }
        }
    }
    let options = super::evaluate::cassette_options(suite, Vec::new())?;
    Ok(status::status(&options, expected)?)
}
