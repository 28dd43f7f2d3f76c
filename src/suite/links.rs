//! Symlinks in a suite's datasets: followed while their target stays inside the project,
//! an error when it is outside or missing, a problem (not followed) when it loops.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What a path under `datasets/` turned out to be, its symlinks followed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Found {
    /// Nothing there (or something that is neither a file nor a folder).
    Absent,
    File,
    /// A folder, with its canonical path (what loops are told apart by).
    Dir(PathBuf),
    /// A symlink that loops; `message` names it and is not followed.
    Loop(String),
}

/// A folder on the way down: its real (canonical) path and the path the walk took to it.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub real: PathBuf,
    pub shown: PathBuf,
}

/// How symlinks are judged for one suite.
#[derive(Debug, Clone)]
pub(crate) struct Links {
    /// Canonical folders a link may point into: the project and the suite's own folder.
    inside: Vec<PathBuf>,
    /// The project folder as messages show it.
    project: PathBuf,
    /// What paths in messages are relative to.
    base: PathBuf,
}

impl Links {
    /// `project` is the folder holding `evals/`; `root` the suite's folder (the config's);
    /// `base` what messages are relative to.
    pub fn new(project: &Path, root: &Path, base: &Path) -> Links {
        let mut inside: Vec<PathBuf> = [project, root]
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()))
            .collect();
        inside.dedup();
        Links {
            inside,
            project: project.to_path_buf(),
            base: base.to_path_buf(),
        }
    }

    /// The folders above `root` and `root` itself, outermost first: a link to any of them
    /// is a loop. Each is shown by its path on the way to `root` when it has one.
    pub fn steps_to(&self, root: &Path) -> Vec<Step> {
        let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let shown: Vec<(PathBuf, &Path)> = root
            .ancestors()
            .filter_map(|a| std::fs::canonicalize(a).ok().map(|r| (r, a)))
            .collect();
        let mut steps: Vec<Step> = real
            .ancestors()
            .map(|r| Step {
                real: r.to_path_buf(),
                shown: shown
                    .iter()
                    .find(|(real, _)| real == r)
                    .map(|(_, a)| a.to_path_buf())
                    .unwrap_or_else(|| r.to_path_buf()),
            })
            .collect();
        steps.reverse();
        steps
    }

    fn shown(&self, path: &Path) -> String {
        super::discovery::display_path(path, &self.base)
    }

    /// What `path` is. `above` are the folders the walk is in (the last one `path`'s own
    /// folder). A symlink is followed when its target is inside the project, an error when
    /// the target is missing, or outside the project and `followed` (a folder, or a file the
    /// suite reads), and a [`Found::Loop`] when it leads back to a folder in `above` or to
    /// itself.
    pub fn resolve(&self, path: &Path, above: &[Step], reads_file: bool) -> Result<Found> {
        match std::fs::symlink_metadata(path) {
            Ok(m) => self.resolve_typed(path, m.file_type(), above, reads_file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Found::Absent),
            Err(e) => Err(Error::input(path, e)),
        }
    }

    /// [`Links::resolve`] of a folder entry whose own type (`lstat`'s) is known already.
    pub fn resolve_typed(
        &self,
        path: &Path,
        own: std::fs::FileType,
        above: &[Step],
        reads_file: bool,
    ) -> Result<Found> {
        if !own.is_symlink() {
            return Ok(if own.is_dir() {
                let real = match (above.last(), path.file_name()) {
                    (Some(parent), Some(name)) => parent.real.join(name),
                    _ => std::fs::canonicalize(path).map_err(|e| Error::input(path, e))?,
                };
                Found::Dir(real)
            } else if own.is_file() {
                Found::File
            } else {
                Found::Absent
            });
        }
        let link = self.shown(path);
        let written = std::fs::read_link(path).map_err(|e| Error::input(path, e))?;
        let real = match std::fs::canonicalize(path) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::Config(format!(
                    "{link}: broken symlink: its target {} does not exist; restore the target, or remove the link",
                    written.display()
                )));
            }
            Err(e) if is_loop(&e) => {
                return Ok(Found::Loop(format!(
                    "{link}: symlink loops (its chain of links to {} never reaches a file or folder); it is not followed: remove it, or point it at a real file or folder",
                    written.display()
                )));
            }
            Err(e) => return Err(Error::input(path, e)),
        };
        let is_dir = real.is_dir();
        if !is_dir && !reads_file {
            // A file the suite never reads: nothing of it reaches a case.
            return Ok(if real.is_file() {
                Found::File
            } else {
                Found::Absent
            });
        }
        if !self.inside.iter().any(|i| real.starts_with(i)) {
            return Err(Error::Config(format!(
                "{link}: symlink points outside the project, to {}; copy the file into the suite, or point the link inside the project ({})",
                real.display(),
                self.project.display()
            )));
        }
        if !is_dir {
            return Ok(if real.is_file() {
                Found::File
            } else {
                Found::Absent
            });
        }
        if let Some(step) = above.iter().find(|s| s.real == real) {
            return Ok(Found::Loop(format!(
                "{link}: symlink loops back to {}, a folder above it; it is not followed: remove it, or point it at a folder of cases",
                self.shown(&step.shown)
            )));
        }
        Ok(Found::Dir(real))
    }
}

