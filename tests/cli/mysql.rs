//! The history on a real MariaDB (or MySQL) server (`my.rs`): a check stores its run and a
//! branch check finds its baseline there; eight runners checking at once land eight runs
//! with eight numbers; migrations run once (and again, whole, after a stop midway); the
//! snapshot of a large run is kept in parts and read back as it was; `evals history
//! migrate --to mysql://…` copies a SQLite history and resumes after `kill -9`; `evals
//! flaky` reads it; TLS checks the certificate against `ssl-ca`; a wrong password, an
//! unreachable server and a lock held too long are clear errors in bounded time, the
//! password never printed.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{Bounded, Project};
use crate::my;
use llm_evals::history::{HistoryReads, Location, MysqlStore, RunFilter, RunStore};
use llm_evals::results::RunResult;

fn open(history: &str) -> llm_evals::history::AnyStore {
    Location::parse(history, std::path::Path::new(""))
        .open()
        .expect("open the history")
}

/// The run a toy `check` writes, to be stored again under other ids and branches.
fn template() -> RunResult {
    let p = Project::toy();
    p.evals(&["check", "--no-autosave", "--json", "run.json"])
        .ok();
    serde_json::from_str(&p.read("run.json")).unwrap()
}

fn at(template: &RunResult, id: &str, branch: &str, started: &str) -> RunResult {
    let mut r = template.clone();
    r.run.id = id.into();
    r.run.branch = Some(branch.into());
    r.run.started_at = started.parse().expect("a time");
    r
}

#[test]
fn a_check_stores_its_run_and_a_branch_check_finds_its_baseline_there() {
    let url = my::database();
    let (one, other) = (Project::toy(), Project::toy());
    one.evals(&[
        "check",
        "--no-autosave",
        "--branch",
        "main",
        "--history",
        &url,
    ])
    .ok()
    .stderr_has(&format!(" in {}\n", my::shown(&url)));
    let main = open(&url).list(&RunFilter::default()).unwrap();
    assert_eq!(main.len(), 1);
    assert_eq!(
        (main[0].number, main[0].cases, main[0].status.as_str()),
        (1, 16, "completed")
    );
    let d = other
        .evals(&[
            "check",
            "--no-autosave",
            "--branch",
            "feature",
            "--baseline",
            "main",
            "--json",
            "run.json",
        ])
        .env("EVALS_HISTORY", &url)
        .ok();
    d.stderr_has("evals check passed in toy (main → feature)");
    let json: serde_json::Value = serde_json::from_str(&other.read("run.json")).unwrap();
    assert_eq!(
        json["comparison"]["baseline"]["id"].as_str(),
        Some(main[0].id.as_str()),
        "{json:#}"
    );
    // The run reads back as it was written, and `evals history` lists both.
    let h = open(&url);
    let stored: RunResult = serde_json::from_str(&other.read("run.json")).unwrap();
    let back = h.get(&stored.run.id).unwrap().expect("stored");
    assert_eq!(back.run, stored.run);
    assert_eq!(back.experiments.len(), stored.experiments.len());
    other
        .evals(&["history", "--json", "--history", &url])
        .ok()
        .stdout_has("\"number\": 2");
}

#[test]
fn eight_concurrent_checks_land_eight_runs_with_eight_numbers() {
    let url = my::database();
    let runners: Vec<Project> = (0..8).map(|_| Project::toy()).collect();
    let running: Vec<_> = runners
        .iter()
        .map(|p| {
            p.evals(&["check", "--no-autosave", "--branch", "main"])
                .env("EVALS_HISTORY", &url)
                .spawn()
        })
        .collect();
    for r in running {
        let d = r.wait();
        assert_eq!(d.code, 0, "{}", d.stderr);
        d.stderr_has("stored run ");
    }
    let runs = open(&url).list(&RunFilter::default()).unwrap();
    let mut numbers: Vec<i64> = runs.iter().map(|r| r.number).collect();
    numbers.sort();
    assert_eq!(numbers, (1..=8).collect::<Vec<_>>());
    let mut ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 8);
    assert!(
        runs.iter()
            .all(|r| r.status == llm_evals::results::RunStatus::Completed && r.cases == 16)
    );
    let rows = my::sql(&url, "SELECT COUNT(*) FROM case_results");
    assert_eq!(rows.trim(), "128");
}

