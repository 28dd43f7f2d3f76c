//! The terminal report: the per-case breakdown (for `run`), one leaderboard per dataset
//! with its best value, the overall leaderboard (with one dataset, a line saying it is that
//! dataset's table), and a glossary of the metrics.

use std::fmt::Write;

use anstyle::{AnsiColor, Style};
use comfy_table::{Attribute, Cell, Color};

use super::Report;
use super::format::{money, pct, secs};
use super::leaderboard::{Standings, standings};
use crate::results::{Comparison, ExperimentResult, MetricDef, RunResult};
use crate::text::{visible, visible_keeping_color};

/// The leaderboard report; its fields say how it looks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Terminal {
    /// Color the output (ANSI escape codes).
    pub color: bool,
    /// Print each case's score, metrics and the diagnostics of its misses first.
    pub breakdown: bool,
    /// Which totals follow the per-dataset tables.
    pub totals: Totals,
    /// The columns a leaderboard fits in (the least important columns are left out, and
    /// said so); `None`: every column (`--wide`, a pipe, a file).
    pub width: Option<usize>,
}

/// `--totals`: the overall table (contenders across every case), one table per case
/// variant across datasets, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Totals {
    /// The overall table: every contender across every case.
    #[default]
    Overall,
    /// One table per case variant, across datasets.
    Variant,
    /// Both: the variant tables, then the overall one.
    Both,
}

/// The models' colors, in table cells (comfy-table styles a cell after measuring it, so a
/// colored cell is as wide as its text).
const PALETTE: &[Color] = &[
    Color::DarkCyan,
    Color::DarkMagenta,
    Color::DarkGreen,
    Color::DarkYellow,
    Color::DarkBlue,
    Color::Red,
    Color::Cyan,
    Color::Magenta,
];

/// The same colors as escape codes, for text outside tables.
const PALETTE_TEXT: &[AnsiColor] = &[
    AnsiColor::Cyan,
    AnsiColor::Magenta,
    AnsiColor::Green,
    AnsiColor::Yellow,
    AnsiColor::Blue,
    AnsiColor::BrightRed,
    AnsiColor::BrightCyan,
    AnsiColor::BrightMagenta,
];

/// Leaderboard columns left out first when a table is too wide for the terminal, in order;
/// `#`, model, the scores and errors always stay.
const DROP_FIRST: &[&str] = &[
    "tok_in", "tok_out", "p95", "time", "temp", "effort", "latency", "cost",
];

impl Terminal {
    fn paint(&self, s: &str, style: Style) -> String {
        if self.color {
            let s = visible(s);
            format!("{style}{s}{style:#}")
        } else {
            s.to_string()
        }
    }

    /// A table cell, colored when color is on.
    fn cell(&self, s: &str, fg: Option<Color>, bold: bool) -> Cell {
        let mut c = Cell::new(visible(s));
        if self.color {
            if let Some(fg) = fg {
                c = c.fg(fg);
            }
            if bold {
                c = c.add_attribute(Attribute::Bold);
            }
        }
        c
    }

    fn model_index(run: &RunResult, e: &ExperimentResult) -> usize {
        let mut ids: Vec<&str> = run
            .experiments
            .iter()
            .map(|x| x.contender.id.as_str())
            .collect();
        ids.dedup();
        ids.iter().position(|x| *x == e.contender.id).unwrap_or(0)
    }

    fn model_cell(&self, run: &RunResult, e: &ExperimentResult) -> Cell {
        let i = Self::model_index(run, e);
        self.cell(&e.contender.id, Some(PALETTE[i % PALETTE.len()]), false)
    }

    fn table(&self, header: Vec<String>) -> comfy_table::Table {
        let mut t = table(header);
        if self.color {
            t.enforce_styling();
        } else {
            t.force_no_tty();
        }
        t
    }

    fn model(&self, run: &RunResult, e: &ExperimentResult) -> String {
        let i = Self::model_index(run, e);
        self.paint(
            &e.contender.id,
            Style::new().fg_color(Some(PALETTE_TEXT[i % PALETTE_TEXT.len()].into())),
        )
    }
}

fn tokens(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

fn table(header: Vec<String>) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Disabled)
        .set_header(header);
    t
}

