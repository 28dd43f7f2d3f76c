//! `llm-evals`: the same command line as `evals`, under the package's name.

#[path = "../cli/mod.rs"]
mod cli;

fn main() {
    std::process::exit(cli::main(llm_evals::env::process_args()));
}