#[test]
fn migrations_are_applied_once_in_exact_collations_and_again_after_a_stop_midway() {
    let url = my::database();
    let opened: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(|| MysqlStore::open(&url).expect("open").migrated()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(opened.iter().sum::<usize>(), 4, "{opened:?}");
    assert_eq!(MysqlStore::open(&url).unwrap().migrated(), 0);
    let versions = my::sql(
        &url,
        "SELECT version, name FROM evals_migrations ORDER BY version",
    );
    assert_eq!(
        versions,
        "1\t0001_init\n2\t0002_run_numbers\n3\t0003_run_snapshots\n4\t0004_read_indexes\n"
    );
    // Text keys in a binary collation without padding; argv and settings JSON (MariaDB's
    // JSON is LONGTEXT with a JSON_VALID check).
    let columns = my::sql(
        &url,
        "SELECT column_name, data_type, COALESCE(collation_name, '-') FROM information_schema.columns
         WHERE table_schema = DATABASE() AND table_name = 'runs'
           AND column_name IN ('id', 'branch', 'argv', 'settings') ORDER BY column_name",
    );
    let rows: Vec<Vec<&str>> = columns.lines().map(|l| l.split('\t').collect()).collect();
    let mariadb = my::sql(&url, "SELECT VERSION()").contains("MariaDB");
    let exact = if mariadb {
        "utf8mb4_nopad_bin"
    } else {
        "utf8mb4_0900_bin"
    };
    assert_eq!(rows[2], ["id", "varchar", exact], "{columns}");
    assert_eq!(rows[1], ["branch", "varchar", exact], "{columns}");
    for row in [&rows[0], &rows[3]] {
        let json = if mariadb { "longtext" } else { "json" };
        assert_eq!(row[1], json, "{columns}");
    }
    if mariadb {
        let checks = my::sql(
            &url,
            "SELECT COUNT(*) FROM information_schema.check_constraints
             WHERE constraint_schema = DATABASE() AND check_clause LIKE 'json_valid%'",
        );
        assert_eq!(checks.trim(), "2", "argv and settings are checked as JSON");
    }
    // An open stopped after migrations 2-4 took effect but before they were recorded
    // (MySQL commits each DDL statement): the next open applies them again, whole.
    my::sql(&url, "DELETE FROM evals_migrations WHERE version >= 2");
    assert_eq!(MysqlStore::open(&url).unwrap().migrated(), 3);
    assert_eq!(
        my::sql(&url, "SELECT COUNT(*) FROM evals_migrations").trim(),
        "4"
    );
}

#[test]
fn the_baseline_rule_compares_ids_and_branches_exactly_and_find_is_the_sqlite_rule() {
    let t = template();
    let url = my::database();
    let mut h = open(&url);
    for (id, branch, started) in [
        ("0198aa-1111", "main", "2026-01-01T00:00:00Z"),
        ("0198aa-2222", "main", "2026-01-03T00:00:00Z"),
        ("0198bb-3333", "Main", "2026-01-02T00:00:00Z"),
        ("0199-b", "main ", "2026-01-05T00:00:00Z"),
        ("0199-d", "main", "2026-01-05T00:00:00Z"),
    ] {
        h.insert(&at(&t, id, branch, started)).unwrap();
    }
    let suite = t.run.suite.as_str();
    let candidates = |branch: &str, before: &str, exclude: &str| -> Vec<String> {
        h.runs_on_branch(suite, branch, before, exclude)
            .unwrap()
            .into_iter()
            .map(|b| b.id)
            .collect()
    };
    // `Main` and `main ` are other branches than `main`, as on SQLite.
    assert_eq!(
        candidates("main", "2026-01-06T00:00:00Z", "x"),
        ["0199-d", "0198aa-2222", "0198aa-1111"]
    );
    assert_eq!(
        candidates("Main", "2026-01-06T00:00:00Z", "x"),
        ["0198bb-3333"]
    );
    assert_eq!(candidates("main ", "2026-01-06T00:00:00Z", "x"), ["0199-b"]);
    // Within one second the later id is the future.
    assert_eq!(
        candidates("main", "2026-01-05T00:00:00Z", "0199-c"),
        ["0198aa-2222", "0198aa-1111"]
    );
    let find = |r: &str| h.find(r).unwrap();
    assert_eq!(find("2").as_deref(), Some("0198aa-2222"));
    assert_eq!(find("#3").as_deref(), Some("0198bb-3333"));
    assert_eq!(find("0198B").as_deref(), Some("0198bb-3333"));
    assert_eq!((find("9"), find("019"), find("main")), (None, None, None));
    let ambiguous = h.find("0198a").expect_err("two runs").to_string();
    assert!(
        ambiguous.starts_with(&format!(
            "run id prefix 0198a matches 2 runs in {} (#1 0198aa-1111, #2 0198aa-2222)",
            my::shown(&url)
        )),
        "{ambiguous}"
    );
    // The same id again is refused, and nothing of it lands.
    let e = h
        .insert(&at(&t, "0199-d", "other", "2026-02-01T00:00:00Z"))
        .expect_err("a second run under the id")
        .to_string();
    assert!(e.contains("Duplicate entry '0199-d'"), "{e}");
    assert_eq!(h.list(&RunFilter::default()).unwrap().len(), 5);
    assert_eq!(
        my::sql(&url, "SELECT COUNT(*) FROM case_results").trim(),
        "80"
    );
}

#[test]
fn a_snapshot_over_a_part_is_kept_in_parts_and_read_back_as_it_was() {
    let mut big = template();
    // Over 3 MiB of output across the cases: parts of at most 1 MiB.
    let chunk = "é~x".repeat(70_000);
    for c in big.experiments.iter_mut().flat_map(|e| &mut e.cases) {
        c.output = Some(serde_json::Value::String(chunk.clone()));
    }
    big.run.id = "0198cc-0000".into();
    let url = my::database();
    let mut h = open(&url);
    h.insert(&big).unwrap();
    let parts = my::sql(
        &url,
        "SELECT COUNT(*), MAX(LENGTH(body)) FROM run_snapshots",
    );
    let parts: Vec<u64> = parts
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(parts[0] >= 3 && parts[1] == 1 << 20, "{parts:?}");
    assert_eq!(h.get("0198cc-0000").unwrap().as_ref(), Some(&big));
    // Under a cap (the dashboard's --max-run-bytes) it is refused unread, naming the cap.
    h.limit_snapshots(llm_evals::history::SnapshotLimit {
        bytes: 1000,
        key: "--max-run-bytes",
    });
    let e = h.get("0198cc-0000").expect_err("over the cap").to_string();
    assert!(
        e.contains("over the limit of 1000 bytes set by --max-run-bytes"),
        "{e}"
    );
    assert_eq!(h.get("nope").unwrap(), None);
}

#[test]
fn a_wrong_password_and_a_url_mistake_are_clear_errors_and_the_password_is_never_printed() {
    let url = my::database();
    let secret = my::password(&url);
    let shown = my::shown(&url);
    let p = Project::toy();
    let d = p
        .evals(&["check", "-v", "--no-autosave", "--history", &url])
        .ok();
    d.stderr_has(&format!("verbose: history: {shown} (--history)"));
    for text in [&d.stdout, &d.stderr] {
        assert!(!text.contains(&secret), "{text}");
    }
    let wrong = url.replace(&secret, "not-the-password-42");
    let started = Instant::now();
    let d = p.evals(&["history", "--history", &wrong]).exact().code(1);
    assert!(started.elapsed() < Duration::from_secs(10));
    d.stderr_is(&format!(
        "error: {shown}: history store: Access denied for user 'evals'@'127.0.0.1' (using password: YES); check the server is up, the URL and its credentials, or pass --history with another store\n"
    ));
    // A run that cannot store says so without it, and loses no report.
    let d = p
        .evals(&["check", "--json", "run.json", "--history", &wrong])
        .ok();
    d.stderr_has(&format!(
        "warning: could not store the run in the history: {shown}: history store: Access denied"
    ));
    for text in [&d.stdout, &d.stderr, &p.read("run.json")] {
        assert!(!text.contains("not-the-password-42"), "{text}");
    }
    // The stored run's argv (which had the URL) is scrubbed.
    let h = open(&url);
    let run = h
        .get(&h.list(&RunFilter::default()).unwrap()[0].id)
        .unwrap();
    assert!(!serde_json::to_string(&run).unwrap().contains(&secret));
    // A key the store does not read is bad usage (exit 2), named with the keys it reads.
    p.evals(&["history", "--history", &format!("{url}?pool=5")])
        .exact()
        .code(2)
        .stderr_is(&format!(
            "error: {shown}?pool=5: pool: not a key of a mysql:// history URL; the keys are ssl-mode, ssl-ca, connect-timeout and statement-timeout\n"
        ));
}

/// A loopback listener that accepts every connection and never says a word (a MySQL
/// server speaks first); how many it accepted.
struct Silent {
    port: u16,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Silent {
    fn start() -> Silent {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let n = accepted.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                n.fetch_add(1, Ordering::SeqCst);
                held.push(stream);
            }
        });
        Silent { port, accepted }
    }
}

