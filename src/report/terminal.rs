//! The terminal report: the per-case breakdown (for `run`), one leaderboard per dataset
//! with its best value, the overall leaderboard (with one dataset, a line saying it is that
//! dataset's table), and a glossary of the metrics.

use std::fmt::Write;

use anstyle::{AnsiColor, Style};
use comfy_table::{Attribute, Cell, Color};

use super::Report;
use super::format::{contender_label, money, pct, secs};
use super::leaderboard::{Standings, standings};
use crate::error::Result;
use crate::results::{CaseSource, Comparison, ExperimentResult, MetricDef, RunResult};
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
    /// The columns every line fits in: a table leaves out its least important columns
    /// (and says which), shortens long metric names, and the lines under it wrap; `None`:
    /// every column, lines as long as they are (`--wide`, a pipe, a file).
    pub width: Option<usize>,
    /// Print the glossary of the columns after the tables (`--explain`). Without it, a
    /// table on a terminal (`width` set) ends with a one-line hint saying so.
    pub explain: bool,
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
/// then a settings column all of whose rows say the same (said once under the table), then
/// the metric names are shortened, then [`DROP_NEXT`], then the metrics after the primary
/// one, last first. `#`, model, the settings that tell rows apart, wscore, the primary
/// metric, errors and truncated always stay.
const DROP_FIRST: &[&str] = &["tok_in", "tok_out", "p95", "time"];

/// Left out after the metric names are shortened, in order.
const DROP_NEXT: &[&str] = &["±", "judge_cost", "latency", "cost", "flaky", "pass^k"];

/// The settings columns, left out only when every row says the same.
const SETTINGS: &[&str] = &["effort", "temp", "max"];

/// `field_accuracy` as `field…` when names must be short: at most `max` columns (at least
/// 2), cut inside the name with `…`, never ending on `_`. The glossary (`--explain`) says
/// what each stands for.
pub fn abbreviate(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        return name.to_string();
    }
    let cut: String = name.chars().take(max.max(2) - 1).collect();
    format!("{}…", cut.trim_end_matches(['_', '-', '.', ' ']))
}

/// Each name of `names` shortened to `max` columns, none made the same as another: names
/// whose short forms would collide keep one more character each until they differ (or
/// are whole).
fn abbreviations(names: &[&str], max: usize) -> Vec<String> {
    let mut out: Vec<String> = names.iter().map(|n| abbreviate(n, max)).collect();
    let mut room = max;
    while room < 64 {
        let clash = |i: usize, out: &[String]| {
            out.iter()
                .enumerate()
                .any(|(j, o)| j != i && *o == out[i] && names[j] != names[i])
        };
        let clashing: Vec<usize> = (0..out.len()).filter(|&i| clash(i, &out)).collect();
        if clashing.is_empty() {
            break;
        }
        room += 1;
        for i in clashing {
            out[i] = abbreviate(names[i], room);
        }
    }
    out
}

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
    fn write(
        &self,
        run: &RunResult,
        cases: CaseSource<'_>,
        _: Option<&Comparison>,
        to: &mut dyn std::io::Write,
    ) -> Result<()> {
        // The tables are per experiment; only the breakdown (what it prints) and the
        // variant totals (the cases of a variant, aggregated) hold cases.
        let mut out = String::new();
        let metrics = super::leaderboard::metrics_in_order(run);
        // Metric names shortened in some table, to be named in the glossary.
        let mut shortened: Vec<(String, String)> = Vec::new();
        if self.breakdown {
            self.breakdown(run, cases, &metrics, &mut out, &mut shortened)?;
        }
        let (tables, overall) = standings(run);
        for s in &tables {
            self.standings(run, s, &metrics, &mut out, &mut shortened);
        }
        if matches!(self.totals, Totals::Variant | Totals::Both) {
            for s in super::leaderboard::variant_standings(run, cases)? {
                self.standings(run, &s, &metrics, &mut out, &mut shortened);
            }
        }
        if matches!(self.totals, Totals::Overall | Totals::Both) {
            if let Some(s) = &overall {
                self.standings(run, s, &metrics, &mut out, &mut shortened);
            } else if let Some(note) = super::leaderboard::overall_note(&tables) {
                let _ = writeln!(out, "{}\n", self.fit(&note, "  "));
            }
        }
        if self.explain {
            self.glossary(run, &metrics, &shortened, &mut out);
        } else if self.width.is_some() {
            let hint = if shortened.is_empty() {
                "--explain says what each column means"
            } else {
                "--explain names the shortened columns and says what each column means"
            };
            let _ = writeln!(out, "{}", self.paint(hint, Style::new().dimmed()));
        }
        // What is left of a control character is ours (the colors): the data in the text
        // was shown as it went in, and whatever else the net catches.
        let shown = if self.color {
            visible_keeping_color(&out)
        } else {
            visible(&out)
        };
        to.write_all(shown.as_bytes()).map_err(super::io)
    }
}