/// Too many levels of symbolic links: a chain of links that comes back on itself.
fn is_loop(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        e.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn setup() -> (tempfile::TempDir, Links, Vec<Step>) {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        let root = project.join("evals");
        std::fs::create_dir_all(root.join("datasets")).unwrap();
        let links = Links::new(&project, &root, &project);
        let steps = links.steps_to(&root.join("datasets"));
        (dir, links, steps)
    }

    #[test]
    fn steps_run_from_the_filesystem_root_to_the_folder() {
        let (dir, links, steps) = setup();
        let last = steps.last().unwrap();
        assert_eq!(last.shown, dir.path().join("p/evals/datasets"));
        assert_eq!(last.real, last.shown.canonicalize().unwrap());
        assert_eq!(steps.first().unwrap().real, Path::new("/"));
        let _ = links;
    }

    #[test]
    fn a_plain_folder_file_and_nothing() {
        let (dir, links, steps) = setup();
        let ds = dir.path().join("p/evals/datasets");
        std::fs::create_dir(ds.join("d")).unwrap();
        std::fs::write(ds.join("f"), "").unwrap();
        assert_eq!(
            links.resolve(&ds.join("d"), &steps, false).unwrap(),
            Found::Dir(steps.last().unwrap().real.join("d"))
        );
        assert_eq!(
            links.resolve(&ds.join("f"), &steps, true).unwrap(),
            Found::File
        );
        assert_eq!(
            links.resolve(&ds.join("x"), &steps, true).unwrap(),
            Found::Absent
        );
    }

    #[test]
    fn a_link_to_an_ancestor_or_to_itself_is_a_loop_and_outside_is_refused() {
        let (dir, links, steps) = setup();
        let ds = dir.path().join("p/evals/datasets");
        symlink("../..", ds.join("up")).unwrap();
        assert!(matches!(
            links.resolve(&ds.join("up"), &steps, false).unwrap(),
            Found::Loop(m) if m.contains("loops back to") && m.starts_with("evals/datasets/up: ")
        ));
        symlink("self", ds.join("self")).unwrap();
        assert!(matches!(
            links.resolve(&ds.join("self"), &steps, true).unwrap(),
            Found::Loop(_)
        ));
        symlink(dir.path(), ds.join("out")).unwrap();
        let e = links.resolve(&ds.join("out"), &steps, false).unwrap_err();
        assert!(e.to_string().contains("points outside the project"), "{e}");
        // A file the suite never reads is not judged.
        std::fs::write(dir.path().join("notes.md"), "").unwrap();
        symlink(dir.path().join("notes.md"), ds.join("notes.md")).unwrap();
        assert_eq!(
            links.resolve(&ds.join("notes.md"), &steps, false).unwrap(),
            Found::File
        );
        assert!(links.resolve(&ds.join("notes.md"), &steps, true).is_err());
    }
}
