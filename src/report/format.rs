//! The small formatters every report shares (hyperfine's `export/markup.rs`): scores as
//! percentages, money, seconds, and how a contender and an experiment are named.
//!
//! A missing value is `-` in the terminal and HTML; the Markdown report writes `–` (see
//! [`pct_or`]).

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
