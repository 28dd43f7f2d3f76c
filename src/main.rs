//! `evals`: the command line over the `llm_evals` library (`src/cli/`).

mod cli;

fn main() {
    std::process::exit(cli::main(llm_evals::env::process_args()));
}
