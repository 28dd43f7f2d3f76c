//! Where `render` and `report` write, and in what format: `-o FILE` (the format from
//! `--format`, else from the file's extension), `-o` alone (a stamped file under the
//! suite's `results.destination`, the folder run snapshots are saved in), or stdout.

use std::path::{Path, PathBuf};

use super::output::Out;
use super::report_file::ReportFile;
use llm_evals::error::Result;
use llm_evals::results::RunResult;
use llm_evals::suite::Suite;

/// Why `-o` with no file cannot be used outside a suite.
pub(super) const STAMPED_NEEDS_A_SUITE: &str = "-o without a file writes under the suite's results.destination, and there is no suite here; give -o FILE";

/// `-o`, as clap reads it: absent, given alone, or given a file.
pub(crate) type OutputFlag = Option<Option<PathBuf>>;

/// Where the report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Stdout,
    File(PathBuf),
    /// `-o` without a file: a stamped name under `results.destination`.
    Stamped,
}

impl Target {
    pub(crate) fn new(flag: &OutputFlag) -> Target {
        match flag {
            None => Target::Stdout,
            Some(None) => Target::Stamped,
            Some(Some(p)) if p.as_os_str().is_empty() => Target::Stamped,
            Some(Some(p)) => Target::File(p.clone()),
        }
    }

    /// The file's extension, lowercase (`report.HTML` → `html`).
    pub(crate) fn extension(&self) -> Option<String> {
        match self {
            Target::File(p) => p
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase),
            _ => None,
        }
    }
}

/// The folder run snapshots are saved in: `--destination` (from the working directory),
/// else `results.destination` (from the project), else `evals/results`.
pub(crate) fn results_dir(suite: &Suite, destination: Option<&Path>) -> PathBuf {
    match (destination, &suite.config.results.destination) {
        (Some(d), _) => suite.cwd.join(d),
        (None, Some(d)) => suite.project_dir.join(d),
        (None, None) => suite.root.join("results"),
    }
}

/// `20261201T094713Z-<command>-<the run id's last 8>.<ext>`: when, what wrote it, which run.
pub(crate) fn stamped_name(command: &str, run: &RunResult, ext: &str) -> String {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let id = &run.run.id;
    let short = id.get(id.len().saturating_sub(8)..).unwrap_or("");
    format!("{stamp}-{command}-{short}.{ext}")
}

/// The file `-o` alone writes: a stamped name under `results.destination`, relative to the
/// working directory when it is inside it (so `wrote evals/results/...` reads short).
pub(crate) fn stamped(suite: &Suite, command: &str, run: &RunResult, ext: &str) -> PathBuf {
    let path = results_dir(suite, None).join(stamped_name(command, run, ext));
    match path.strip_prefix(&suite.cwd) {
        Ok(rel) => rel.to_path_buf(),
        Err(_) => path,
    }
}

/// Writes `text` (the report `file` describes) to `path`, saying so, or to stdout.
pub(super) fn write(text: &str, file: ReportFile, path: Option<&Path>, out: &Out) -> Result<()> {
    match path {
        Some(p) => {
            file.write(p, text)?;
            out.note(&format!("wrote {}", p.display()));
        }
        None => out.text(text),
    }
    Ok(())
}

/// [`write()`] for a report written in pieces by `write`: to `path` atomically, or to stdout
/// a chunk of whole pieces at a time, so the report is never held whole.
pub(super) fn write_with(
    file: ReportFile,
    path: Option<&Path>,
    out: &Out,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<()>,
) -> Result<()> {
    match path {
        Some(p) => {
            file.write_with(p, write)?;
            out.note(&format!("wrote {}", p.display()));
        }
        None => {
            let mut stdout = Chunked {
                out,
                buf: Vec::new(),
            };
            write(&mut stdout)?;
            stdout.pass_on();
        }
    }
    Ok(())
}

/// Stdout for a report written in pieces: the pieces gathered and passed to [`Out::text`]
/// (which scrubs and shows what it is given) some 64 KiB at a time. Each piece is whole
/// text, so a chunk of them is too.
struct Chunked<'a> {
    out: &'a Out,
    buf: Vec<u8>,
}

impl Chunked<'_> {
    fn pass_on(&mut self) {
        if !self.buf.is_empty() {
            self.out.text(&String::from_utf8_lossy(&self.buf));
            self.buf.clear();
        }
    }
}

impl std::io::Write for Chunked<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(buf);
        if self.buf.len() >= 64 * 1024 {
            self.pass_on();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.pass_on();
        Ok(())
    }
}
