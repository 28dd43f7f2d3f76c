//! `evals import promptfoo [CONFIG] [-o DIR] [--force]`: another tool's config written as
//! an evals suite (see [`llm_evals::import`]); what has no equivalent is listed on stderr
//! with its file and line, and in the suite's IMPORTED.md.

use std::path::PathBuf;

use super::args::ImportCommand;
use super::exit;
use super::output::Out;
use llm_evals::error::{Error, Result};
use llm_evals::import::{self, promptfoo};
use llm_evals::suite::discovery::display_path;

pub(crate) fn run(command: &ImportCommand, out: &Out) -> Result<i32> {
    let ImportCommand::Promptfoo {
        config,
        out: dir,
        force,
    } = command;
    let cwd = std::env::current_dir().map_err(|e| Error::io(PathBuf::from("."), e))?;
    let source = cwd.join(config);
    let shown = display_path(&source, &cwd);
    let target = cwd.join(dir);
    let target_shown = display_path(&target, &cwd);
    let suite = promptfoo::import(&source, &shown, &target)?;
    import::write(&suite, &target, *force, &target_shown)?;
    for u in &suite.untranslated {
        out.warn(&format!("not translated: {u}"));
    }
    let notes = format!("{target_shown}/{}", promptfoo::NOTES_FILE);
    out.line(&format!(
        "wrote {target_shown}/: {} from {shown}, {} for {}",
        llm_evals::text::plural(suite.tests, "case", "cases"),
        llm_evals::text::plural(suite.contenders.len(), "contender", "contenders"),
        if suite.contenders.is_empty() {
            "none translated".to_string()
        } else {
            suite.contenders.join(", ")
        },
    ));
    if suite.untranslated.is_empty() {
        out.line("every part of the config was translated");
    } else {
        out.line(&format!(
            "{} not translated (listed above and in {notes})",
            llm_evals::text::plural(suite.untranslated.len(), "part", "parts")
        ));
    }
    let cd = target
        .parent()
        .filter(|p| *p != cwd)
        .map(|p| format!("cd {} && ", display_path(p, &cwd)))
        .unwrap_or_default();
    out.line(&format!("next: {cd}evals verify, then evals compare"));
    Ok(exit::OK)
}