#[test]
fn an_unreachable_server_is_a_clear_error_within_its_connect_timeout_asked_once() {
    let db = Silent::start();
    let url = format!(
        "mysql://u:hushhush@127.0.0.1:{}/db?connect-timeout=2",
        db.port
    );
    let p = Project::toy();
    let started = Instant::now();
    let d = p
        .evals(&[
            "check",
            "--no-autosave",
            "--baseline",
            "main",
            "--history",
            &url,
        ])
        .output();
    assert_ne!(d.code, 0, "{}", d.stderr);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(8),
        "{took:?}\n{}",
        d.stderr
    );
    let said = format!(
        "mysql://u@127.0.0.1:{port}/db?connect-timeout=2: history store: no answer from 127.0.0.1:{port} within 2 s of connecting (the connect timeout, connect-timeout in the URL): the server accepts connections but says nothing (not MySQL, or hung); check the URL's host and port, or allow longer with ?connect-timeout=SECONDS in the URL",
        port = db.port
    );
    d.stderr_has(&format!(
        "warning: could not store the run in the history: {said}"
    ));
    d.stderr_has(&format!("warning: {said}"));
    assert!(!d.stderr.contains("hushhush"), "{}", d.stderr);
    // Storing the run and finding its baseline both need the server: it is asked once.
    assert_eq!(
        db.accepted.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "{}",
        d.stderr
    );
    // Nothing listening at all: refused at once, the host named.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let d = p
        .evals(&[
            "history",
            "--history",
            &format!("mysql://u:hushhush@127.0.0.1:{closed}/db"),
        ])
        .code(1);
    d.stderr_has(&format!(
        "error: mysql://u@127.0.0.1:{closed}/db: history store: "
    ));
    d.stderr_has("Connection refused");
}

