//! The suite's side of `evals cassettes status`: which cassettes it expects (every case for
//! every contender that records) and the request each should hold now, predicted through
//! the adapter and the provider without calling anything.

use crate::cassette::status::{self, Expected, StatusReport};
use crate::error::Result;
use crate::suite::{Overrides, Suite, lineup};

/// The state of the suite's cassette folder: per case and contender recorded, missing,
/// stale or unchecked; then the unused and the partial files.
pub fn cassette_status(suite: &Suite) -> Result<StatusReport> {
    // Requests are predicted, never sent: no key is read (the default environment).
    let adapter = crate::adapter::build(suite, &crate::env::Environment::default())?;
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
                contender: crate::report::format::contender_label(&c.info),
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
                    contender: format!(
                        "judge {} of {}",
                        crate::report::format::contender_label(&j.info),
                        crate::report::format::contender_label(&c.info)
                    ),
                    case: case.key(),
                    request: None,
                    base_url: provider.base_url(&j).unwrap_or_default(),
                });
            }
        }
    }
    let options = super::evaluate::cassette_options(suite, Vec::new())?;
    let mut report = status::status(&options, expected);
    report.fixtures = fixtures(suite)?;
    Ok(report)
}

/// The hand-written answers of the exec adapter's other APIs: each case's `fixtures/`
/// folder (a JSONL file's is shared by its cases), the `.meta.json` files aside.
fn fixtures(suite: &Suite) -> Result<Vec<status::Fixture>> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for case in suite.cases.cases.iter() {
        let case = &case?;
        let Some(dir) = crate::adapter::fixtures_dir(case) else {
            continue;
        };
        if !seen.insert(dir.clone()) {
            continue;
        }
        let who = match case.line {
            Some(_) => format!("{}/*", case.dataset),
            None => case.key(),
        };
        for path in crate::cassette::list_json_files(&dir) {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.ends_with(".meta.json") {
                continue;
            }
            let upstream = path
                .strip_prefix(&dir)
                .ok()
                .and_then(|p| p.components().next())
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push(status::Fixture {
                upstream,
                case: who.clone(),
                path,
            });
        }
    }
    Ok(out)
}
