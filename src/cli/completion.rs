use clap::CommandFactory;

use super::args::{Cli, Shell};
use super::exit;
use super::output::Out;
use llm_evals::error::Result;

pub(crate) fn run(shell: Shell, bin: &'static str, _out: &Out) -> Result<i32> {
    let mut cmd = Cli::command().name(bin).bin_name(bin);
    let sh = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut buf = Vec::new();
    clap_complete::generate(sh, &mut cmd, bin, &mut buf);
    let mut so = std::io::stdout().lock();
    let _ = std::io::Write::write_all(&mut so, &buf);
    Ok(exit::OK)
}
