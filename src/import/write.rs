//! An imported suite onto disk, whole or not at all: written into a temporary folder
//! beside the target and renamed into place.

use std::path::Path;

use super::Imported;
use crate::error::{Error, Result};

/// Writes `suite` into `dir` (the suite folder, holding `.llm-evals.config.yml`): into a
/// temporary folder beside it first, renamed into place when every file is written, so
/// a failure leaves nothing half-written. A `dir` that already holds a suite is refused
/// unless `force`, then replaced whole.
pub fn write(suite: &Imported, dir: &Path, force: bool, shown: &str) -> Result<()> {
    let config = dir.join(".llm-evals.config.yml");
    let exists = dir.exists();
    if exists && !force {
        let what = if config.exists() {
            "a suite"
        } else {
            "a folder"
        };
        return Err(Error::Usage(format!(
            "{shown}: already holds {what}; `evals import` never overwrites one: give another folder (-o DIR), or --force to replace it"
        )));
    }
    if exists && !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{shown}: is a file, not a folder: give another -o DIR"
        )));
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".evals-import-")
        .tempdir_in(&parent)
        .map_err(|e| Error::io(&parent, e))?;
    for (rel, text) in &suite.files {
        let path = tmp.path().join(rel);
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|e| Error::io(p, e))?;
        }
        std::fs::write(&path, crate::secrets::scrub_bytes(text.as_bytes()))
            .map_err(|e| Error::io(&path, e))?;
    }
    let staged = tmp.keep();
    if exists {
        // --force: the old folder moves aside, the new one in, the old one goes.
        let old = parent.join(format!(
            ".evals-import-old-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::rename(dir, &old).map_err(|e| Error::io(dir, e))?;
        if let Err(e) = std::fs::rename(&staged, dir) {
            let _ = std::fs::rename(&old, dir);
            let _ = std::fs::remove_dir_all(&staged);
            return Err(Error::io(dir, e));
        }
        let _ = std::fs::remove_dir_all(&old);
    } else if let Err(e) = std::fs::rename(&staged, dir) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(Error::io(dir, e));
    }
    Ok(())
}