impl Report for Terminal {
    fn render(&self, run: &RunResult, _: Option<&Comparison>) -> String {
        let mut out = String::new();
        let metrics = super::leaderboard::metrics_in_order(run);
        if self.breakdown {
            self.breakdown(run, &metrics, &mut out);
        }
        let (tables, overall) = standings(run);
        for s in &tables {
            self.standings(run, s, &metrics, &mut out);
        }
        if matches!(self.totals, Totals::Variant | Totals::Both) {
            for s in super::leaderboard::variant_standings(run) {
                self.standings(run, &s, &metrics, &mut out);
            }
        }
        if matches!(self.totals, Totals::Overall | Totals::Both) {
            if let Some(s) = &overall {
                self.standings(run, s, &metrics, &mut out);
            } else if let Some(note) = super::leaderboard::overall_note(&tables) {
                let _ = writeln!(out, "{note}\n");
            }
        }
        let _ = writeln!(out, "glossary:");
        for m in &metrics {
            let dir = if m.higher_is_better {
                "higher is better"
            } else {
                "lower is better"
            };
            let _ = writeln!(out, "  {:<18} {} ({dir})", m.name, m.description);
        }
        let fixed = [
            (
                "wscore",
                "weighted score from weighted_score.weights (see `evals weights`)",
            ),
            (
                "errors",
                "cases with no score: transport failures, cassette misses, crashed adapters",
            ),
            (
                "truncated",
                "scored cases whose reply was cut at the token limit (finish_reason length)",
            ),
            (
                "cost",
                "dollars reported by the provider or priced from `pricing:`; - when unknown",
            ),
            (
                "time",
                "experiment wall time from call latencies over -p workers",
            ),
            ("latency", "mean seconds of the calls that worked"),
            ("p95", "95th percentile seconds of the calls that worked"),
            ("tok_in/tok_out", "input and output tokens"),
            (
                "judge_cost",
                "dollars the judge's calls cost, not in the contender's cost",
            ),
        ];
        for (k, v) in fixed {
            if k == "wscore" && run.run.weights.is_empty()
                || k == "truncated" && !super::leaderboard::shows_truncated(run)
                || k == "judge_cost" && !super::leaderboard::shows_judge_cost(run)
            {
                continue;
            }
            let _ = writeln!(out, "  {k:<18} {v}");
        }
        // What is left of a control character is ours (the colors): the data in the text
        // was shown as it went in, and whatever else the net catches.
        if self.color {
            visible_keeping_color(&out).into_owned()
        } else {
            visible(&out).into_owned()
        }
    }
}

impl Terminal {
    fn standings(&self, run: &RunResult, s: &Standings, metrics: &[&MetricDef], out: &mut String) {
        let weighted = !run.run.weights.is_empty();
        let title = match &s.dataset {
            Some(d) if d.starts_with("variant ") => d.clone(),
            Some(d) => format!("dataset {d}"),
            None => "overall".to_string(),
        };
        let _ = writeln!(out, "{}", self.paint(&title, Style::new().bold()));
        let header = super::leaderboard::header(run);
        let mut rows: Vec<Vec<Cell>> = Vec::new();
        for (i, e) in s.rows.iter().enumerate() {
            let mut row = vec![
                Cell::new((i + 1).to_string()),
                self.model_cell(run, e),
                Cell::new(visible(e.contender.effort.as_deref().unwrap_or("default"))),
                Cell::new(visible(
                    e.contender.temperature.as_deref().unwrap_or("default"),
                )),
            ];
            if weighted {
                row.push(Cell::new(pct(e.wscore)));
            }
            for m in metrics {
                row.push(Cell::new(pct(e.means.get(&m.name).copied().flatten())));
            }
            if super::leaderboard::repeated(run) {
                row.extend(super::leaderboard::repeat_cells(e).map(Cell::new));
            }
            let errors = if e.errors > 0 {
                self.cell(&e.errors.to_string(), Some(Color::DarkRed), true)
            } else {
                Cell::new("0")
            };
            row.push(errors);
            if super::leaderboard::shows_truncated(run) {
                row.push(if e.truncated > 0 {
                    self.cell(&e.truncated.to_string(), Some(Color::DarkYellow), true)
                } else {
                    Cell::new("0")
                });
            }
            row.extend(
                [
                    money(e.cost_usd),
                    secs(Some(e.time_s)),
                    secs(e.latency.mean_s),
                    secs(e.latency.p95_s),
                    tokens(e.tokens_in),
                    tokens(e.tokens_out),
                ]
                .map(Cell::new),
            );
            if super::leaderboard::shows_judge_cost(run) {
                row.push(Cell::new(money(e.judge_cost_usd)));
            }
            rows.push(row);
        }
        // Leave out the least important columns until the table fits the terminal.
        let mut keep = vec![true; header.len()];
        let mut t = self.leaderboard(&header, &rows, &keep);
        let mut left_out: Vec<&str> = Vec::new();
        if let Some(width) = self.width {
            for name in DROP_FIRST {
                if table_width(&t) <= width {
                    break;
                }
                if let Some(i) = header.iter().position(|h| h == name) {
                    keep[i] = false;
                    left_out.push(name);
                    t = self.leaderboard(&header, &rows, &keep);
                }
            }
        }
        let _ = writeln!(out, "{t}");
        if !left_out.is_empty() {
            let _ = writeln!(
                out,
                "({} left out to fit {} columns; --wide shows every column)",
                left_out.join(", "),
                self.width.unwrap_or_default()
            );
        }
        let label = |e: &ExperimentResult| {
            format!(
                "{} ({} effort, temp {})",
                self.model(run, e),
                e.contender.effort.as_deref().unwrap_or("default"),
                e.contender.temperature.as_deref().unwrap_or("default")
            )
        };
        let _ = writeln!(out, "{}", super::leaderboard::best_value_text(s, &label));
        if weighted {
            let _ = writeln!(out, "{}", super::leaderboard::best_weighted_text(s, &label));
        }
        for note in super::leaderboard::billed_notes(s, &label) {
            let _ = writeln!(out, "{note}");
        }
        let _ = writeln!(out);
    }

