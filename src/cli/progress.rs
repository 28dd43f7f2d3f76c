//! Progress bars on stderr: one per experiment, only on a terminal.

use std::io::IsTerminal;
use std::sync::Arc;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::results::CaseResult;
use crate::runner::{OnCase, RunPlan};

pub struct Progress {
    bars: Option<(MultiProgress, Vec<ProgressBar>)>,
}

impl Progress {
    pub fn new(plan: &RunPlan) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bars: None };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        // One colour per contender, in the order the leaderboard colours model names.
        const COLOURS: &[&str] = &["cyan", "magenta", "green", "yellow", "blue", "red"];
        let mut bars = Vec::new();
        for (i, c) in plan.lineup.contenders.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let style = ProgressStyle::with_template(&format!(
                "{{prefix:>40.{colour}}} {{bar:30.{colour}/white}} {{pos}}/{{len}} {{msg}}"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            for d in plan.datasets() {
                let n = plan.cases.iter().filter(|x| x.dataset == d).count() as u64;
                let b = multi.add(ProgressBar::new(n));
                b.set_style(style.clone());
                b.set_prefix(format!("{} {} · {d}", c.id(), c.settings_slug()));
                bars.push(b);
            }
        }
        Progress {
            bars: Some((multi, bars)),
        }
    }

    pub fn callback(&self) -> Option<OnCase> {
        let (_, bars) = self.bars.as_ref()?;
        let bars = bars.clone();
        Some(Arc::new(move |i: usize, r: &CaseResult| {
            if let Some(b) = bars.get(i) {
                b.inc(1);
                if r.error.is_some() {
                    b.set_message("errors");
                }
            }
        }))
    }

    /// Runs `f` (which writes to stderr) with the bars hidden.
    pub fn quiet(&self) -> crate::runner::Quiet {
        match &self.bars {
            Some((multi, _)) => {
                let multi = multi.clone();
                Arc::new(move |f: &mut dyn FnMut()| multi.suspend(f))
            }
            None => Arc::new(|f: &mut dyn FnMut()| f()),
        }
    }

    pub fn finish(&self) {
        if let Some((m, bars)) = &self.bars {
            for b in bars {
                // Keep each bar where it stopped: an aborted run did not finish its cases.
                b.abandon();
            }
            let _ = m.clear();
        }
    }
}
