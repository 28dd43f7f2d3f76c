//! `evals cassettes scan|status|prune`: the committed recordings, checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::args::CassettesCommand;
use super::exit;
use super::output::{Out, table};
use llm_evals::cassette::status::Status;
use llm_evals::cassette::{Finding, scan_paths};
use llm_evals::error::Result;
use llm_evals::runner::cassette_status;
use llm_evals::suite::{Suite, discovery};

pub(crate) fn run(suite: Option<&Suite>, cmd: &CassettesCommand, out: &Out) -> Result<i32> {
    match cmd {
        CassettesCommand::Scan { paths } => scan(suite, paths, out),
        CassettesCommand::Status { check } => status(suite.ok_or_else(no_suite)?, *check, out),
        CassettesCommand::Prune { dry_run } => prune(suite.ok_or_else(no_suite)?, *dry_run, out),
    }
}

fn no_suite() -> llm_evals::error::Error {
    llm_evals::error::Error::Usage("no suite found".into())
}

/// Exit 1 naming each file that holds a secret; the secret itself is never printed.
fn scan(suite: Option<&Suite>, paths: &[PathBuf], out: &Out) -> Result<i32> {
    let roots: Vec<PathBuf> = if paths.is_empty() {
        match suite {
            // No cassettes yet (a new suite, fake models only): nothing to hold a secret.
            Some(s) if !s.cassette_dir().exists() => {
                out.note(&format!(
                    "no cassettes yet in {}: nothing to scan",
                    discovery::display_path(&s.cassette_dir(), &s.cwd)
                ));
                return Ok(exit::OK);
            }
            Some(s) => vec![s.cassette_dir()],
            None => return Err(no_suite()),
        }
    } else {
        for p in paths {
            if !p.exists() {
                return Err(llm_evals::error::Error::Usage(format!(
                    "{}: no such file or folder; pass cassette files or folders to scan",
                    p.display()
                )));
            }
        }
        paths.to_vec()
    };
    // Every value the process knows to be secret: the suite's keys (set or in env_files),
    // and every secret-named variable of the environment (GITHUB_TOKEN, *_KEY, ...).
    let mut secrets: Vec<String> = suite.map(Suite::secret_values).unwrap_or_default();
    secrets.extend(llm_evals::secrets::known());
    let query_names = suite
        .map(|s| s.config.cassettes.redact_query.clone())
        .unwrap_or_default();
    let findings = scan_paths(&roots, &secrets, &query_names);
    let cwd = std::env::current_dir().unwrap_or_default();
    // A file that could not be read is not a secret; it is reported apart.
    let mut files: BTreeSet<&Path> = BTreeSet::new();
    let mut unread: BTreeSet<&Path> = BTreeSet::new();
    for f in &findings {
        let shown = discovery::display_path(f.path(), &cwd);
        match f {
            Finding::Secret { path, line, kind } => {
                files.insert(path);
                out.line(&format!("{shown}:{line}: {kind}"));
            }
            Finding::Unreadable { path, why } => {
                unread.insert(path);
                out.line(&format!("{shown}:0: cannot read: {why}"));
            }
        }
    }
    if findings.is_empty() {
        let shown: Vec<String> = roots
            .iter()
            .map(|r| discovery::display_path(r, &cwd))
            .collect();
        out.note(&format!("no secrets found in {}", shown.join(", ")));
        Ok(exit::OK)
    } else {
        if !files.is_empty() {
            out.note(&format!(
                "{} a secret: remove it, rotate the key, and re-record with a `cassettes.redact` pattern if needed",
                llm_evals::text::plural(files.len(), "file holds", "files hold")
            ));
        }
        if !unread.is_empty() {
            out.note(&format!(
                "{} not be read, so {} not checked; fix {} permissions and scan again",
                llm_evals::text::plural(unread.len(), "file could", "files could"),
                if unread.len() == 1 {
                    "it was"
                } else {
                    "they were"
                },
                if unread.len() == 1 { "its" } else { "their" }
            ));
        }
        Ok(exit::FAILED)
    }
}

/// Every problem case discovery reported (a symlink loop, an input.txt outside a variant
/// folder, an unreadable case): behind any of them may be a case whose recordings would
/// look unused, so `prune` trusts the case list only when there is none.
fn discovery_problems(suite: &Suite) -> Vec<&str> {
    suite
        .cases
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .collect()
}

/// `prune` deletes only what no case needs, so it runs only when every case was found.
fn refuse_unless_every_case_found(suite: &Suite) -> Result<()> {
    let problems = discovery_problems(suite);
    if problems.is_empty() {
        return Ok(());
    }
    Err(llm_evals::error::Error::Config(format!(
        "refusing to prune: case discovery reported {}, so a recording could look unused while its case exists:\n  {}\nfix them (run `evals verify` to list every problem) and prune again",
        llm_evals::text::plural(problems.len(), "problem", "problems"),
        problems.join("\n  ")
    )))
}

