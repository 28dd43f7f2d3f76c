//! `evals man`: the manual page, generated from the same clap definitions as `--help`
//! (`clap_mangen`), so the two never disagree: one page to stdout, or `--dir DIR` writes
//! `evals.1` and one `evals-COMMAND.1` per command (`evals-cassettes-scan.1` for nested
//! ones), named after the binary it was run as.

use std::path::Path;

use clap::CommandFactory;

use super::args::Cli;
use super::exit;
use super::output::Out;
use llm_evals::error::{Error, Result};

/// Writes the page(s); returns the exit code.
pub(crate) fn run(bin: &'static str, dir: Option<&Path>, out: &Out) -> Result<i32> {
    let mut cmd = Cli::command().name(bin).bin_name(bin);
    cmd.build();
    match dir {
        None => {
            let page = render(&cmd, bin)?;
            let mut so = std::io::stdout().lock();
            let _ = std::io::Write::write_all(&mut so, &page);
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.to_path_buf(), e))?;
            let mut written = 0;
            write_tree(&cmd, bin, dir, &mut written)?;
            out.note(&format!(
                "wrote {written} man pages in {} (read one with `man -l {}`)",
                dir.display(),
                dir.join(format!("{bin}.1")).display()
            ));
        }
    }
    Ok(exit::OK)
}

/// One command's page, roff, titled `title` (`evals-check`).
fn render(cmd: &clap::Command, title: &str) -> Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .title(title.to_ascii_uppercase())
        .render(&mut page)
        .map_err(|e| Error::Failed(format!("could not write the man page: {e}")))?;
    Ok(page)
}

/// `cmd`'s page as `name.1` in `dir`, then each of its subcommands' (`name-sub.1`).
fn write_tree(cmd: &clap::Command, name: &str, dir: &Path, written: &mut usize) -> Result<()> {
    let path = dir.join(format!("{name}.1"));
    // The page's title is its file's name: `EVALS-CHECK(1)`.
    llm_evals::fs::write_atomic(&path, &render(cmd, name)?)
        .map_err(|e| e.named_by("evals man --dir", None))?;
    *written += 1;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        write_tree(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
