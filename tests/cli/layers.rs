//! The module picture ARCHITECTURE.md draws, enforced: every `crate::` path in a module's
//! non-test code (comments and doc links aside) names a module of a lower layer, so no
//! import runs upwards and no two modules import each other.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Lowest first. A module may use the modules of the layers below its own.
const LAYERS: &[&str] = &[
    "text",
    "blocking",
    "suggest",
    "fingerprint",
    "env",
    "secrets",
    "error",
    "fs",
    "cassette",
    "results",
    "suite",
    "worker",
    "provider",
    "score",
    "adapter",
    "history",
    "gate",
    "report",
    "runner",
    "tracker",
    "dashboard",
    "import",
    "cli",
];

fn layer(module: &str) -> usize {
    LAYERS.iter().position(|l| *l == module).unwrap_or_else(|| {
        panic!("module `{module}` is in no layer: add it to LAYERS (and to ARCHITECTURE.md)")
    })
}

/// The code of a file: its test module cut off, comment lines dropped.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Every `(module, item)` a file's code names through `crate::`: `crate::a::b::C` gives
/// `("a", "C")`, each path of `use crate::{a::X, b::{Y, Z}}` its first segment.
fn uses(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find("};").unwrap_or(group.len())];
            let mut depth = 0;
            let mut start = 0;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let part = group[start..j].trim();
                        found.push((
                            ident(part),
                            part.rsplit("::").next().map(ident).unwrap_or_default(),
                        ));
                        start = j + 1;
                    }
                    _ => {}
                }
            }
            let part = group[start..].trim();
            if !part.is_empty() {
                found.push((
                    ident(part),
                    part.rsplit("::").next().map(ident).unwrap_or_default(),
                ));
            }
            continue;
        }
        let path: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let module = ident(&path);
        let item = path
            .trim_end_matches(':')
            .rsplit("::")
            .next()
            .map(ident)
            .unwrap_or_default();
        found.push((module, item));
    }
    found.retain(|(m, _)| !m.is_empty());
    found
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn no_module_imports_from_its_own_layer_or_a_higher_one() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = BTreeSet::new();
    for file in files(&src) {
        let rel = file.strip_prefix(&src).unwrap().to_path_buf();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .to_string();
        let module = first.trim_end_matches(".rs").to_string();
        if matches!(module.as_str(), "lib" | "main" | "bin") {
            continue;
        }
        let own = layer(&module);
        let text = std::fs::read_to_string(&file).unwrap();
        for (used, item) in uses(&code(&text)) {
            if used == module {
                continue;
            }
            if layer(&used) >= own {
                wrong.insert(format!("{} uses crate::{used}::…{item}", rel.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that run upwards (see LAYERS and ARCHITECTURE.md):\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_layer_check_sees_every_form_of_a_path_and_skips_comments() {
    // A check that could not fail would prove nothing: both forms of a path are found,
    // a doc link is not.
    let text = "//! see [`crate::cli`]\nuse crate::{runner::Sinks, report::{Format, Report}};\nlet x = crate::suite::lineup::expand(a, b, c);\n";
    let modules: Vec<String> = uses(&code(text)).into_iter().map(|(m, _)| m).collect();
    assert_eq!(modules, ["runner", "report", "suite"]);
    assert_eq!(uses("crate::gate::BaselineError")[0].1, "BaselineError");
    assert!(layer("suite") < layer("provider"));
}
