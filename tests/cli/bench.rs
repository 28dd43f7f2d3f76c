//! The benchmark scripts still parse: they run outside CI (timing is never asserted in
//! tests), so an edit that breaks one would otherwise go unseen until its next run.

use std::path::Path;
use std::process::Command;

use crate::harness::Bounded;

#[test]
fn every_bench_script_and_compare_shs_python_parse() {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench");
    let mut scripts: Vec<_> = std::fs::read_dir(&bench)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect();
    scripts.sort();
    assert!(
        scripts.iter().any(|p| p.ends_with("compare.sh")),
        "{scripts:?}"
    );
    for script in &scripts {
        let out = Command::new("bash")
            .arg("-n")
            .arg(script)
            .output_bounded()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // compare.sh's table is a Python program in a here-document: compiled, not run.
    let text = std::fs::read_to_string(bench.join("compare.sh")).unwrap();
    let start = text.find("<<'PY'\n").expect("compare.sh's Python") + "<<'PY'\n".len();
    let end = start + text[start..].find("\nPY\n").expect("the end of its Python");
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; compile(sys.stdin.read(), 'compare.sh', 'exec')",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn_bounded()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(&text.as_bytes()[start..end])?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(
        out.status.success(),
        "compare.sh's Python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
