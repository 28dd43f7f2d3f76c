//! Writing a report to the file a flag names (`--junit`, `--markdown`, `--diff`, `--html`,
//! `--json`, `-o`). Every flag fails alike: a path that cannot be written is a usage error
//! (exit 2) naming the flag, the path, the report and the fix, never a bare `os error`.

use std::path::Path;

use llm_evals::error::{Error, Result};

/// A report and the flag that asked for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReportFile<'a> {
    /// `--junit`, `-o`.
    pub(crate) flag: &'a str,
    /// `JUnit report`: what the message says could not be written.
    pub(crate) kind: &'a str,
    /// `junit.xml`: the file name a fix suggests when the path is a folder.
    pub(crate) example: &'a str,
}

impl<'a> ReportFile<'a> {
    /// The report `flag` asks for in `format` (its kind and example file from the format).
    pub(crate) fn of(flag: &'a str, format: llm_evals::report::Format) -> ReportFile<'a> {
        ReportFile {
            flag,
            kind: format.kind(),
            example: format.example(),
        }
    }

    /// Writes `text` to `path` atomically (the old file, or none, until the new one is whole).
    pub(crate) fn write(&self, path: &Path, text: &str) -> Result<()> {
        llm_evals::fs::write_atomic(path, text.as_bytes()).map_err(|e| self.error(path, &e))
    }

    /// Writes the report `write` writes, in pieces, to `path` atomically: each piece
    /// scrubbed as a whole ([`llm_evals::fs::write_atomic_streamed`]; a report writes whole
    /// strings in each), the file there whole or not at all. A file that cannot be written
    /// is said as [`ReportFile::write`] says it; the report's own error (its cases could
    /// not be read back) as it is.
    pub(crate) fn write_with(
        &self,
        path: &Path,
        write: impl FnOnce(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<()> {
        let mut failed: Option<std::io::Error> = None;
        let written = llm_evals::fs::write_atomic_streamed(path, |w| {
            write(&mut Recording {
                inner: w,
                failed: &mut failed,
            })
        });
        match (written, failed) {
            (Ok(()), _) => Ok(()),
            (Err(_), Some(io)) => Err(self.error(path, &Error::io(path, io))),
            (Err(e @ Error::Io { .. }), None) => Err(self.error(path, &e)),
            (Err(e), None) => Err(e),
        }
    }

    fn error(&self, path: &Path, e: &Error) -> Error {
        let ReportFile {
            flag,
            kind,
            example,
        } = *self;
        let shown = path.display();
        let why = if path.is_dir() {
            format!(
                "{shown} is a folder; pass a file path, e.g. {flag} {}",
                path.join(example).display()
            )
        } else if let Some(file) = file_in_the_way(path) {
            let file = file.display();
            format!("{file} is a file, not a folder; pass another path, or move {file} aside")
        } else {
            match e {
                Error::Io { source, .. } => match source.kind() {
                    std::io::ErrorKind::PermissionDenied => {
                        "permission denied; pass a path you can write".to_string()
                    }
                    std::io::ErrorKind::ReadOnlyFilesystem => {
                        "the file system is read-only; pass a path on another".to_string()
                    }
                    _ => source.to_string(),
                },
                other => other.to_string(),
            }
        };
        Error::Usage(format!(
            "{flag} {shown}: cannot write the {kind} there: {why}"
        ))
    }
}

/// A writer passing each write on, keeping the first error writing the file.
struct Recording<'a> {
    inner: &'a mut dyn std::io::Write,
    failed: &'a mut Option<std::io::Error>,
}

impl std::io::Write for Recording<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.inner.write_all(buf) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                if self.failed.is_none() {
                    *self.failed = Some(std::io::Error::new(e.kind(), e.to_string()));
                }
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The nearest existing ancestor of `path`, when it is not a folder.
fn file_in_the_way(path: &Path) -> Option<&Path> {
    path.ancestors()
        .skip(1)
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| a.exists())
        .filter(|a| !a.is_dir())
}