    /// The leaderboard with the columns `keep` says; `#` and the figures right-aligned.
    fn leaderboard(
        &self,
        header: &[String],
        rows: &[Vec<Cell>],
        keep: &[bool],
    ) -> comfy_table::Table {
        let pick = |cells: Vec<Cell>| -> Vec<Cell> {
            cells
                .into_iter()
                .zip(keep)
                .filter(|(_, k)| **k)
                .map(|(c, _)| c)
                .collect()
        };
        let kept: Vec<(usize, &String)> = header
            .iter()
            .enumerate()
            .filter(|(i, _)| keep[*i])
            .collect();
        let mut t = self.table(kept.iter().map(|(_, h)| (*h).clone()).collect());
        for row in rows {
            t.add_row(pick(row.clone()));
        }
        for (col, (i, _)) in kept.iter().enumerate() {
            if (*i == 0 || *i >= 4)
                && let Some(c) = t.column_mut(col)
            {
                c.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
        t
    }

    fn breakdown(&self, run: &RunResult, metrics: &[&MetricDef], out: &mut String) {
        for e in &run.experiments {
            let _ = writeln!(
                out,
                "{} · {} · effort {} · temp {}",
                self.model(run, e),
                self.paint(&e.dataset, Style::new().bold()),
                e.contender.effort.as_deref().unwrap_or("default"),
                e.contender.temperature.as_deref().unwrap_or("default")
            );
            let mut header = vec!["case".to_string(), "score".into()];
            header.extend(metrics.iter().map(|m| m.name.clone()));
            header.push("result".into());
            let mut t = self.table(header);
            for c in &e.cases {
                let mut row = vec![Cell::new(visible(&c.case)), Cell::new(pct(c.score))];
                for m in metrics {
                    row.push(Cell::new(pct(c.metrics.get(&m.name).copied().flatten())));
                }
                let verdict = match (&c.error, c.passed) {
                    (Some(_), _) => self.cell("error", Some(Color::DarkRed), true),
                    (None, Some(true)) => self.cell("pass", Some(Color::DarkGreen), false),
                    (None, _) => self.cell("fail", Some(Color::DarkYellow), false),
                };
                row.push(verdict);
                t.add_row(row);
            }
            let _ = writeln!(out, "{t}");
            for c in &e.cases {
                // Shown as they go in: with color on, the net at the end keeps what looks
                // like a color sequence.
                let case = visible(&c.case);
                for w in &c.warnings {
                    let _ = writeln!(out, "  {case} warning: {}", visible(w));
                }
                if let Some(err) = &c.error {
                    let _ = writeln!(out, "  {case} error: {}", indent(&visible(&err.message)));
                    continue;
                }
                if let Some(u) = super::format::unusable_text(
                    c.reply_error.as_deref(),
                    c.unusable_said().as_deref(),
                ) {
                    let _ = writeln!(out, "  {case} {}", visible(&u));
                }
                for d in &c.diagnostics {
                    let line = format!(
                        "{}: want {}, got {} ({})",
                        d.field, d.want, d.got, d.outcome
                    );
                    let _ = writeln!(out, "  {case} {}", visible(&line));
                }
                for f in &c.failed_thresholds {
                    let _ = writeln!(out, "  {case} below threshold: {}", visible(f));
                }
                if let Some(calls) = c.tool_calls.as_ref().filter(|calls| !calls.is_empty()) {
                    let calls: Vec<String> = calls
                        .iter()
                        .map(|t| format!("{}({})", t.name, t.arguments))
                        .collect();
                    let _ = writeln!(out, "  {} tool calls: {}", c.case, calls.join(", "));
                }
                // An exec adapter's calls through the gateway, in order.
                if !c.trajectory.is_empty() {
                    let steps: Vec<String> = c
                        .trajectory
                        .iter()
                        .map(crate::results::Step::summary)
                        .collect();
                    let _ = writeln!(out, "  {case} trajectory: {}", visible(&steps.join(", ")));
                }
            }
            let _ = writeln!(out);
        }
    }
}

/// The widest line of a table, in terminal columns (escape codes count nothing).
fn table_width(t: &comfy_table::Table) -> usize {
    t.lines()
        .map(|l| console::measure_text_width(&l))
        .max()
        .unwrap_or(0)
}

fn indent(s: &str) -> String {
    s.replace('\n', "\n    ")
}
