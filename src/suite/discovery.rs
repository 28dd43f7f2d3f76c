//! Finding the suite: upward for `evals/.llm-evals.config.yml`, then downward.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The suite's config file name, in its `evals/` folder.
pub const CONFIG_NAME: &str = ".llm-evals.config.yml";

/// Folders the downward search never enters.
const SKIP: &[&str] = &[
    "target",
    "node_modules",
    "vendor",
    "tmp",
    "log",
    "coverage",
    "pkg",
];

/// How a run names its suite.
#[derive(Debug, Clone, Default)]
pub struct Locate {
    /// `-C/--config FILE`: skip the search.
    pub config: Option<PathBuf>,
    /// `--no-search`: only `./evals/.llm-evals.config.yml` or `./.llm-evals.config.yml`.
    pub no_search: bool,
}

/// Finds the config file from `cwd`.
pub fn discover(cwd: &Path, locate: &Locate) -> Result<PathBuf> {
    discover_why(cwd, locate).map(|(p, _)| p)
}

/// Like [`discover`], with how the file was found (for `-v`).
pub fn discover_why(cwd: &Path, locate: &Locate) -> Result<(PathBuf, String)> {
    if let Some(p) = &locate.config {
        let p = if p.is_absolute() {
            p.clone()
        } else {
            cwd.join(p)
        };
        if !p.is_file() {
            return Err(Error::Usage(format!(
                "{}: no such config file; pass the path of a .llm-evals.config.yml to -C/--config",
                p.display()
            )));
        }
        return Ok((p, "named by -C/--config, no search".into()));
    }
    if locate.no_search {
        for c in [cwd.join("evals").join(CONFIG_NAME), cwd.join(CONFIG_NAME)] {
            if c.is_file() {
                return Ok((c, "in the working directory (--no-search)".into()));
            }
        }
        return Err(Error::Usage(format!(
            "no {CONFIG_NAME} in {} or its evals/ folder, and --no-search is set; run from the project or pass -C FILE",
            cwd.display()
        )));
    }
    for dir in cwd.ancestors() {
        let why = || {
            if dir == cwd {
                "found in the working directory, searching upward".to_string()
            } else {
                format!(
                    "found searching upward from the working directory, {} folder(s) up",
                    cwd.ancestors().position(|a| a == dir).unwrap_or(0)
                )
            }
        };
        let c = dir.join("evals").join(CONFIG_NAME);
        if c.is_file() {
            return Ok((c, why()));
        }
        if dir.file_name().is_some_and(|n| n == "evals") && dir.join(CONFIG_NAME).is_file() {
            return Ok((dir.join(CONFIG_NAME), why()));
        }
    }
    if let Some(found) = search_down(cwd) {
        return Ok((
            found,
            "none upward; found searching down from the working directory, up to 4 levels, shallowest first, then by name".into(),
        ));
    }
    Err(Error::Usage(format!(
        "no suite found: looked upward from {} for evals/{CONFIG_NAME} and 4 levels down; run `evals init` to create one, or pass -C FILE",
        cwd.display()
    )))
}

/// Breadth-first, shallowest first, then by name; up to 4 levels below `root`.
fn search_down(root: &Path) -> Option<PathBuf> {
    let mut level = vec![root.to_path_buf()];
    for _depth in 0..=4 {
        let mut hits = Vec::new();
        let mut next = Vec::new();
        for dir in &level {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let name = e.file_name();
                let name = name.to_string_lossy();
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_file() && name == CONFIG_NAME {
                    hits.push(e.path());
                } else if ft.is_dir() && !name.starts_with('.') && !SKIP.contains(&name.as_ref()) {
                    next.push(e.path());
                }
            }
        }
        hits.sort();
        if let Some(h) = hits.into_iter().next() {
            return Some(h);
        }
        level = next;
        if level.is_empty() {
            break;
        }
    }
    None
}

/// The project folder of a config: the parent of `evals/` when the config is inside one.
pub fn project_dir(config: &Path) -> PathBuf {
    let dir = config.parent().unwrap_or(Path::new("."));
    if dir.file_name().is_some_and(|n| n == "evals") {
        dir.parent().unwrap_or(dir).to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// `path` relative to `base` when it is inside it, for messages.
pub fn display_path(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}
