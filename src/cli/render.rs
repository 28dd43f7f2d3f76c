//! `evals render FILE.json`: re-prints a saved run; calls nothing.

use super::args::{Global, RenderArgs};
use super::exit;
use super::output::Out;
use super::target::Target;
use llm_evals::error::{Error, Result};
use llm_evals::report::Format;

/// Renders the snapshot to stdout, `-o FILE` (the format from its extension unless
/// `--format` says) or, for `-o` alone, a stamped HTML file under `results.destination`;
/// `--open` opens the HTML in the browser (written as `-o` alone writes it when no file
/// was named).
pub(crate) fn run(g: &Global, a: &RenderArgs, env: &llm_evals::env::Env, out: &Out) -> Result<i32> {
    let output = match (&a.output, a.open) {
        (None, true) => Some(None),
        (o, _) => o.clone(),
    };
    let target = Target::new(&output);
    let ext = target.extension();
    if a.format.is_none() && matches!(ext.as_deref(), Some("md" | "markdown")) {
        return Err(Error::Usage(format!(
            "render writes the leaderboard (tui), json or html; for Markdown run `evals report {} -o {}`",
            a.file.display(),
            target_display(&target)
        )));
    }
    let format = match (a.format, &target) {
        (Some(f), _) => f.into(),
        (None, Target::Stamped) => Format::Html,
        // render writes the leaderboard, JSON or HTML: any other file gets the leaderboard.
        (None, _) => ext
            .as_deref()
            .and_then(Format::from_extension)
            .filter(|f| matches!(f, Format::Json | Format::Html))
            .unwrap_or(Format::Terminal),
    };
    if a.open && format != Format::Html {
        return Err(Error::Usage(format!(
            "--open opens the HTML report, and this render writes a {}: name an .html file (-o report.html) or leave out --format",
            if format == Format::Terminal {
                "leaderboard"
            } else {
                format.kind()
            }
        )));
    }
    let (run, comparison) = llm_evals::results::snapshot::load_checked(&a.file)
        .map_err(|e| e.named_by("evals render FILE", None))?;
    let path = match target {
        Target::Stdout => None,
        Target::File(p) => Some(p),
        Target::Stamped => {
            let suite = super::load_suite(g, out).map_err(|e| {
                Error::Usage(format!(
                    "{}\n{}",
                    e.message(llm_evals::error::Audience::CommandLine),
                    super::target::STAMPED_NEEDS_A_SUITE
                ))
            })?;
            Some(super::target::stamped(
                &suite,
                "render",
                &run,
                format.extension(),
            ))
        }
    };
    let view = super::run::View {
        breakdown: false,
        totals: a.totals,
    };
    super::run::emit(
        &run,
        comparison.as_ref(),
        format,
        path.as_deref(),
        view,
        out,
    )?;
    if a.open
        && let Some(file) = &path
    {
        let browser = super::open::Browser {
            stamped: file.clone(),
            no_open: false,
            desktop: super::open::Desktop::read(env),
        };
        browser.show(&run, comparison.as_ref(), Some(file), out);
    }
    Ok(exit::OK)
}

fn target_display(t: &Target) -> String {
    match t {
        Target::File(p) => p.display().to_string(),
        _ => "FILE.md".into(),
    }
}