impl Terminal {
    /// `text` wrapped to the terminal's width (as it is without one), later lines indented.
    fn fit(&self, text: &str, indent: &str) -> String {
        match self.width {
            Some(w) => crate::text::wrap(text, w, indent),
            None => text.to_string(),
        }
    }

    /// The line under a table naming the columns left out for room, if any.
    fn left_out_note(&self, left_out: &[&str], out: &mut String) {
        if !left_out.is_empty() {
            let line = format!(
                "left out to fit {} columns: {} (--wide shows every column)",
                self.width.unwrap_or_default(),
                left_out.join(", "),
            );
            let _ = writeln!(out, "{}", self.fit(&line, "  "));
        }
    }

    /// What each column means (`--explain`), a shortened name beside its whole one.
    fn glossary(
        &self,
        run: &RunResult,
        metrics: &[&MetricDef],
        shortened: &[(String, String)],
        out: &mut String,
    ) {
        let _ = writeln!(out, "glossary:");
        let mut entries: Vec<(String, String)> = Vec::new();
        for m in metrics {
            let dir = if m.higher_is_better {
                "higher is better"
            } else {
                "lower is better"
            };
            let shown_as = match shortened.iter().find(|(whole, _)| *whole == m.name) {
                Some((_, short)) => format!("(shown as {short}) "),
                None => String::new(),
            };
            entries.push((
                m.name.clone(),
                format!("{shown_as}{} ({dir})", m.description),
            ));
        }
        let fixed = [
            (
                "wscore",
                "weighted score from weighted_score.weights (see `evals weights`)",
            ),
            (
                "effort/temp/max",
                "the settings sent: reasoning effort, temperature, the reply's token cap",
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
            entries.push((k.to_string(), v.to_string()));
        }
        for (k, v) in entries {
            let line = format!("  {k:<18} {v}");
            let _ = writeln!(out, "{}", self.fit(&line, &" ".repeat(21)));
        }
    }

    fn standings(
        &self,
        run: &RunResult,
        s: &Standings,
        metrics: &[&MetricDef],
        out: &mut String,
        shortened: &mut Vec<(String, String)>,
    ) {
        let weighted = !run.run.weights.is_empty();
        let title = match &s.dataset {
            Some(d) if d.starts_with("variant ") => d.clone(),
            Some(d) => format!("dataset {d}"),
            None => "overall".to_string(),
        };
        let _ = writeln!(out, "{}", self.paint(&title, Style::new().bold()));
        let header = super::leaderboard::header(run);
        let mut rows: Vec<Vec<Cell>> = Vec::new();
        let mut texts: Vec<Vec<String>> = Vec::new();
        for (i, e) in s.rows.iter().enumerate() {
            let mut row = vec![Cell::new((i + 1).to_string()), self.model_cell(run, e)];
            let mut text = vec![(i + 1).to_string(), e.contender.id.clone()];
            for v in super::leaderboard::settings_cells(run, e) {
                row.push(Cell::new(visible(&v)));
                text.push(v);
            }
            let mut figures: Vec<String> = Vec::new();
            if weighted {
                figures.push(pct(e.wscore));
            }
            for m in metrics {
                figures.push(pct(e.means.get(&m.name).copied().flatten()));
            }
            if super::leaderboard::repeated(run) {
                figures.extend(super::leaderboard::repeat_cells(e));
            }
            row.extend(figures.iter().map(Cell::new));
            text.extend(figures);
            let errors = if e.errors > 0 {
                self.cell(&e.errors.to_string(), Some(Color::DarkRed), true)
            } else {
                Cell::new("0")
            };
            row.push(errors);
            text.push(e.errors.to_string());
            if super::leaderboard::shows_truncated(run) {
                row.push(if e.truncated > 0 {
                    self.cell(&e.truncated.to_string(), Some(Color::DarkYellow), true)
                } else {
                    Cell::new("0")
                });
                text.push(e.truncated.to_string());
            }
            let mut rest = vec![
                money(e.cost_usd),
                secs(Some(e.time_s)),
                secs(e.latency.mean_s),
                secs(e.latency.p95_s),
                tokens(e.tokens_in),
                tokens(e.tokens_out),
            ];
            if super::leaderboard::shows_judge_cost(run) {
                rest.push(money(e.judge_cost_usd));
            }
            row.extend(rest.iter().map(Cell::new));
            text.extend(rest);
            rows.push(row);
            texts.push(text);
        }
        let right = |i: usize| i == 0 || i >= 2 + super::leaderboard::settings_columns(run);
        let metric_names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
        let mut table = Fitted::new(header, right);
        let mut t = self.leaderboard(&table, &rows);
        let mut same: Vec<String> = Vec::new();
        let mut same_columns: Vec<usize> = Vec::new();
        if let Some(width) = self.width {
            let fits = |t: &comfy_table::Table| table_width(t) <= width;
            let at = |table: &Fitted, name: &str| table.names.iter().position(|h| h == name);
            let mut steps: Vec<Step> = DROP_FIRST.iter().map(|n| Step::Drop(n)).collect();
            steps.extend(SETTINGS.iter().map(|n| Step::Same(n)));
            steps.push(Step::Shorten);
            steps.extend(DROP_NEXT.iter().map(|n| Step::Drop(n)));
            steps.extend(metric_names.iter().skip(1).rev().map(|n| Step::Drop(n)));
            for step in steps {
                if fits(&t) {
                    break;
                }
                match step {
                    Step::Drop(name) => {
                        if let Some(i) = at(&table, name) {
                            table.drop(i);
                        }
                    }
                    Step::Same(name) => {
                        let Some(i) = at(&table, name) else { continue };
                        let first = texts.first().map(|r| r[i].clone());
                        if texts.iter().all(|r| Some(&r[i]) == first.as_ref()) {
                            table.drop(i);
                            same_columns.push(i);
                            if let Some(v) = first.filter(|v| v != "default") {
                                same.push(format!("{name} {v}"));
                            }
                        }
                    }
                    Step::Shorten => {
                        // As wide as the figures under them: `100.0%`.
                        let short = abbreviations(&metric_names, 6);
                        for (name, short) in metric_names.iter().zip(short) {
                            if let Some(i) = at(&table, name) {
                                table.shown[i] = short;
                            }
                        }
                    }
                }
                t = self.leaderboard(&table, &rows);
            }
            // Columns left out after the names were shortened may have made room for the
            // whole names again.
            let whole = Fitted {
                shown: table.names.clone(),
                ..table.clone()
            };
            let t_whole = self.leaderboard(&whole, &rows);
            if table.shown != table.names && fits(&t_whole) {
                table = whole;
                t = t_whole;
            }
            for (name, short) in table.names.iter().zip(&table.shown) {
                if name != short && !shortened.iter().any(|(w, _)| w == name) {
                    shortened.push((name.clone(), short.clone()));
                }
            }
        }
        let _ = writeln!(out, "{t}");
        let max_same = s.rows.first().and_then(|e| e.contender.max_tokens);
        if !same_columns.is_empty() {
            // The cap is in every row's name; say it with the settings all rows share.
            if let Some(m) = max_same.filter(|_| !super::leaderboard::shows_max_tokens(run)) {
                same.push(format!("max {m}"));
            }
            if !same.is_empty() {
                let line = format!("every row: {}", same.join(", "));
                let _ = writeln!(out, "{}", self.fit(&line, "  "));
            }
        }
        self.left_out_note(&table.left_out(&same_columns), out);
        let label = |e: &ExperimentResult| {
            let whole = contender_label(&e.contender);
            match whole.strip_prefix(e.contender.id.as_str()) {
                Some(rest) => format!("{}{rest}", self.model(run, e)),
                None => whole,
            }
        };
        let mut under = vec![super::leaderboard::best_value_text(s, &label)];
        if weighted {
            under.push(super::leaderboard::best_weighted_text(s, &label));
        }
        under.extend(super::leaderboard::billed_notes(s, &label));
        for line in under {
            let _ = writeln!(out, "{}", self.fit(&line, "  "));
        }
        let _ = writeln!(out);
    }

    /// The leaderboard with the columns `table` keeps; `#` and the figures right-aligned.
    fn leaderboard(&self, table: &Fitted, rows: &[Vec<Cell>]) -> comfy_table::Table {
        let kept: Vec<usize> = (0..table.names.len()).filter(|i| table.keep[*i]).collect();
        let mut t = self.table(kept.iter().map(|i| table.shown[*i].clone()).collect());
        for row in rows {
            t.add_row(
                kept.iter()
                    .filter_map(|i| row.get(*i).cloned())
                    .collect::<Vec<_>>(),
            );
        }
        for (col, i) in kept.iter().enumerate() {
            if table.right[*i]
                && let Some(c) = t.column_mut(col)
            {
                c.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
        t
    }

    fn breakdown(
        &self,
        run: &RunResult,
        cases: CaseSource<'_>,
        metrics: &[&MetricDef],
        out: &mut String,
        shortened: &mut Vec<(String, String)>,
    ) -> Result<()> {
        let metric_names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
        for (i, e) in run.experiments.iter().enumerate() {
            let label = contender_label(&e.contender);
            let said = match label.strip_prefix(e.contender.id.as_str()) {
                Some(rest) => format!("{}{rest}", self.model(run, e)),
                None => label,
            };
            let title = format!("{said} · {}", self.paint(&e.dataset, Style::new().bold()));
            let _ = writeln!(out, "{}", self.fit(&title, "  "));
            let mut header = vec!["case".to_string(), "score".into()];
            header.extend(metric_names.iter().map(|m| m.to_string()));
            header.push("result".into());
            let last = header.len() - 1;
            let mut rows: Vec<Vec<Cell>> = Vec::new();
            // What is said under the table, gathered as the cases are read (once).
            let mut under: Vec<String> = Vec::new();
            for c in cases.cases(i)? {
                let (_, c) = c?;
                let c = c.as_ref();
                self.under(c, &mut under);
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
                rows.push(row);
            }
            let mut table = Fitted::new(header, |i| i != 0 && i != last);
            let mut t = self.leaderboard(&table, &rows);
            if let Some(width) = self.width {
                if table_width(&t) > width {
                    let short = abbreviations(&metric_names, 6);
                    for (i, (name, short)) in metric_names.iter().zip(short).enumerate() {
                        if short != *name {
                            table.shown[2 + i] = short.clone();
                            if !shortened.iter().any(|(w, _)| w == name) {
                                shortened.push((name.to_string(), short));
                            }
                        }
                    }
                    t = self.leaderboard(&table, &rows);
                }
                // Then the metrics, last first: the score and the verdict stay.
                for i in (2..last).rev() {
                    if table_width(&t) <= width {
                        break;
                    }
                    table.drop(i);
                    t = self.leaderboard(&table, &rows);
                }
            }
            let _ = writeln!(out, "{t}");
            self.left_out_note(&table.left_out(&[]), out);
            for line in under {
                let _ = writeln!(out, "{}", self.fit(&line, "    "));
            }
            let _ = writeln!(out);
        }
        Ok(())
    }

    /// What the breakdown says of case `c` under its experiment's table: its warnings, its
    /// error, or what [`Terminal::case_lines`] says.
    fn under(&self, c: &crate::results::CaseResult, lines: &mut Vec<String>) {
        // Shown as they go in: with color on, the net at the end keeps what looks like a
        // color sequence.
        let case = visible(&c.case);
        for w in &c.warnings {
            lines.push(format!("  {case} warning: {}", visible(w)));
        }
        if let Some(err) = &c.error {
            lines.push(format!(
                "  {case} error: {}",
                indent(&visible(&err.message))
            ));
        } else {
            self.case_lines(c, &case, lines);
        }
    }

    /// What a case that did not error says under the breakdown: its unusable reply, the
    /// fields that missed, the thresholds it failed, its tool calls and its trajectory.
    fn case_lines(&self, c: &crate::results::CaseResult, case: &str, lines: &mut Vec<String>) {
        if let Some(u) =
            super::format::unusable_text(c.reply_error.as_deref(), c.unusable_said().as_deref())
        {
            lines.push(format!("  {case} {}", visible(&u)));
        }
        for d in &c.diagnostics {
            let line = format!(
                "{}: want {}, got {} ({})",
                d.field, d.want, d.got, d.outcome
            );
            lines.push(format!("  {case} {}", visible(&line)));
        }
        for f in &c.failed_thresholds {
            lines.push(format!("  {case} below threshold: {}", visible(f)));
        }
        if let Some(calls) = c.tool_calls.as_ref().filter(|calls| !calls.is_empty()) {
            let calls: Vec<String> = calls
                .iter()
                .map(|t| format!("{}({})", t.name, t.arguments))
                .collect();
            lines.push(format!(
                "  {case} tool calls: {}",
                visible(&calls.join(", "))
            ));
        }
        // An exec adapter's calls through the gateway, in order.
        if !c.trajectory.is_empty() {
            let steps: Vec<String> = c
                .trajectory
                .iter()
                .map(crate::results::Step::summary)
                .collect();
            lines.push(format!(
                "  {case} trajectory: {}",
                visible(&steps.join(", "))
            ));
        }
    }
}

/// One step of fitting a leaderboard to the terminal.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    /// Leave out the column of this name.
    Drop(&'a str),
    /// Leave out this settings column when every row says the same.
    Same(&'a str),
    /// Shorten the metric names.
    Shorten,
}

/// A table's columns as fitting left them: which are kept, under what header.
#[derive(Clone)]
struct Fitted {
    /// The columns' whole names.
    names: Vec<String>,
    /// The headers shown (a metric's shortened name).
    shown: Vec<String>,
    keep: Vec<bool>,
    /// Whether each column (of `names`) is right-aligned.
    right: Vec<bool>,
}

impl Fitted {
    fn new(names: Vec<String>, right: impl Fn(usize) -> bool) -> Fitted {
        Fitted {
            shown: names.clone(),
            keep: vec![true; names.len()],
            right: (0..names.len()).map(right).collect(),
            names,
        }
    }

    fn drop(&mut self, i: usize) {
        self.keep[i] = false;
    }

    /// The whole names of the columns left out for room (not those whose rows all said the
    /// same), in the table's order.
    fn left_out(&self, same: &[usize]) -> Vec<&str> {
        (0..self.names.len())
            .filter(|i| !self.keep[*i] && !same.contains(i))
            .map(|i| self.names[i].as_str())
            .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{case, run};

    #[test]
    fn long_metric_names_shorten_to_distinct_names() {
        assert_eq!(abbreviate("field_accuracy", 6), "field…");
        assert_eq!(abbreviate("exact", 6), "exact");
        assert_eq!(
            abbreviations(&["accuracy_strict", "accuracy_loose", "score"], 6),
            ["accuracy_s…", "accuracy_l…", "score"]
        );
    }

    #[test]
    fn a_token_cap_that_differs_between_rows_is_a_column_kept_at_80() {
        let mut r = run(
            "r",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("a", Some(0.5), Some(false))],
        );
        let mut capped = r.experiments[0].clone();
        capped.contender.max_tokens = Some(256);
        r.experiments[0].contender.max_tokens = Some(8192);
        r.experiments.push(capped);
        let text = Terminal {
            width: Some(80),
            ..Terminal::default()
        }
        .render(&r, None);
        let header = text
            .lines()
            .find(|l| l.contains("┆ model"))
            .expect("a table");
        assert!(header.contains("┆ max"), "{text}");
        assert!(text.contains("┆ 8192") && text.contains("┆ 256"), "{text}");
    }

    #[test]
    fn every_line_fits_the_width_and_the_row_telling_settings_stay() {
        let mut r = run(
            "r",
            "main",
            "2026-01-01T00:00:00Z",
            vec![case("a-case-with-a-long-name", Some(0.5), Some(false))],
        );
        let mut hot = r.experiments[0].clone();
        hot.contender.temperature = Some("0.9".into());
        r.experiments[0].contender.temperature = Some("0.1".into());
        for e in [&mut r.experiments[0], &mut hot] {
            e.contender.id = "openrouter/a-vendor/a-model-with-a-long-name".into();
            e.contender.max_tokens = Some(8192);
        }
        r.experiments.push(hot);
        for width in [80, 100, 120] {
            let t = Terminal {
                breakdown: true,
                width: Some(width),
                ..Terminal::default()
            };
            let text = t.render(&r, None);
            for line in text.lines() {
                assert!(
                    console::measure_text_width(line) <= width,
                    "{width}: {line}\n{text}"
                );
            }
            let header = text
                .lines()
                .find(|l| l.contains("┆ model"))
                .expect("a table");
            assert!(header.contains("┆ temp"), "{text}");
            if width == 80 {
                // The settings all rows share, left out for room, are said once.
                assert!(text.contains("every row: max 8192"), "{text}");
            }
            assert!(!text.contains("glossary"), "{text}");
            assert!(text.ends_with("says what each column means\n"), "{text}");
        }
        // --wide (no width): every column, the lines as long as they are.
        let text = Terminal {
            explain: true,
            ..Terminal::default()
        }
        .render(&r, None);
        assert!(text.contains("┆ tok_out"), "{text}");
        assert!(text.contains("glossary:"), "{text}");
    }
}
