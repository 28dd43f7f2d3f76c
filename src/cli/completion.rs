//! `evals completion SHELL`: the shell's completion script for the name evals was run by
//! (`evals` or `llm-evals`), offering every subcommand, every flag, and the values of the
//! flags that take one of a few (`--cassettes replay|record|auto|live`, `--format`,
//! `--missing-baseline`, `--color`, `--tracker`, ...).

use clap::CommandFactory;

use super::args::{Cli, Shell};
use super::exit;
use super::output::Out;
use llm_evals::error::Result;

pub(crate) fn run(shell: Shell, bin: &'static str, _out: &Out) -> Result<i32> {
    let script = script(shell, bin);
    let mut so = std::io::stdout().lock();
    let _ = std::io::Write::write_all(&mut so, script.as_bytes());
    Ok(exit::OK)
}

/// The completion script of `shell` for `bin`.
pub(crate) fn script(shell: Shell, bin: &'static str) -> String {
    let mut cmd = Cli::command().name(bin).bin_name(bin);
    let sh = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut buf = Vec::new();
    clap_complete::generate(sh, &mut cmd, bin, &mut buf);
    let script = String::from_utf8_lossy(&buf).into_owned();
    match shell {
        // clap_complete's bash script names a subcommand's state `llm__evals__subcmd__run`
        // where it is set and `llm__subcmd__evals__subcmd__run` where it is read (a `-` in
        // the binary's name is mangled two ways), so no flag of any subcommand completed for
        // `llm-evals`: the second spelling is made the first.
        Shell::Bash if bin.contains('-') => {
            script.replace(&bin.replace('-', "__subcmd__"), &bin.replace('-', "__"))
        }
        _ => script,
    }
}
