//! Turns `run`/`compare`/`record` flags into a validated [`RunPlan`], and `-n` prints it.

use std::collections::BTreeMap;

use super::args::RunArgs;
use super::exit;
use super::output::{Out, align_right, table};
use llm_evals::error::{Error, Result};
use llm_evals::runner::RunPlan;
use llm_evals::suite::{Overrides, Suite, cases, lineup};

/// Builds the plan of `run`, `compare`, `record` and `check` from their flags.
pub(crate) fn build(suite: &Suite, a: &RunArgs) -> Result<RunPlan> {
    let efforts = a
        .efforts
        .iter()
        .map(|e| match e.trim() {
            "default" | "" => None,
            other => Some(other.to_string()),
        })
        .collect();
    let temperatures = a
        .temperatures
        .iter()
        .map(|t| match t.trim() {
            "default" | "" => Ok(None),
            other => other
                .parse::<f64>()
                .ok()
                .filter(|v| (0.0..=2.0).contains(v))
                .map(Some)
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "-t {t}: a temperature is a number from 0 to 2, or `default`"
                    ))
                }),
        })
        .collect::<Result<Vec<_>>>()?;
    let overrides = Overrides {
        models: a.models.clone(),
        efforts,
        temperatures,
        max_tokens: a.max_tokens,
    };
    let lineup = lineup::expand(
        &suite.config,
        &overrides,
        &llm_evals::provider::Registry::default(),
    );
    let cases = cases::select(&suite.cases, &super::cases::selection(&a.select))?;
    // `check --shard K/N`: the plan keeps its slice of the selection, and where it stands.
    let (cases, shard) = match &a.sharding {
        Some((spec, group)) => {
            let (mine, shard) =
                llm_evals::runner::shard::slice(suite, &lineup.contenders, &cases, *spec, group);
            (mine, Some(shard))
        }
        None => (cases, None),
    };
    let mut plan =
        RunPlan::new(suite, lineup, cases, a.parallelism, a.concurrency)?.with_repeat(a.repeat)?;
    plan.shard = shard;
    Ok(plan)
}

/// `--min-score` and `--min-pass-rate`, each a fraction (LLMEvalForge writes `0.95`).
pub(crate) fn limits(a: &RunArgs) -> Result<llm_evals::gate::Limits> {
    for (flag, v) in [
        ("--min-score", a.min_score),
        ("--min-pass-rate", a.min_pass_rate),
    ] {
        if let Some(v) = v
            && !(0.0..=1.0).contains(&v)
        {
            return Err(Error::Usage(format!(
                "{flag} {v}: expected a fraction between 0 and 1 (0.95 is 95%)"
            )));
        }
    }
    Ok(llm_evals::gate::Limits {
        min_score: a.min_score,
        min_pass_rate: a.min_pass_rate,
    })
}

/// `-n`: the experiment matrix and the number of calls; calls nothing, needs no key.
pub(crate) fn dry_run(suite: &Suite, a: &RunArgs, out: &Out) -> Result<i32> {
    limits(a)?;
    let plan = build(suite, a)?;
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
