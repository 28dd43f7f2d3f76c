//! The crate's error type and the exit codes it maps to.
//!
//! Every subsystem reports problems as an [`Error`] whose kind decides the exit code:
//! bad usage, a bad config or no usable baseline exit 2; a run that went wrong exits 1.

use std::path::{Path, PathBuf};

/// Documented exit codes (README "Exit codes").
pub mod exit {
    pub const OK: i32 = 0;
    pub const FAILED: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const INTERRUPTED: i32 = 130;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A config, case or cassette file is wrong; the message names the file and the fix.
    #[error("{0}")]
    Config(String),
    /// The command line asks for something that cannot be done.
    #[error("{0}")]
    Usage(String),
    /// No usable baseline for `check`.
    #[error("{0}")]
    Baseline(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Anything else that stops a command (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_) | Error::Usage(_) | Error::Baseline(_) => exit::USAGE,
            Error::Io { .. } | Error::Failed(_) => exit::FAILED,
        }
    }

    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Reads a file, naming it in the error.
pub fn read_to_string(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

/// How the temp file of [`write_atomic`] is named: `.evals-tmp-XXXXXX.partial`, so what a
/// killed write leaves behind is recognisable (`evals cassettes status` reports it, `prune`
/// removes it, and the `.gitignore` of `evals init` keeps it out of git).
pub const TEMP_PREFIX: &str = ".evals-tmp-";
/// See [`TEMP_PREFIX`].
pub const TEMP_SUFFIX: &str = ".partial";

/// Whether a file name is a temp file [`write_atomic`] left behind: `.evals-tmp-*.partial`,
/// or the `.tmpXXXXXX` of evals versions that used tempfile's default name.
pub fn is_partial_write(name: &str) -> bool {
    if name.starts_with(TEMP_PREFIX) && name.ends_with(TEMP_SUFFIX) {
        return true;
    }
    name.strip_prefix(".tmp")
        .is_some_and(|rest| rest.len() == 6 && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// Reads a suite file (config, case, dataset, schema, template, env file) as UTF-8 text,
/// naming it as `shown`. Bytes that are not UTF-8 are a config error (exit 2) that says
/// where: `cases/a/input.txt:3: not UTF-8 (byte 17 of the line, offset 52 in the file)`.
pub fn read_text(path: &Path, shown: &str) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(Path::new(shown), e))?;
    String::from_utf8(bytes)
        .map_err(|e| Error::Config(not_utf8(shown, e.as_bytes(), e.utf8_error())))
}

/// The message for bytes that stop being UTF-8 at `e.valid_up_to()`.
fn not_utf8(shown: &str, bytes: &[u8], e: std::str::Utf8Error) -> String {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return format!("{shown}: the file is UTF-16, not UTF-8: save it as UTF-8");
    }
    let offset = e.valid_up_to();
    let before = &bytes[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    format!(
        "{shown}:{line}: not UTF-8 (byte {} of the line, offset {offset} in the file): save the file as UTF-8",
        offset - line_start + 1
    )
}

/// Writes a file atomically: a temp file in the same folder, then a rename, so a reader
/// (or a killed process) sees the old content or the new, never half of it.
///
/// Everything written passes through the egress scrubber ([`crate::secrets::scrub`]): no
/// file this process writes holds a secret it knows.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    write_atomic_verbatim(path, &crate::secrets::scrub_bytes(contents))
}

/// [`write_atomic`] without the scrubber, for the one kind of file that is the user's own
/// text rewritten in place (`evals upgrade-config`'s new config and its `.bak`): a password
/// in a `base_url` there is the user's to keep, and replacing it would break the config.
pub(crate) fn write_atomic_verbatim(path: &Path, contents: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    // A temp file is private (0600); the file it becomes is an ordinary one (cassettes are
    // committed, reports uploaded by CI), so give it the usual 0644.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(|e| Error::io(path, e))?;
    }
    tmp.write_all(contents).map_err(|e| Error::io(path, e))?;
    tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}
