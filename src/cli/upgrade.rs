//! `evals upgrade-config [-n] [FILE]`: the agent-evals / old llm-evals lineup rewritten into
//! today's provider sections (see [`llm_evals::suite::upgrade`]), the original kept as `.bak`.

use std::path::{Path, PathBuf};

use super::args::{Global, UpgradeArgs};
use super::exit;
use super::output::Out;
use llm_evals::error::{Error, Result};
use llm_evals::suite::discovery::{self, CONFIG_NAME};
use llm_evals::suite::{Config, Locate, upgrade};

/// agent-evals' config name: upgraded into a `.llm-evals.config.yml` beside it.
const AGENT_EVALS_NAME: &str = ".agent-eval.config.yml";

pub(crate) fn run(g: &Global, a: &UpgradeArgs, out: &Out) -> Result<i32> {
    let cwd = std::env::current_dir().map_err(|e| Error::io(PathBuf::from("."), e))?;
    let source = locate(&cwd, g, a.file.as_deref())?;
    let shown = discovery::display_path(&source, &cwd);
    let from_agent_evals = source.file_name().is_some_and(|n| n == AGENT_EVALS_NAME);
    let target = if from_agent_evals {
        source.with_file_name(CONFIG_NAME)
    } else {
        source.clone()
    };
    let target_shown = discovery::display_path(&target, &cwd);
    let text = llm_evals::fs::read_text(&source, &shown)?;
    let new = match upgrade::upgrade(&text) {
        Err(e) => {
            return Err(Error::Config(format!("{shown}:{e} (nothing was written)")));
        }
        Ok(None) if !from_agent_evals => {
            out.note(&format!(
                "{shown} is already in today's layout (no top-level vendors: or direct:); nothing to change"
            ));
            return Ok(exit::OK);
        }
        Ok(None) => text.clone(),
        Ok(Some(new)) => new,
    };
    if from_agent_evals && target.exists() {
        return Err(Error::Usage(format!(
            "{target_shown} already exists: upgrade it instead (`evals upgrade-config {target_shown}`), or move it away first"
        )));
    }
    // The lineup is rewritten by rule; whatever else the file holds (an agent-evals
    // `adapter: MyGem::Adapter`) is named, to fix by hand.
    let still = Config::parse(&new, Path::new(&target_shown)).err();
    if a.dry_run {
        if a.diff {
            let diff = similar::TextDiff::from_lines(&text, &new)
                .unified_diff()
                .context_radius(3)
                .header(&shown, &target_shown)
                .to_string();
            out.text(&diff);
        } else {
            out.text(&new);
        }
        if let Some(e) = &still {
            out.warn(&format!(
                "after the upgrade the config still does not load: {e}"
            ));
        }
        out.note(&format!(
            "-n: nothing was written; run `evals upgrade-config` without -n to write {target_shown}{}",
            if from_agent_evals {
                String::new()
            } else {
                let bak = backup_names(&source).find(|b| std::fs::symlink_metadata(b).is_err());
                match bak {
                    Some(b) => format!(" (the original kept as {})", discovery::display_path(&b, &cwd)),
                    None => String::new(),
                }
            }
        ));
        return Ok(exit::OK);
    }
    let kept = if from_agent_evals {
        None
    } else {
        Some(keep_original(&source, &text, &shown)?)
    };
    llm_evals::fs::write_atomic_verbatim(&target, new.as_bytes())?;
    out.note(&format!(
        "upgraded {target_shown}: the lineup is in today's provider sections, comments kept; {}",
        match &kept {
            None => format!("{shown} is left as it was"),
            Some(bak) => format!("the original is {}", discovery::display_path(bak, &cwd)),
        }
    ));
    if let Some(e) = still {
        out.warn(&format!(
            "the config still does not load: {e}; fix that by hand"
        ));
        return Ok(exit::USAGE);
    }
    Ok(exit::OK)
}

/// How many backups of one config are kept side by side (`.bak`, `.bak.1` … `.bak.99`).
const BACKUPS: usize = 100;

/// `FILE.bak`, then `FILE.bak.1`, `FILE.bak.2` …: where the original may be kept.
fn backup_names(source: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    (0..BACKUPS).map(move |i| match i {
        0 => PathBuf::from(format!("{}.bak", source.display())),
        i => PathBuf::from(format!("{}.bak.{i}", source.display())),
    })
}

/// Writes the original `text` of `source` to the first free backup name (an earlier
/// upgrade's `.bak` is never overwritten) and returns it; with every name taken, refuses.
fn keep_original(source: &Path, text: &str, shown: &str) -> Result<PathBuf> {
    for bak in backup_names(source) {
        if llm_evals::fs::write_new_verbatim(&bak, text.as_bytes())? {
            return Ok(bak);
        }
    }
    Err(Error::Usage(format!(
        "{shown}: {shown}.bak and {shown}.bak.1 to .bak.{} all exist (nothing was written): \
         remove the backups you no longer need",
        BACKUPS - 1
    )))
}

/// FILE, else `-C`, else the suite search; an agent-evals config when the search finds none.
fn locate(cwd: &Path, g: &Global, file: Option<&Path>) -> Result<PathBuf> {
    let locate = Locate {
        config: file.map(Path::to_path_buf).or_else(|| g.config.clone()),
        no_search: g.no_search,
    };
    match discovery::discover(cwd, &locate) {
        Ok(p) => Ok(p),
        Err(e) if locate.config.is_none() => cwd
            .ancestors()
            .map(|d| d.join("evals").join(AGENT_EVALS_NAME))
            .find(|p| p.is_file())
            .ok_or(e),
        Err(e) => Err(e),
    }
}