#[test]
fn a_number_lock_held_past_its_wait_fails_the_store_naming_the_statement_timeout() {
    let url = my::database();
    drop(MysqlStore::open(&url).expect("migrate the database first"));
    // Another runner storing a run holds the numbering lock (named after the database).
    use sha2::Digest;
    let db = url.rsplit('/').next().unwrap();
    let lock = format!(
        "evals:number:{}",
        &hex::encode(sha2::Sha256::digest(db.as_bytes()))[..16]
    );
    let holder = my::client(
        &url,
        &format!("SELECT GET_LOCK('{lock}', 0); SELECT SLEEP(60)"),
    )
    .spawn_bounded()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while my::sql(&url, &format!("SELECT IS_USED_LOCK('{lock}') IS NOT NULL")).trim() != "1" {
        assert!(Instant::now() < deadline, "the holder never took the lock");
        std::thread::sleep(Duration::from_millis(50));
    }
    let p = Project::toy();
    let started = Instant::now();
    let d = p
        .evals(&[
            "check",
            "--no-autosave",
            "--history",
            &format!("{url}?statement-timeout=100ms"),
        ])
        .ok();
    // Ten statement timeouts (at least a second: the lock's wait is in seconds), then out.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    d.stderr_has("warning: could not store the run in the history: ");
    d.stderr_has(
        "another runner held the history's run-number lock for 1 s (ten statement timeouts; the statement timeout is 100 ms, statement-timeout in the URL): it may be storing a large run; try again, or allow longer with ?statement-timeout=60s in the URL",
    );
    drop(holder);
    assert_eq!(
        open(&url).list(&RunFilter::default()).unwrap().len(),
        0,
        "nothing half-stored"
    );
}

