//! File helpers every subsystem shares: suite files read as UTF-8 text with the place a
//! byte stops being UTF-8, atomic writes (a temp file renamed into place, scrubbed of
//! secrets on the way), positioned reads and writes that leave a shared handle's position
//! alone, and `span`, where a line is in a file packed in a `u64`.

use std::path::Path;

use crate::error::{Error, Refused, Result};

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

/// The most a command reads of one file named on its command line (`evals render FILE`,
/// `--baseline FILE.json`, `evals merge FILE...`, `evals comment FILE`): 1 GiB, past any
/// snapshot a run writes; a larger file is refused by name, never read into memory.
pub const MAX_NAMED_FILE_BYTES: u64 = 1 << 30;

/// [`read_text`] of a file a user names on the command line: it must be a regular file
/// of at most `cap` bytes, else it is refused (exit 2) naming it, before a byte is read: a
/// device or a pipe would be read forever, a huge file held whole in memory.
pub fn read_regular_text(path: &Path, shown: &str, cap: u64) -> Result<String> {
    use std::io::Read;
    let refused = |why: Refused| Error::input(shown, std::io::Error::other(why));
    // `stat` first: opening a FIFO would wait for a writer.
    let meta = std::fs::metadata(path).map_err(|e| Error::input(shown, e))?;
    if meta.is_dir() {
        return Err(Error::input(
            shown,
            std::io::Error::from(std::io::ErrorKind::IsADirectory),
        ));
    }
    if !meta.is_file() {
        return Err(refused(Refused::NotRegular));
    }
    let too_large = |size: u64| {
        refused(Refused::TooLarge {
            size: crate::text::human_bytes(size),
            cap: crate::text::human_bytes(cap),
        })
    };
    if meta.len() > cap {
        return Err(too_large(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::input(shown, e))?;
    // Read to the cap and one byte more: a file that grew since is caught, not read on.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::input(shown, e))?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes)
        .map_err(|e| Error::Config(not_utf8(shown, e.as_bytes(), e.utf8_error())))
}

/// Reads a suite file (config, case, dataset, schema, template, env file) as UTF-8 text,
/// naming it as `shown`. A file missing or unreadable is [`Error::Input`] (exit 2; add the
/// key that named it with [`Error::named_by`]); bytes that are not UTF-8 are a config error
/// (exit 2) that says where: `cases/a/input.txt:3: not UTF-8 (byte 17 of the line, offset 52
/// in the file)`.
pub fn read_text(path: &Path, shown: &str) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::input(shown, e))?;
    String::from_utf8(bytes)
        .map_err(|e| Error::Config(not_utf8(shown, e.as_bytes(), e.utf8_error())))
}

/// The message for bytes that stop being UTF-8 at `e.valid_up_to()`.
fn not_utf8(shown: &str, bytes: &[u8], e: std::str::Utf8Error) -> String {
    let offset = e.valid_up_to();
    let before = &bytes[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    not_utf8_line(shown, bytes, line, line_start as u64, offset - line_start)
}

/// [`read_text`]'s message for a file read a line at a time: line `line`, which starts at
/// `line_start` in the file, stops being UTF-8 after `valid` bytes; `head` is how the file
/// starts (its first two bytes at least, for a UTF-16 byte order mark).
pub(crate) fn not_utf8_line(
    shown: &str,
    head: &[u8],
    line: usize,
    line_start: u64,
    valid: usize,
) -> String {
    if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
        return format!("{shown}: the file is UTF-16, not UTF-8: save it as UTF-8");
    }
    format!(
        "{shown}:{line}: not UTF-8 (byte {} of the line, offset {} in the file): save the file as UTF-8",
        valid + 1,
        line_start + valid as u64
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

/// [`write_atomic`] for text made in pieces: `write` writes them to the writer it is given,
/// each piece scrubbed as a whole ([`crate::secrets::ScrubWriter`]: give it whole JSON
/// values, never a string cut in two); the file appears, complete, only if `write` succeeds.
pub fn write_atomic_streamed(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<()>,
) -> Result<()> {
    use std::io::Write;
    replace_atomically(path, |tmp| {
        let mut out = crate::secrets::ScrubWriter(std::io::BufWriter::new(tmp));
        write(&mut out)?;
        out.flush().map_err(|e| Error::io(path, e))
    })
}

/// [`write_atomic`] without the scrubber: for the user's own text rewritten in place
/// (`evals upgrade-config`'s new config and its `.bak`: a password in a `base_url` there is
/// the user's to keep, and replacing it would break the config), and for a cassette, which
/// its write-time secret scan already guards (scrubbing it again would only cost time).
pub fn write_atomic_verbatim(path: &Path, contents: &[u8]) -> Result<()> {
    use std::io::Write;
    replace_atomically(path, |tmp| {
        tmp.write_all(contents).map_err(|e| Error::io(path, e))
    })
}

/// The one atomic write: `fill` writes a temp file in `path`'s folder (created if need
/// be), which is synced and renamed over `path` only if `fill` succeeds. A `path` that is a
/// device or a pipe (`-o /dev/null`, `--junit /dev/stdout`) is written through instead:
/// renaming over it would replace `/dev/null` itself with a regular file.
fn replace_atomically(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> Result<()>,
) -> Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        return fill(&mut f);
    }
    let tmp = filled_temp(path, fill)?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// [`write_atomic_verbatim`] to a name that must be free: `Ok(false)`, and the file there
/// untouched, when one exists (so the caller can pick another name), never a file
/// overwritten nor one half-written.
pub fn write_new_verbatim(path: &Path, contents: &[u8]) -> Result<bool> {
    use std::io::Write;
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    let tmp = filled_temp(path, |tmp| {
        tmp.write_all(contents).map_err(|e| Error::io(path, e))
    })?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(true),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(path, e.error)),
    }
}

