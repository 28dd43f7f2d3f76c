//! The docs hold together: the README stays a front page (at most 300 lines, its pictures in
//! the first 100, each code block run by a test or marked illustrative), the book in
//! `docs/src/` lists every page in `SUMMARY.md`, and every relative link and `#anchor` in
//! the README, CONTRIBUTING.md and the book resolves. Offline and on the Markdown sources;
//! `.ci/run` also builds the book and checks the built HTML (`tests/support/linkcheck.py`).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The book's pages, relative to the repository (`docs/src/x.md`), sorted.
fn pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs/src"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/src/{n}"))
        .collect();
    pages.sort();
    pages
}

/// Markdown text with its fenced code blocks blanked out (links in code are not links).
fn prose(md: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The targets of `[text](target)` and `![alt](target)` outside code, with their lines.
fn links(md: &str) -> Vec<(usize, String)> {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let code = regex::Regex::new(r"`[^`]*`").unwrap();
    prose(md)
        .lines()
        .enumerate()
        .flat_map(|(i, line)| {
            let line = code.replace_all(line, "");
            link.captures_iter(&line)
                .map(|c| (i + 1, c[1].to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A heading's anchor as mdBook and GitHub make it: lowercase, spaces to `-`, punctuation
/// (backticks, colons, commas) dropped.
fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated heading gets `-1`, `-2`, …).
fn anchors(md: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose(md).lines() {
        let text = line.trim_start_matches('#');
        if text.len() == line.len() || !text.starts_with(' ') {
            continue;
        }
        let base = slug(text.trim());
        let mut id = base.clone();
        let mut n = 0;
        while seen.contains(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        seen.insert(id);
    }
    seen
}

/// `base/rel` with `.` and `..` resolved, without touching the file system.
fn join(base: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in base.join(rel).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every broken relative link of `file` (relative to the repository), as `file:line: why`.
fn broken_links(file: &str) -> Vec<String> {
    let md = read(file);
    let dir = Path::new(file).parent().unwrap();
    let in_book = file.starts_with("docs/src/");
    let mut broken = vec![];
    for (line, target) in links(&md) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((target.as_str(), ""));
        let resolved = if path.is_empty() {
            PathBuf::from(file)
        } else {
            join(dir, path)
        };
        if in_book && !resolved.starts_with("docs/src") {
            broken.push(format!(
                "{file}:{line}: {target} leaves docs/src/, so the built book has no such page: name the file in code instead"
            ));
            continue;
        }
        if !root().join(&resolved).exists() {
            broken.push(format!(
                "{file}:{line}: {target}: no file {}",
                resolved.display()
            ));
            continue;
        }
        if !anchor.is_empty() {
            let text = std::fs::read_to_string(root().join(&resolved)).unwrap_or_default();
            if !anchors(&text).contains(anchor) {
                broken.push(format!(
                    "{file}:{line}: {target}: no heading with the anchor #{anchor} in {}",
                    resolved.display()
                ));
            }
        }
    }
    broken
}

#[test]
fn slugs_are_the_anchors_mdbook_and_github_make() {
    assert_eq!(slug("The gate: `evals check`"), "the-gate-evals-check");
    assert_eq!(
        slug("Limits, retries and interrupts"),
        "limits-retries-and-interrupts"
    );
    let a = anchors("# Top\n\n```\n# not a heading\n```\n## Same\n## Same\n#hashtag\n");
    assert_eq!(a.into_iter().collect::<Vec<_>>(), ["same", "same-1", "top"]);
    // The checker finds what is broken (a test that cannot fail is a defect).
    let md = "[ok](config.md) [gone](nope.md) [bad](config.md#no-such-heading) `[code](x.md)`";
    let found: Vec<String> = links(md).into_iter().map(|(_, t)| t).collect();
    assert_eq!(found, ["config.md", "nope.md", "config.md#no-such-heading"]);
}

#[test]
fn every_book_page_is_in_the_summary_and_every_summary_entry_is_a_page() {
    let summary = read("docs/src/SUMMARY.md");
    let listed: BTreeSet<String> = links(&summary)
        .into_iter()
        .map(|(_, t)| format!("docs/src/{t}"))
        .collect();
    let on_disk: BTreeSet<String> = pages()
        .into_iter()
        .filter(|p| p != "docs/src/SUMMARY.md")
        .collect();
    assert_eq!(
        listed, on_disk,
        "docs/src/SUMMARY.md must list every page of docs/src/, and only those"
    );
    // One page per topic the issue asked for, under an obvious name.
    for topic in [
        "config",
        "providers",
        "adapters",
        "agents",
        "scorers",
        "cassettes",
        "secrets",
        "gate",
        "repeats",
        "history",
        "dashboard",
        "trackers",
        "sharding",
        "limits",
        "exit-codes",
        "rust-api",
        "environment",
        "benchmarks",
    ] {
        assert!(
            on_disk.contains(&format!("docs/src/{topic}.md")),
            "no docs/src/{topic}.md"
        );
    }
}

#[test]
fn every_relative_link_in_the_readme_contributing_and_the_book_resolves() {
    let mut files = vec!["README.md".to_string(), "CONTRIBUTING.md".to_string()];
    files.extend(pages());
    let broken: Vec<String> = files.iter().flat_map(|f| broken_links(f)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_front_page_of_at_most_300_lines_with_its_pictures_first() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: move what is not the pitch, the pictures, install, the walk-through, the Action or the map of the docs into a page of docs/src/"
    );
    // One picture each of the leaderboard, a failing check and the PR comment, early.
    let head: String = readme.lines().take(100).collect::<Vec<_>>().join("\n");
    for png in ["leaderboard.png", "check.png", "comment.png"] {
        let link = format!("(docs/src/images/{png})");
        assert!(
            head.contains(&link),
            "README.md shows no {png} in its first 100 lines"
        );
        let bytes = std::fs::read(root().join("docs/src/images").join(png)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{png} is no PNG");
    }
}

#[test]
fn each_readme_code_block_runs_in_a_test_or_is_marked_illustrative() {
    let readme = read("README.md");
    let lines: Vec<&str> = readme.lines().collect();
    let mut fenced = false;
    let mut blocks = 0;
    for (i, line) in lines.iter().enumerate() {
        if !line.trim_start().starts_with("```") {
            continue;
        }
        fenced = !fenced;
        if !fenced {
            continue;
        }
        blocks += 1;
        let marker = lines[..i]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim())
            .unwrap_or("");
        if marker.starts_with("<!-- illustrative") {
            continue;
        }
        // `<!-- tested: PATH …-->`: PATH runs the block, and says it reads the README.
        let tested = marker
            .strip_prefix("<!-- tested: ")
            .and_then(|m| m.split_whitespace().next())
            .unwrap_or_else(|| {
                panic!(
                    "README.md:{}: a code block neither tested nor illustrative: put `<!-- tested: PATH -->` (the test or script that runs it) or `<!-- illustrative -->` on the line before it",
                    i + 1
                )
            });
        let text = std::fs::read_to_string(root().join(tested)).unwrap_or_else(|e| {
            panic!(
                "README.md:{}: the marker names {tested}, which cannot be read: {e}",
                i + 1
            )
        });
        assert!(
            text.contains("README"),
            "README.md:{}: {tested} says nothing of the README: name the test that runs this block",
            i + 1
        );
    }
    assert!(!fenced, "README.md: a code block is never closed");
    assert!(blocks >= 3, "{blocks} blocks");
}
