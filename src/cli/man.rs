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
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
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

/// One command's page, roff, titled `title` (`EVALS-CHECK`): clap_mangen's sections, then
/// the command's `--help` epilogue as sections of its own (EXAMPLES, ENVIRONMENT), each
/// line kept as written (clap_mangen's EXTRA would fill them into a paragraph).
fn render(cmd: &clap::Command, title: &str) -> Result<Vec<u8>> {
    let epilogue = cmd.get_after_help().map(|h| h.to_string());
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone().after_help(None::<&str>))
        .title(title.to_ascii_uppercase())
        .render(&mut page)
        .map_err(|e| Error::Failed(format!("could not write the man page: {e}")))?;
    let Some(epilogue) = epilogue else {
        return Ok(page);
    };
    let page = String::from_utf8_lossy(&page).into_owned();
    let sections = sections(&epilogue);
    // Before VERSION, the page's last section.
    Ok(match page.find("\n.SH VERSION\n") {
        Some(i) => format!("{}\n{}{}", &page[..i], sections, &page[i + 1..]),
        None => format!("{page}{sections}"),
    }
    .into_bytes())
}

/// `Heading:` blocks (`Examples:`, `Environment:`) as `.SH HEADING` sections, no-fill.
fn sections(epilogue: &str) -> String {
    let mut out = String::new();
    for block in epilogue.split("\n\n") {
        let mut lines = block.lines();
        let Some(first) = lines.next() else {
            continue;
        };
        let heading = first.trim_end_matches(':').to_ascii_uppercase();
        out.push_str(&format!(".SH {}\n.nf\n", escape(&heading)));
        for line in lines {
            out.push_str(&escape(line));
            out.push('\n');
        }
        out.push_str(".fi\n");
    }
    out
}

/// A line of text as roff prints it: backslashes, hyphens and quotes escaped, a leading
/// `.` or `'` not read as a request.
fn escape(line: &str) -> String {
    let text = line
        .replace('\\', "\\e")
        .replace('-', "\\-")
        .replace('\'', "\\*(Aq");
    if text.starts_with('.') {
        format!("\\&{text}")
    } else {
        text
    }
}

/// `cmd`'s page as `name.1` in `dir`, then each of its subcommands' (`name-sub.1`).
fn write_tree(cmd: &clap::Command, name: &str, dir: &Path, written: &mut usize) -> Result<()> {
    let path = dir.join(format!("{name}.1"));
    // The page's title is its file's name: `EVALS-CHECK(1)`.
    llm_evals::fs::write_atomic(&path, &render(cmd, name)?)
        .map_err(|e| e.named_by("evals man --dir", None))?;
    *written += 1;
    for sub in cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help" && !s.is_hide_set())
    {
        write_tree(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