/// A temp file in `path`'s folder (created if need be), 0644, filled by `fill` and synced:
/// what becomes `path` by a rename.
fn filled_temp(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> Result<()>,
) -> Result<tempfile::NamedTempFile> {
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
    fill(tmp.as_file_mut())?;
    tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    Ok(tmp)
}

/// Fills `buf` from `file` at offset `at`, the file's position untouched (handles cloned
/// from one file share a position, and their readers may run at once).
#[cfg(unix)]
pub(crate) fn read_exact_at(file: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
}

/// Fills `buf` from `file` at offset `at` (Windows: `seek_read` until it is full).
#[cfg(windows)]
pub(crate) fn read_exact_at(
    file: &std::fs::File,
    mut buf: &mut [u8],
    mut at: u64,
) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, at)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

/// Fills `buf` from `file` at offset `at` (elsewhere: a clone of the handle, sought).
#[cfg(not(any(unix, windows)))]
pub(crate) fn read_exact_at(file: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file.try_clone()?;
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(buf)
}

/// Where a line is in a file, as the suite's index and the case log keep it: its offset and
/// length packed in one `u64`, the offset in the high 40 bits (1 TiB), the length in the low
/// 24 (16 MiB). A line past either, or an empty one, is kept in a side table (`long`), its
/// index packed with the length's bits all set; so no packed span is 0, which can mean
/// "none" to whoever keeps them.
pub(crate) mod span {
    const LEN_BITS: u32 = 24;
    /// The length bits all set: the line is in `long`, at the index in the high bits.
    pub(crate) const LONG: u64 = (1 << LEN_BITS) - 1;

    /// A line's offset and length in one `u64`, never 0.
    pub(crate) fn pack(at: u64, len: u64, long: &mut Vec<(u64, u64)>) -> u64 {
        if at >> (64 - LEN_BITS) == 0 && len < LONG && len > 0 {
            (at << LEN_BITS) | len
        } else {
            long.push((at, len));
            ((long.len() as u64 - 1) << LEN_BITS) | LONG
        }
    }

    /// The offset and length [`pack`] packed (none for 0, or for a side-table index
    /// `long` does not hold).
    pub(crate) fn unpack(span: u64, long: &[(u64, u64)]) -> Option<(u64, u64)> {
        match span {
            0 => None,
            p if p & LONG == LONG => long.get((p >> LEN_BITS) as usize).copied(),
            p => Some((p >> LEN_BITS, p & LONG)),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_span_past_what_packs_is_held_beside_and_none_packs_as_0() {
            let mut long = Vec::new();
            let spans = [
                (0, LONG - 1),
                (3, 1),
                ((1 << 40) - 1, 7),
                // Each one past: the length, the offset, both; and an empty line.
                (3, LONG),
                (1 << 40, 7),
                (u64::MAX, u64::MAX),
                (0, 0),
            ];
            let packed: Vec<u64> = spans.iter().map(|&(a, l)| pack(a, l, &mut long)).collect();
            assert_eq!(long, spans[3..]);
            for (&p, &span) in packed.iter().zip(&spans) {
                assert_ne!(p, 0);
                assert_eq!(unpack(p, &long), Some(span));
            }
            assert_eq!(unpack(0, &long), None);
            assert_eq!(unpack((9 << LEN_BITS) | LONG, &long), None);
        }
    }
}

/// Writes all of `buf` to `file` at offset `at`, the file's position untouched (writers on
/// several threads at once each write their own place).
#[cfg(unix)]
pub(crate) fn write_all_at(file: &std::fs::File, buf: &[u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, at)
}

/// Writes all of `buf` to `file` at offset `at` (Windows: `seek_write` until it is all out).
#[cfg(windows)]
pub(crate) fn write_all_at(
    file: &std::fs::File,
    mut buf: &[u8],
    mut at: u64,
) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_write(buf, at)? {
            0 => return Err(std::io::ErrorKind::WriteZero.into()),
            n => {
                buf = &buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

/// Writes all of `buf` to `file` at offset `at` (elsewhere: a clone of the handle, sought).
#[cfg(not(any(unix, windows)))]
pub(crate) fn write_all_at(file: &std::fs::File, buf: &[u8], at: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = file.try_clone()?;
    file.seek(SeekFrom::Start(at))?;
    file.write_all(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_device_is_written_through_never_replaced_by_a_file() {
        use std::os::unix::fs::FileTypeExt;
        let null = Path::new("/dev/null");
        write_atomic(null, b"a report nobody keeps").expect("written");
        write_atomic_streamed(null, |w| w.write_all(b"{}").map_err(|e| Error::io(null, e)))
            .expect("streamed");
        let kind = std::fs::metadata(null).expect("still there").file_type();
        assert!(kind.is_char_device(), "/dev/null is still the device");
        assert!(std::fs::read(null).expect("readable").is_empty());
    }
}
