//! `--help` that teaches: flags under headings, the command's own first, an EXAMPLES
//! section on every command; `evals comment --help` names the variables it reads; the man
//! page (`evals man`) from the same definitions; completion scripts that offer the values of
//! enum flags, for `evals` and for `llm-evals`.

use std::process::Command;

use crate::harness::{Bounded, Project};

/// Every command and nested command, as typed.
const COMMANDS: &[&[&str]] = &[
    &["init"],
    &["cases"],
    &["verify"],
    &["run"],
    &["compare"],
    &["record"],
    &["check"],
    &["drift"],
    &["merge"],
    &["history"],
    &["history", "migrate"],
    &["export"],
    &["flaky"],
    &["report"],
    &["comment"],
    &["dashboard"],
    &["weights"],
    &["render"],
    &["cassettes"],
    &["cassettes", "scan"],
    &["cassettes", "status"],
    &["cassettes", "prune"],
    &["import"],
    &["import", "promptfoo"],
    &["upgrade-config"],
    &["version"],
    &["completion"],
    &["man"],
];

fn help(args: &[&str]) -> String {
    let d = Project::new()
        .evals(&[args, &["--help"]].concat())
        .env("COLUMNS", "100")
        .ok();
    assert_eq!(d.stderr, "", "help goes to stdout");
    d.stdout
}

#[test]
fn every_command_has_an_examples_section_that_runs_it() {
    let top = help(&[]);
    assert!(top.contains("\nExamples:\n  evals init"), "{top}");
    for cmd in COMMANDS {
        let text = help(cmd);
        let examples = text
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("`evals {} --help` has no Examples:\n{text}", cmd.join(" ")));
        let typed = format!("evals {}", cmd.join(" "));
        assert!(
            examples.contains(&typed),
            "the examples of `{typed}` show it:\n{examples}"
        );
    }
}

#[test]
fn check_help_opens_with_the_gates_flags_under_headings() {
    let d = Project::new()
        .evals(&["check", "-h"])
        .env("COLUMNS", "100")
        .ok();
    assert_eq!(d.stderr, "");
    let headings: Vec<&str> = d
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    assert_eq!(
        headings,
        [
            "The gate:",
            "Reports:",
            "Selection:",
            "Running:",
            "Cassettes:",
            "Output:",
            "History and trackers:",
            "Sharding:",
            "Global options:",
            "Examples:",
        ]
    );
    insta::assert_snapshot!("check_help_short", d.stdout);
}

#[test]
fn run_help_groups_its_flags_under_headings() {
    let d = Project::new()
        .evals(&["run", "-h"])
        .env("COLUMNS", "100")
        .ok();
    assert_eq!(d.stderr, "");
    insta::assert_snapshot!("run_help_short", d.stdout);
}

#[test]
fn comment_help_names_the_variables_it_reads() {
    let text = help(&["comment"]);
    for var in [
        "GITHUB_TOKEN",
        "GITHUB_REPOSITORY",
        "GITHUB_API_URL",
        "GITHUB_EVENT_PATH",
    ] {
        assert!(text.contains(&format!("\n  {var} ")), "{var} in:\n{text}");
    }
    insta::assert_snapshot!("comment_help", text);
}

fn llm_evals(args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_llm-evals"))
        .args(args)
        .env("NO_COLOR", "1")
        .output_bounded()
        .expect("run llm-evals");
    assert!(out.status.success(), "llm-evals {args:?}");
    (
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8(out.stderr).expect("utf-8"),
    )
}

/// A man page as groff reads it: the `Aq` string defined, then `.TH` before any text.
fn assert_roff(page: &str, title: &str) {
    let mut lines = page.lines();
    let th = lines
        .by_ref()
        .find(|l| !l.starts_with(".ie ") && !l.starts_with(".el "))
        .expect("a page");
    assert!(
        th.starts_with(&format!(".TH {title} 1 ")),
        "the page opens with .TH {title} 1: {th}"
    );
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION"] {
        assert!(page.contains(&format!("\n{section}\n")), "{section}");
    }
    // groff, when it is installed, reads it with every warning on and says nothing.
    let groff = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    if let Ok(mut child) = groff {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(page.as_bytes())
            .expect("write the page");
        let out = child.wait_with_output().expect("groff");
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "groff's warnings");
    }
}

#[test]
fn man_prints_the_manual_page_as_roff_for_the_name_it_runs_by() {
    let d = Project::new().evals(&["man"]).ok();
    assert_eq!(d.stderr, "");
    assert_roff(&d.stdout, "EVALS");
    // Each command is listed by its own page's name.
    for cmd in COMMANDS.iter().filter(|c| c.len() == 1) {
        let page = format!("\n.TP\nevals\\-{}(1)\n", cmd[0].replace('-', "\\-"));
        assert!(d.stdout.contains(&page), "{page}");
    }
    // The examples keep their lines.
    assert!(
        d.stdout.contains("\n.SH EXAMPLES\n.nf\n  evals init "),
        "the examples are in it"
    );
    let (llm, _) = llm_evals(&["man"]);
    assert_roff(&llm, "LLM-EVALS");
}

