//! The small formatters every report shares (hyperfine's `export/markup.rs`): scores as
//! percentages, money, seconds, counts, how a contender and an experiment are named, and
//! how a stopped run and an unusable reply are said.
//!
//! A missing value is `-` in the terminal and HTML; the Markdown report writes `–` (see
//! [`pct_or`]).

use crate::results::{ContenderInfo, Stopped};

/// `0.8` as `80.0%`.
pub fn percent(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

/// A score as `80.0%`, `-` when there is none.
pub fn pct(v: Option<f64>) -> String {
    pct_or(v, "-")
}

/// A score as `80.0%`, `none` when there is none.
pub fn pct_or(v: Option<f64>, none: &str) -> String {
    v.map(percent).unwrap_or_else(|| none.into())
}

/// A cost: `$0`, `$0.000012` under a hundredth of a cent, else `$0.0123`; `-` when unknown.
pub fn money(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(0.0) => "$0".into(),
        Some(v) if v < 0.0001 => format!("${v:.6}"),
        Some(v) => format!("${v:.4}"),
    }
}

/// `1.25s`, `-` when unknown.
pub fn secs(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.2}s")).unwrap_or_else(|| "-".into())
}

/// `4500` as `4,500`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `openai/gpt-4o-mini [effort high, temp 0.1]`: the contender as reports name it.
pub fn contender_label(c: &ContenderInfo) -> String {
    c.label()
}

/// `openai/gpt-4o-mini [temp 0.1] · tax`: an experiment, contender × dataset.
pub fn experiment_label(c: &ContenderInfo, dataset: &str) -> String {
    format!("{} · {dataset}", contender_label(c))
}

/// `stopped early (aborted): 4,369 of 4,500 cases did not run`.
pub fn stopped(s: &Stopped) -> String {
    format!(
        "stopped early ({}): {} of {} {} not run",
        s.status,
        thousands(s.not_run),
        thousands(s.planned),
        if s.planned == 1 {
            "case did"
        } else {
            "cases did"
        }
    )
}

/// `reply unusable (not JSON: …); the model said: "Sure! It is blue."` (the text on one
/// line, cut), when there is a reply error; just the error when the text is unknown.
pub fn unusable_text(reply_error: Option<&str>, said: Option<&str>) -> Option<String> {
    let e = reply_error?;
    Some(match said {
        Some(s) => format!(
            "reply unusable ({e}); the model said: \"{}\"",
            crate::results::one_line(s)
        ),
        None => format!("reply unusable ({e})"),
    })
}

/// `text` safe inside HTML text and double- or single-quoted attribute values (the pages we
/// write by hand: the trajectory fragment, the dashboard).
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contender(effort: Option<&str>, temp: Option<&str>, max: Option<u32>) -> ContenderInfo {
        ContenderInfo {
            id: "local/gpt-4o-mini".into(),
            provider: "local".into(),
            model: "gpt-4o-mini".into(),
            effort: effort.map(str::to_string),
            temperature: temp.map(str::to_string),
            max_tokens: max,
        }
    }

    #[test]
    fn a_contender_is_spelt_one_way_its_id_then_the_settings_sent() {
        assert_eq!(
            contender_label(&contender(None, Some("0.1"), Some(1024))),
            "local/gpt-4o-mini [temp 0.1, max 1024]"
        );
        assert_eq!(
            contender_label(&contender(Some("high"), Some("0.1"), None)),
            "local/gpt-4o-mini [effort high, temp 0.1]"
        );
        assert_eq!(
            contender_label(&contender(None, None, None)),
            "local/gpt-4o-mini"
        );
        assert_eq!(
            experiment_label(&contender(None, Some("0"), None), "tax"),
            "local/gpt-4o-mini [temp 0] · tax"
        );
    }

    #[test]
    fn a_stopped_run_counts_its_cases_in_words_that_agree() {
        let s = |not_run, planned| Stopped {
            status: crate::results::RunStatus::Aborted,
            not_run,
            planned,
        };
        assert_eq!(
            stopped(&s(1, 1)),
            "stopped early (aborted): 1 of 1 case did not run"
        );
        assert_eq!(
            stopped(&s(4369, 4500)),
            "stopped early (aborted): 4,369 of 4,500 cases did not run"
        );
    }
}
