//! `-n`: the plan of `run`/`compare`/`record`/`check` as the settings step builds it
//! ([`super::settings::plan`]), printed; nothing is called.

use std::collections::BTreeMap;

use super::args::RunArgs;
use super::exit;
use super::output::{Out, align_right, table};
use llm_evals::error::Result;
use llm_evals::suite::Suite;

/// `-n`: the experiment matrix and the number of calls; calls nothing, needs no key.
pub(crate) fn dry_run(suite: &Suite, a: &RunArgs, out: &Out) -> Result<i32> {
    super::settings::limits(a)?;
    let plan = super::settings::plan(suite, a)?;
    // The checks a real run makes before its first call (weights, thresholds, the schema).
    llm_evals::score::build(suite)?;
    for r in &plan.lineup.refused {
        out.warn(&r.to_string());
    }
    let mut per_dataset: BTreeMap<&str, usize> = BTreeMap::new();
    for c in plan.cases.heads() {
        *per_dataset.entry(c.dataset).or_default() += 1;
    }
    let mut header = vec![
        "model".to_string(),
        "provider".into(),
        "effort".into(),
        "temp".into(),
        "max_tokens".into(),
        "$/M in/out".into(),
    ];
    header.extend(per_dataset.keys().map(|d| d.to_string()));
    header.push("calls".into());
    let mut t = table(header);
    for c in &plan.lineup.contenders {
        let mut row = vec![
            c.info.id.clone(),
            c.info.provider.clone(),
            c.info.effort.clone().unwrap_or_else(|| "default".into()),
            c.info
                .temperature
                .clone()
                .unwrap_or_else(|| "default".into()),
            c.info
                .max_tokens
                .map(|m| m.to_string())
                .unwrap_or_else(|| "-".into()),
            price_per_million(suite, c),
        ];
        row.extend(per_dataset.values().map(|n| n.to_string()));
        row.push((plan.cases.len() * plan.repeat).to_string());
        t.add_row(row);
    }
    let n = per_dataset.len();
    align_right(&mut t, 4..(7 + n));
    out.line(&t.to_string());
    let experiments = plan.lineup.contenders.len() * n;
    let calls = plan.lineup.contenders.len() * plan.cases.len() * plan.repeat;
    // `--repeat K`: each case K times (a run of one try reads as it always did).
    let tries = match plan.repeat {
        1 => String::new(),
        k => format!(", {k} tries per case"),
    };
    let count = llm_evals::text::plural;
    out.line(&format!(
        "{} × {} = {}, {}{tries} ({} at a time, {} in flight each); nothing was called",
        count(plan.lineup.contenders.len(), "contender", "contenders"),
        count(n, "dataset", "datasets"),
        count(experiments, "experiment", "experiments"),
        count(calls, "call", "calls"),
        plan.concurrency_label(),
        count(plan.parallelism, "case", "cases")
    ));
    Ok(exit::OK)
}

/// Dollars per million input/output tokens (`0.042/0`): the suite's `pricing:`, else what
/// the provider ships with; `free` for the offline providers (they answer in the process
/// and need no key), `-` when unknown.
fn price_per_million(suite: &Suite, c: &llm_evals::suite::Contender) -> String {
    let Some(provider) = llm_evals::provider::Registry::default()
        .get(&c.kind.name)
        .cloned()
    else {
        return "-".into();
    };
    match llm_evals::runner::pricing(suite, c, provider.as_ref()) {
        Some(p) => format!("{}/{}", p.input, p.output),
        None if !provider.sends() && provider.key_env(c).is_none() => "free".into(),
        None => "-".into(),
    }
}