#[test]
fn man_dir_writes_one_page_per_command() {
    let p = Project::new();
    let d = p.evals(&["man", "--dir", "man1"]).exact().ok();
    let mut pages: Vec<String> = std::fs::read_dir(p.path().join("man1"))
        .expect("man1")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    let mut want: Vec<String> = COMMANDS
        .iter()
        .map(|c| format!("evals-{}.1", c.join("-")))
        .chain(["evals.1".to_string()])
        .collect();
    want.sort();
    assert_eq!(pages, want);
    d.stderr_is(&format!(
        "wrote {} man pages in man1 (read one with `man -l man1/evals.1`)\n",
        want.len()
    ));
    let check = p.read("man1/evals-check.1");
    assert_roff(&check, "EVALS-CHECK");
    assert!(check.contains("\\-\\-missing\\-baseline"));
}

/// Whether a completion script offers `values` for `--flag`, in the shell's own spelling.
fn offers(script: &str, shell: &str, flag: &str, values: &[&str]) -> bool {
    let (start, value) = match shell {
        "bash" => (format!("--{flag})\n"), "{v}"),
        "zsh" => (format!("'--{flag}="), "{v}"),
        _ => (format!(" -l {flag} "), "{v}\\t"),
    };
    let Some(at) = script.find(&start) else {
        return false;
    };
    // The values follow the flag: on its next line (bash), its line (zsh), its string (fish).
    let after: String = script[at..].chars().take(2000).collect();
    let words: Vec<&str> = match shell {
        "bash" => after
            .split_once("compgen -W \"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(w, _)| w.split(' ').collect())
            .unwrap_or_default(),
        _ => vec![after.as_str()],
    };
    values.iter().all(|v| {
        let want = value.replace("{v}", v);
        match shell {
            "bash" => words.contains(&want.as_str()),
            // Described values one per line (`tui\:"The terminal view..."`), else a list.
            "zsh" => {
                let line = after.lines().next().unwrap_or("");
                after.contains(&format!("{want}\\:\""))
                    || line.contains(&format!(":({})", values.join(" ")))
            }
            _ => after.contains(&want),
        }
    })
}

/// Completes `words` (the last one being typed) with `script` in bash, as a shell would.
fn bash_complete(script: &str, bin: &str, words: &[&str]) -> Option<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("completion.bash");
    std::fs::write(&file, script).expect("write");
    let all = words
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let cur = words.last().copied().unwrap_or("");
    let prev = words
        .get(words.len().wrapping_sub(2))
        .copied()
        .unwrap_or(bin);
    let probe = format!(
        "source '{}'\nCOMP_WORDS=({bin} {all})\nCOMP_CWORD={}\nf=$(complete -p {bin} | sed -E 's/.*-F ([^ ]+).*/\\1/')\n$f '{bin}' '{cur}' '{prev}'\necho \"${{COMPREPLY[*]}}\"\n",
        file.display(),
        words.len()
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &probe])
        .output_bounded()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn completion_offers_the_values_of_enum_flags_for_both_names() {
    let p = Project::new();
    for bin in ["evals", "llm-evals"] {
        for shell in ["bash", "zsh", "fish"] {
            let script = if bin == "evals" {
                p.evals(&["completion", shell]).ok().stdout.clone()
            } else {
                llm_evals(&["completion", shell]).0
            };
            // The script is for the name it was asked by.
            let named = match shell {
                "bash" => format!("-o default {bin}\n"),
                "zsh" => format!("#compdef {bin}\n"),
                _ => format!("complete -c {bin} "),
            };
            assert!(script.contains(&named), "{bin} {shell}: {named}");
            for (flag, values) in [
                ("cassettes", ["replay", "record", "auto", "live"].as_slice()),
                ("format", &["tui", "md", "junit", "json", "diff", "html"]),
                ("missing-baseline", &["fail", "pass"]),
                ("color", &["auto", "always", "never"]),
                (
                    "tracker",
                    &["local", "none", "otlp", "logfire", "braintrust"],
                ),
            ] {
                assert!(
                    offers(&script, shell, flag, values),
                    "{bin} {shell}: --{flag} offers {values:?}"
                );
            }
            if shell == "bash"
                && Command::new("bash")
                    .arg("--version")
                    .output_bounded()
                    .is_ok()
            {
                assert_eq!(
                    bash_complete(&script, bin, &["run", "--cassettes", ""]).as_deref(),
                    Some("replay record auto live"),
                    "{bin}: run --cassettes <TAB>"
                );
                let flags = bash_complete(&script, bin, &["check", "--missing-b"]);
                assert_eq!(
                    flags.as_deref(),
                    Some("--missing-baseline"),
                    "{bin}: check --missing-b<TAB>"
                );
                assert_eq!(
                    bash_complete(&script, bin, &["check", "--missing-baseline", ""]).as_deref(),
                    Some("fail pass"),
                    "{bin}: check --missing-baseline <TAB>"
                );
            }
        }
    }
}