/// The listing and its counts; with `check`, exit 1 when something must be recorded (a
/// cassette missing, stale or corrupt), so CI can stop on it.
fn status(suite: &Suite, check: bool, out: &Out) -> Result<i32> {
    let report = cassette_status(suite)?;
    let (rows, unused, partial) = (&report.entries, &report.unused, &report.partial);
    let mut t = table(vec![
        "status".into(),
        "contender".into(),
        "case".into(),
        "file".into(),
    ]);
    for r in rows {
        t.add_row(vec![
            r.status.label().to_string(),
            r.contender.clone(),
            r.case.clone(),
            discovery::display_path(&r.path, &suite.cwd),
        ]);
    }
    for p in unused {
        t.add_row(vec![
            "unused".into(),
            "-".into(),
            "-".into(),
            discovery::display_path(p, &suite.cwd),
        ]);
    }
    for f in &report.fixtures {
        t.add_row(vec![
            "fixture".into(),
            format!("upstream {}", f.upstream),
            f.case.clone(),
            discovery::display_path(&f.path, &suite.cwd),
        ]);
    }
    for p in partial {
        t.add_row(vec![
            "partial".into(),
            "-".into(),
            "-".into(),
            discovery::display_path(p, &suite.cwd),
        ]);
    }
    out.line(&t.to_string());
    let count = |s: Status| report.count(s);
    let (missing, stale) = (count(Status::Missing), count(Status::Stale));
    let unchecked = count(Status::Unchecked);
    let corrupt = match count(Status::Corrupt) {
        0 => String::new(),
        n => format!(", {n} corrupt"),
    };
    let fixtures = match report.fixtures.len() {
        0 => String::new(),
        n => format!(", {}", llm_evals::text::plural(n, "fixture", "fixtures")),
    };
    out.line(&format!(
        "{} recorded, {missing} missing, {stale} stale{corrupt}, {} unused{fixtures}{}",
        count(Status::Recorded),
        unused.len(),
        if unchecked > 0 {
            format!(", {unchecked} unchecked (an exec adapter's or a judge's requests are only known by running it: `evals check` replays them and names the stale ones)")
        } else {
            String::new()
        }
    ));
    let hidden = discovery_problems(suite);
    if !unused.is_empty() && !hidden.is_empty() {
        out.note(&format!(
            "case discovery reported {} (run `evals verify` to list them): an unused recording may belong to a case it could not find",
            llm_evals::text::plural(hidden.len(), "problem", "problems")
        ));
    }
    if !partial.is_empty() {
        out.note(&format!(
            "{} left by an interrupted write: run `evals cassettes prune`",
            llm_evals::text::plural(partial.len(), "partial file", "partial files")
        ));
    }
    // Each corrupt cassette's reason, once the whole listing is out.
    for r in rows {
        if let Some(problem) = &r.problem {
            let at = r.path.display().to_string();
            out.warn(&problem.replace(&at, &discovery::display_path(&r.path, &suite.cwd)));
        }
    }
    if report.needs_recording() {
        out.note(&format!(
            "run `evals record` (with -c/-m to pick cases and models) to record what is {}",
            if corrupt.is_empty() {
                "missing or stale"
            } else {
                "missing, stale or corrupt"
            }
        ));
    }
    if check && report.needs_recording() {
        Ok(exit::FAILED)
    } else {
        Ok(exit::OK)
    }
}

/// Removes the unused cassettes and the partial files interrupted writes left.
fn prune(suite: &Suite, dry_run: bool, out: &Out) -> Result<i32> {
    refuse_unless_every_case_found(suite)?;
    let report = cassette_status(suite)?;
    let (unused, partial) = (&report.unused, &report.partial);
    for p in unused.iter().chain(partial) {
        let shown = discovery::display_path(p, &suite.cwd);
        if dry_run {
            out.line(&format!("would remove {shown}"));
        } else {
            std::fs::remove_file(p).map_err(|e| llm_evals::error::Error::io(p, e))?;
            out.line(&format!("removed {shown}"));
            // Folders the removal emptied go too, up to the cassette folder.
            let root = suite.cassette_dir();
            let mut dir = p.parent();
            while let Some(d) = dir.filter(|d| d.starts_with(&root) && *d != root.as_path()) {
                if std::fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
    }
    if unused.is_empty() && partial.is_empty() {
        out.note("no unused cassettes");
    }
    Ok(exit::OK)
}
