use anstyle::{AnsiColor, Style};

use super::exit;
use super::output::{Out, align_right, table};
use llm_evals::error::{Error, Result};
use llm_evals::score::weighted;
use llm_evals::suite::Suite;

/// `evals weights`: each weighted column, its direction and its real share.
pub(crate) fn run(suite: &Suite, out: &Out) -> Result<i32> {
    let Some(ws) = &suite.config.weighted_score else {
        return Err(Error::Usage(format!(
            "{} has no weighted_score: add `weighted_score: {{ weights: {{ score: 5, cost: -2 }} }}`",
            suite.display_path
        )));
    };
    let scorer = llm_evals::score::build(suite)?;
    let weights: Vec<(String, f64)> = ws.weights.iter().map(|(k, v)| (k.clone(), *v)).collect();
    let metrics = scorer.metrics();
    let mut t = table(vec![
        "column".into(),
        "weight".into(),
        "direction".into(),
        "share".into(),
    ]);
    let down = Style::new().bold().fg_color(Some(AnsiColor::Blue.into()));
    let up = Style::new().bold().fg_color(Some(AnsiColor::Yellow.into()));
    for s in weighted::shares(&weights) {
        let dir = if s.lower_is_better {
            out.paint("↓ lower is better", down)
        } else {
            out.paint("↑ higher is better", up)
        };
        t.add_row(vec![
            s.name.clone(),
            format_weight(s.weight),
            dir,
            format!("{:.1}%", s.percent),
        ]);
    }
    let red = Style::new().fg_color(Some(AnsiColor::Red.into()));
    for m in &metrics {
        let via_score = m.primary && weights.iter().any(|(n, _)| n == "score");
        if !via_score && !weights.iter().any(|(n, _)| n == &m.name) {
            t.add_row(vec![
                out.paint(&m.name, red),
                "-".into(),
                out.paint("not weighted", red),
                "-".into(),
            ]);
        }
    }
    align_right(&mut t, [1, 3]);
    out.line(&t.to_string());
    Ok(exit::OK)
}

fn format_weight(w: f64) -> String {
    if w.fract() == 0.0 {
        format!("{w:.0}")
    } else {
        format!("{w}")
    }
}
