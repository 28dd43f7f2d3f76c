fn main() {
    std::process::exit(llm_evals::cli::main(std::env::args_os()));
}
