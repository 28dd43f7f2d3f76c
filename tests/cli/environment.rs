//! The environment, read in one place and handed down: no file of `src/` but `env.rs`
//! reads a process variable or the command line, the README's table of variables is the
//! list `env.rs` names, and a library run reads only the `Environment` it is given (the
//! default one asks git nothing and records no branch).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use llm_evals::env::Environment;
use llm_evals::runner::{RunOptions, evaluate};
use llm_evals::suite::{Locate, Suite};

use crate::harness::{Bounded, Project};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The ways Rust reads the process's variables or its command line.
const READS: &[&str] = &[
    "std::env::var",
    "std::env::args",
    "env::var(",
    "env::var_os(",
    "env::vars(",
    "env::vars_os(",
    "env::args(",
    "env::args_os(",
    "use std::env;",
    "use std::env::{",
];

#[test]
fn no_file_of_src_but_env_rs_reads_a_variable_or_the_command_line() {
    let src = Path::new(ROOT).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "src/ has its files: {}", files.len());
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(ROOT).expect("under the root");
        if rel == Path::new("src/env.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read");
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(read) = READS.iter().find(|r| line.contains(*r)) {
                found.push(format!(
                    "{}:{}: {read}: {}",
                    rel.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the environment is read in src/env.rs alone (an `Environment` handed down, or \
         env.rs's process_var_os/process_vars/process_args); found:\n{}",
        found.join("\n")
    );
}

/// The names `src/env.rs` declares as `pub const NAME: &'static str = "NAME";`, in order.
fn named_in_env_rs() -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("src/env.rs")).expect("env.rs");
    // rustfmt may break a long constant over lines: read it as one stream of words.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut names = Vec::new();
    for part in flat.split("pub const ").skip(1) {
        let name: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let value = part
            .split_once("= \"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(v, _)| v)
            .unwrap_or_default();
        assert_eq!(
            name, value,
            "env.rs: the constant {name} holds its own name"
        );
        names.push(name);
    }
    names
}

/// The first column of the book's table of environment variables.
fn listed_in_readme() -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("docs/src/environment.md"))
        .expect("docs/src/environment.md");
    let section = text
        .split("\n## Every variable\n")
        .nth(1)
        .expect("docs/src/environment.md has a section `## Every variable`");
    let section = section.split("\n#").next().unwrap_or(section);
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| name.to_string())
        .collect()
}

#[test]
fn the_readmes_table_of_variables_is_the_list_env_rs_names() {
    let named = named_in_env_rs();
    let listed = listed_in_readme();
    assert!(named.len() >= 40, "env.rs names its variables: {named:?}");
    let (n, l): (BTreeSet<_>, BTreeSet<_>) = (named.iter().collect(), listed.iter().collect());
    assert_eq!(
        n.difference(&l).collect::<Vec<_>>(),
        Vec::<&&String>::new(),
        "named in src/env.rs, missing from docs/src/environment.md's table"
    );
    assert_eq!(
        l.difference(&n).collect::<Vec<_>>(),
        Vec::<&&String>::new(),
        "in docs/src/environment.md's table, named nowhere in src/env.rs"
    );
    assert_eq!(listed.len(), n.len(), "each variable listed once");
}

/// The toy suite in a git repository on branch `feature`, one commit.
fn toy_in_git() -> (Project, String) {
    let p = Project::toy();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(p.path())
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output_bounded()
            .expect("run git (is it installed?)");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_string()
    };
    git(&["init", "-q", "-b", "feature"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "suite"]);
    let commit = git(&["rev-parse", "HEAD"]);
    (p, commit)
}

fn run_with(dir: &Path, env: Environment) -> llm_evals::results::RunResult {
    let suite = Suite::locate(dir, &Locate::default()).expect("the toy suite");
    evaluate(&suite, RunOptions::default().env(env)).expect("the run")
}

#[test]
fn a_library_run_with_the_default_environment_asks_git_nothing_and_records_no_branch() {
    let (p, _) = toy_in_git();
    let run = run_with(p.path(), Environment::default());
    // git would say `feature` and the commit: the default environment never asks it.
    assert_eq!(run.run.branch, None);
    assert_eq!(run.run.commit, None);
    assert!(run.run.argv.is_empty(), "no argv: {:?}", run.run.argv);
    assert_eq!(run.total_errors(), 0);
}

#[test]
fn a_library_run_with_an_environment_that_asks_git_records_its_branch_and_commit() {
    let (p, commit) = toy_in_git();
    // No CI variable: the branch and the commit are git's.
    let run = run_with(p.path(), Environment::from_vars(|_| None));
    assert_eq!(run.run.branch.as_deref(), Some("feature"));
    assert_eq!(run.run.commit.as_deref(), Some(commit.as_str()));
    // CI's variables come first, git is asked only for what they leave out.
    let ci = Environment::from_vars(|name| match name {
        "GITHUB_HEAD_REF" => Some("pr-branch".into()),
        _ => None,
    });
    let run = run_with(p.path(), ci);
    assert_eq!(run.run.branch.as_deref(), Some("pr-branch"));
    assert_eq!(run.run.commit.as_deref(), Some(commit.as_str()));
}

#[test]
fn a_library_run_with_the_process_environment_records_a_branch_a_commit_and_its_argv() {
    let (p, commit) = toy_in_git();
    let run = run_with(p.path(), Environment::from_process());
    // The branch is git's, or CI's when this test runs on CI (GITHUB_HEAD_REF, ...).
    assert!(run.run.branch.is_some(), "a branch is recorded");
    let ci_commit = Environment::from_process().git.commit;
    assert_eq!(run.run.commit, ci_commit.or(Some(commit)));
    assert!(
        !run.run.argv.is_empty(),
        "the test binary's argv is recorded"
    );
}

#[test]
fn api_keys_are_read_from_the_environment_given_then_the_suites_env_files() {
    let p = Project::toy().file("evals/.env", "FROM_FILES_KEY=files-value-123\n");
    let config = p.read("evals/.llm-evals.config.yml");
    let p = p.file(
        "evals/.llm-evals.config.yml",
        &format!("env_files: [.env]\n{config}"),
    );
    let suite = Suite::locate(p.path(), &Locate::default()).expect("suite");
    // PATH is set in this process; an environment that reads nothing does not see it.
    assert_eq!(suite.var(&Environment::default(), "PATH"), None);
    assert!(suite.var(&Environment::from_process(), "PATH").is_some());
    let given = Environment::default()
        .with_vars(|name| (name == "FROM_FILES_KEY").then(|| "given-value-456".into()));
    assert_eq!(
        suite.var(&given, "FROM_FILES_KEY").as_deref(),
        Some("given-value-456")
    );
    assert_eq!(
        suite
            .var(&Environment::default(), "FROM_FILES_KEY")
            .as_deref(),
        Some("files-value-123")
    );
}
