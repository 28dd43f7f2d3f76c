//! Snapshots of the reports (insta), with volatile parts redacted.

use crate::harness::Project;

#[test]
fn toy_compare_leaderboard() {
    let d = Project::toy().evals(&["compare", "--no-autosave"]).ok();
    insta::assert_snapshot!(d.stdout);
}

#[test]
fn toy_compare_json_snapshot() {
    let d = Project::toy()
        .evals(&["compare", "--format", "json", "--no-autosave"])
        .ok();
    let v: serde_json::Value = serde_json::from_str(&d.stdout).unwrap();
    insta::assert_json_snapshot!(v, {
        ".run.id" => "[run id]",
        ".run.started_at" => "[timestamp]",
        ".run.finished_at" => "[timestamp]",
        ".run.argv" => "[argv]",
        ".run.branch" => "[branch]",
        ".run.commit" => "[commit]",
        ".run.settings.concurrency" => "[cpus]",
        ".experiments[].cases[].duration_s" => "[duration]",
    });
}
