//! Bad numbers and bad files on the command line and in the config (issue 27): a number
//! that would size memory past any use, an empty `--baseline`, a device named as a
//! snapshot. Each is refused with exit 2 naming the flag, key or file and the bound or the
//! fix, before any work: never an abort, a panic, a hang or a silent pass.

use std::time::{Duration, Instant};

use crate::harness::Project;

/// Nothing of a run was made: no history, no snapshot.
fn no_work(p: &Project) {
    assert!(!p.path().join(".evals").exists(), "a history was written");
    assert!(
        !p.path().join("evals/results").exists(),
        "a snapshot was written"
    );
}

#[test]
fn a_number_flag_past_its_bound_exits_2_naming_the_bound_instead_of_aborting() {
    let p = Project::toy();
    for (args, said) in [
        (
            &["run", "--repeat", "99999999999"][..],
            "error: invalid value '99999999999' for '--repeat <K>': at most 10000 tries per case: give a smaller number\n",
        ),
        (
            &["run", "-p", "99999999999"][..],
            "error: invalid value '99999999999' for '--parallelism <PARALLELISM>': at most 1024 cases in flight per experiment: give a smaller number\n",
        ),
        (
            &["compare", "-j", "18446744073709551615"][..],
            "error: invalid value '18446744073709551615' for '--concurrency <CONCURRENCY>': at most 1024 experiments at a time (0: all): give a smaller number\n",
        ),
        (
            &["check", "--shard", "1/4000000000", "--group", "g"][..],
            "error: invalid value '1/4000000000' for '--shard <K/N>': `1/4000000000`: at most 1024 shards (the cut weighs every case against each): give a smaller N\n",
        ),
    ] {
        let d = p.evals(args).code(2);
        assert!(d.stderr.starts_with(said), "{args:?}: {}", d.stderr);
    }
    no_work(&p);
}

#[test]
fn a_config_number_past_its_bound_exits_2_naming_file_line_column_and_key() {
    let config = |defaults: &str| {
        Project::toy().file(
            "evals/.llm-evals.config.yml",
            &std::fs::read_to_string(crate::harness::toy_dir().join("evals/.llm-evals.config.yml"))
                .unwrap()
                .replace("parallelism: 4 }", &format!("{defaults} }}")),
        )
    };
    // The toy config's `defaults:` is line 24, its `parallelism: 4` at column 66.
    for (defaults, said) in [
        (
            "repeat: 99999999999",
            "error: evals/.llm-evals.config.yml:24:74: defaults.repeat is 99999999999: at most 10000 tries per case: give a smaller number\n",
        ),
        (
            "parallelism: 99999999999",
            "error: evals/.llm-evals.config.yml:24:79: defaults.parallelism is 99999999999: at most 1024 cases in flight per experiment: give a smaller number\n",
        ),
        (
            "timeout: 1e300",
            "error: evals/.llm-evals.config.yml:24:75: defaults.timeout is 1e300: at most 86400 seconds (a day): give the seconds a call may take, e.g. 120\n",
        ),
    ] {
        let p = config(defaults);
        p.evals(&["run"]).exact().code(2).stderr_is(said);
        no_work(&p);
    }
}

#[test]
fn an_empty_baseline_exits_2_with_the_fix_instead_of_passing_with_none() {
    let p = Project::toy();
    for cmd in ["check", "report", "merge", "dashboard"] {
        let d = p.evals(&[cmd, "--baseline", ""]).code(2);
        assert!(
            d.stderr.starts_with(
                "error: invalid value '' for '--baseline <REF>': an empty baseline names nothing: give a branch (--baseline main), a run (its # or id from `evals history`) or a snapshot (--baseline run.json), or leave out --baseline\n"
            ),
            "{cmd}: {}",
            d.stderr
        );
    }
    no_work(&p);
}

#[test]
fn render_refuses_a_device_or_a_pipe_instead_of_reading_it_forever() {
    let p = Project::toy();
    let fifo = p.path().join("run.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for file in ["/dev/urandom", "run.json"] {
        // A deadline, so the test fails instead of hanging.
        let mut child = p
            .evals(&["render", file])
            .into_command()
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > Duration::from_secs(20) {
                child.kill().unwrap();
                panic!("evals render {file} still reading after 20 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "error: {file}: is not a regular file (a device, a pipe or a socket), which could be read forever (named by evals render FILE): point evals render FILE at a regular file\n"
            )
        );
        assert!(out.stdout.is_empty());
    }
}