#[test]
fn ssl_mode_checks_the_certificate_against_ssl_ca_and_the_name_unless_verify_ca() {
    let url = my::database();
    let ca = my::ca().display().to_string();
    // A user the server lets in over TLS alone.
    let tls_only = url.replace(
        &format!("evals:{}@", my::password(&url)),
        "tlsonly:tls-pw-77@",
    );
    let _ = my::sql(&url, "DROP USER IF EXISTS 'tlsonly'@'%'");
    my::sql(
        &url,
        "CREATE USER 'tlsonly'@'%' IDENTIFIED BY 'tls-pw-77' REQUIRE SSL; GRANT ALL PRIVILEGES ON *.* TO 'tlsonly'@'%'",
    );
    let p = Project::toy();
    p.evals(&["history", "--history", &tls_only])
        .code(1)
        .stderr_has("Access denied for user 'tlsonly'");
    p.evals(&[
        "check",
        "--no-autosave",
        "--history",
        &format!("{tls_only}?ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
    ])
    .ok()
    .stderr_has("stored run ");
    // The certificate names 127.0.0.1, not `localhost`: refused by that name, whatever the
    // mode (VERIFY_CA checks the name too, as VERIFY_IDENTITY).
    let by_name = tls_only.replace("127.0.0.1", "localhost");
    for mode in ["VERIFY_IDENTITY", "VERIFY_CA"] {
        p.evals(&[
            "history",
            "--history",
            &format!("{by_name}?ssl-mode={mode}&ssl-ca={ca}"),
        ])
        .code(1)
        .stderr_has("invalid peer certificate: certificate not valid for name \"localhost\"");
    }
    // A CA that did not sign it: refused, the certificate named as the reason.
    let d = p
        .evals(&[
            "history",
            "--history",
            &format!("{tls_only}?ssl-mode=REQUIRED&ssl-ca=/etc/ssl/certs/ca-certificates.crt"),
        ])
        .code(1);
    d.stderr_has("invalid peer certificate: UnknownIssuer");
    p.evals(&[
        "history",
        "--history",
        &format!("{tls_only}?ssl-ca=/nonexistent/ca.pem"),
    ])
    .code(2)
    .stderr_has("ssl-ca=/nonexistent/ca.pem: no such file; give the path of the server's CA certificate (PEM)");
}

#[test]
fn migrate_from_sqlite_resumes_after_kill_9_with_every_run_there_once() {
    // Forty runs of about half a MiB each: copying takes long enough to be stopped midway.
    let t = template();
    let p = Project::toy();
    let sqlite = p.path().join(".evals/history.sqlite3");
    let mut lite = open(&sqlite.display().to_string());
    let pad = "x".repeat(32_000);
    for i in 0..40 {
        let mut r = at(
            &t,
            &format!("0198dd-{i:04}"),
            if i % 3 == 0 { "feature" } else { "main" },
            &format!("2026-01-01T00:{:02}:{:02}Z", i / 60, i % 60),
        );
        for c in &mut r.experiments[0].cases {
            c.output = Some(serde_json::Value::String(pad.clone()));
        }
        lite.insert(&r).unwrap();
    }
    let url = my::database();
    drop(MysqlStore::open(&url).unwrap());
    let mut cmd = p
        .evals(&["history", "migrate", "--to", &url])
        .into_command();
    let migrating = cmd.spawn_bounded().unwrap();
    let count = || -> usize {
        my::sql(&url, "SELECT COUNT(*) FROM runs")
            .trim()
            .parse()
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while count() < 3 {
        assert!(Instant::now() < deadline, "migrate copied nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args(["-9", &migrating.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    drop(migrating);
    let copied = count();
    assert!(copied < 40, "migrate finished before it was killed");
    // The run it was copying is rolled back with its connection: no half-run is left,
    // and the next migrate copies the rest.
    let d = p.evals(&["history", "migrate", "--to", &url]).ok();
    let number = |text: &str| -> usize { text.split_whitespace().next().unwrap().parse().unwrap() };
    let copied_now = number(d.stderr.split("copied ").nth(1).unwrap());
    let kept = number(d.stderr.rsplit(" (").next().unwrap());
    assert_eq!((copied_now + kept, kept), (40, copied), "{}", d.stderr);
    let mysql = open(&url);
    let listed = |h: &llm_evals::history::AnyStore| -> Vec<(i64, String, Option<String>)> {
        h.list(&RunFilter::default())
            .unwrap()
            .into_iter()
            .map(|r| (r.number, r.id, r.branch))
            .collect()
    };
    assert_eq!(listed(&lite), listed(&mysql));
    for (_, id, _) in listed(&lite) {
        assert_eq!(lite.get(&id).unwrap(), mysql.get(&id).unwrap(), "{id}");
    }
    assert_eq!(
        my::sql(&url, "SELECT COUNT(*) FROM case_results").trim(),
        (40 * 16).to_string()
    );
    // A third migrate copies nothing; `evals flaky` reads the database as the file.
    p.evals(&["history", "migrate", "--to", &url])
        .ok()
        .stderr_has("copied 0 runs from ")
        .stderr_has(" (40 already there)");
    let flaky = |history: &str| {
        p.evals(&["flaky", "--json", "--history", history])
            .ok()
            .stdout
    };
    assert_eq!(flaky(&url), flaky(&sqlite.display().to_string()));
}

#[test]
fn evals_flaky_lists_the_cases_whose_verdict_varied_in_a_mysql_history() {
    let t = template();
    let url = my::database();
    let mut h = open(&url);
    for (i, passed) in [true, false, true].into_iter().enumerate() {
        let mut r = at(
            &t,
            &format!("0198ee-{i}"),
            "main",
            &format!("2026-01-0{}T00:00:00Z", i + 1),
        );
        let c = &mut r.experiments[0].cases[0];
        c.passed = Some(passed);
        h.insert(&r).unwrap();
    }
    let case = t.experiments[0].cases[0].case.clone();
    let p = Project::toy();
    let d = p.evals(&["flaky", "--history", &url]).ok();
    d.stdout_has(&case).stdout_has("PFP");
    d.stderr_has("1 case varied over the last 3 runs of main");
}

#[test]
fn the_history_is_chosen_by_config_or_database_url_when_a_mysql_url() {
    let (config_db, env_db) = (my::database(), my::database());
    let p = Project::toy();
    let cfg = "evals/.llm-evals.config.yml";
    let original = p.read(cfg);
    p.write(cfg, &format!("{original}\nhistory:\n  url: {config_db}\n"));
    let count = |url: &str| open(url).list(&RunFilter::default()).unwrap().len();
    p.evals(&["check", "--no-autosave", "-v"])
        .env("DATABASE_URL", &env_db)
        .ok()
        .stderr_has("(history.url in the config)");
    assert_eq!((count(&config_db), count(&env_db)), (1, 0));
    p.write(cfg, &original);
    p.evals(&["check", "--no-autosave", "-v"])
        .env("DATABASE_URL", &env_db)
        .ok()
        .stderr_has("(DATABASE_URL)");
    assert_eq!((count(&config_db), count(&env_db)), (1, 1));
    assert!(!p.path().join(".evals/history.sqlite3").exists());
}
