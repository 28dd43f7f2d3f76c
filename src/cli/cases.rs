use super::args::SelectArgs;
use super::exit;
use super::output::{Out, align_right, table};
use llm_evals::error::Result;
use llm_evals::suite::{Overrides, Selection, Suite, cases, lineup};

/// `evals cases`: one row per case, then the refused contenders.
pub(crate) fn run(suite: &Suite, sel: &SelectArgs, out: &Out) -> Result<i32> {
    let scorer = llm_evals::score::build(suite)?;
    let picked = cases::select(&suite.cases, &selection(sel))?;
    // A tags column when the suite's cases carry any (the shape does not change with -d).
    let tagged = suite.cases.cases.heads().any(|c| !c.tags.is_empty());
    let mut header = vec![
        "dataset".into(),
        "case".into(),
        "difficulty".into(),
        "expects".into(),
        "words".into(),
    ];
    if tagged {
        header.push("tags".into());
    }
    let mut t = table(header);
    for c in picked.iter() {
        let c = &c?;
        let difficulty = c
            .metadata
            .get("difficulty")
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .unwrap_or_else(|| "-".into());
        let mut row = vec![
            c.dataset.clone(),
            c.id.clone(),
            difficulty,
            scorer.summary(c),
            c.input.word_count().to_string(),
        ];
        if tagged {
            row.push(if c.tags.is_empty() {
                "-".into()
            } else {
                c.tags.join(", ")
            });
        }
        t.add_row(row);
    }
    align_right(&mut t, [4]);
    out.line(&t.to_string());
    let datasets: std::collections::BTreeSet<&str> = picked.heads().map(|c| c.dataset).collect();
    out.line(&format!(
        "{} in {}",
        llm_evals::text::plural(picked.len(), "case", "cases"),
        llm_evals::text::plural(datasets.len(), "dataset", "datasets")
    ));
    let lineup = lineup::expand(
        &suite.config,
        &Overrides::default(),
        &llm_evals::provider::Registry::default(),
    );
    if !lineup.refused.is_empty() {
        out.line("");
        out.line("refused (never scored):");
        for r in &lineup.refused {
            out.line(&format!("  {r}"));
        }
    }
    Ok(exit::OK)
}

pub(crate) fn selection(sel: &SelectArgs) -> Selection {
    Selection {
        datasets: sel.datasets.clone(),
        cases: sel.cases.clone(),
        tags: sel.tags.clone(),
    }
}
