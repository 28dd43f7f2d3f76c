//! `evals dashboard` end to end: the real binary serving a real history (SQLite, made by
//! real `evals record` and `check` runs on three branches; PostgreSQL, migrated from it),
//! asked over real HTTP with reqwest. Bound to loopback unless `--bind` says otherwise,
//! GET and HEAD only, the runs listed and filtered, a run's page the report `evals report`
//! writes, a case's history right about when it started failing, the JSON parsed.
//! Every wait has a deadline (its URL, each answer, its exit after Ctrl-C): a dashboard
//! that wedges fails its test, named, in seconds (`a_wedged_dashboard_*`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::gate::Gate;
use crate::harness::{
    Bounded, Project, Run, Started, assert_killed, deadline, fails_within, test_name,
};
use crate::my;
use crate::pg;

/// A history of five runs: on `main` #1 `record` and #2 `check` (case `slips` passes);
/// on `feature` #3 `record` with `slips` answered worse (it fails from here on), then #4
/// `check` after the commit; #5 the same check recorded as branch `other`.
struct Built {
    p: Project,
    main_commit: String,
    feature_commit: String,
}

impl Built {
    fn history(&self) -> PathBuf {
        self.p.path().join(".evals/history.sqlite3")
    }
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let g = Gate::new();
        g.on_main();
        let main_commit = g.head();
        g.feature(2);
        let feature_commit = g.head();
        g.evals(&["check", "--baseline", "main"]).code(1);
        g.evals(&["check", "--baseline", "main", "--branch", "other"])
            .code(1);
        let Gate { server, p } = g;
        drop(server);
        Built {
            p,
            main_commit,
            feature_commit,
        }
    })
}

/// How long the dashboard has to answer one request (a page of a five-run history takes
/// milliseconds).
const ANSWER: Duration = Duration::from_secs(30);

/// A running `evals dashboard`, stopped (killed) when dropped.
struct Dashboard {
    child: Option<Started>,
    /// The first line it printed: its URL.
    url: String,
    rt: tokio::runtime::Runtime,
    /// A client that gives up on an answer after [`ANSWER`] (or the test's own deadline).
    client: reqwest::Client,
}

impl Dashboard {
    fn start(cwd: &Path, args: &[&str]) -> Dashboard {
        let mut argv = vec!["dashboard", "--port", "0"];
        argv.extend(args);
        let cmd = Run::new(cwd, &argv).into_command();
        Dashboard::serving(cmd, deadline(), ANSWER)
    }

    /// The dashboard `cmd` starts: its URL waited for within `first_line`, each answer
    /// within `answer`; past either the test fails, naming itself, and `cmd` is killed.
    fn serving(
        mut cmd: std::process::Command,
        first_line: Duration,
        answer: Duration,
    ) -> Dashboard {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn_bounded()
            .expect("spawn evals dashboard");
        let line = child.stdout_line(first_line);
        if line.is_empty() {
            let out = child.wait_within(deadline());
            panic!(
                "{}: evals dashboard printed no URL\n--- stderr\n{}",
                test_name(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mut d = Dashboard::at(line.trim_end(), answer);
        d.child = Some(child);
        d
    }

    /// A client of the dashboard at `url`, each answer waited for within `answer`.
    fn at(url: &str, answer: Duration) -> Dashboard {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Dashboard {
            child: None,
            url: url.to_string(),
            rt: tokio::runtime::Runtime::new().expect("runtime"),
            client: reqwest::Client::builder()
                .timeout(answer)
                .build()
                .expect("an HTTP client"),
        }
    }

    /// `method path`: the status, the headers and the body.
    fn call(&self, method: &str, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
        let url = format!("{}{}", self.url, path.trim_start_matches('/'));
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let failed = |e: reqwest::Error| -> ! {
            let why = if e.is_timeout() {
                "no answer in time (is the dashboard wedged?)".to_string()
            } else {
                e.to_string()
            };
            panic!("{}: {method} {url}: {why}", test_name())
        };
        self.rt.block_on(async {
            let res = self
                .client
                .request(method.clone(), &url)
                .body("{}")
                .send()
                .await
                .unwrap_or_else(|e| failed(e));
            let status = res.status().as_u16();
            let headers = res.headers().clone();
            let body = res.text().await.unwrap_or_else(|e| failed(e));
            (status, headers, body)
        })
    }

    /// GET `path`, which must answer 200.
    fn get(&self, path: &str) -> String {
        let (status, _, body) = self.call("GET", path);
        assert_eq!(status, 200, "GET {path}\n{body}");
        body
    }

    fn json(&self, path: &str) -> Value {
        let body = self.get(path);
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}\n{body}"))
    }

    /// Ctrl-C, then its exit code and stderr.
    fn interrupt(mut self) -> (i32, String) {
        let child = self.child.take().unwrap();
        let status = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let out = child.wait_within(deadline());
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn numbers(runs: &Value) -> Vec<i64> {
    runs.as_array()
        .expect("an array")
        .iter()
        .map(|r| r["number"].as_i64().unwrap())
        .collect()
}

#[test]
fn it_binds_to_loopback_unless_told_and_stops_on_ctrl_c() {
    let b = built();
    // Run where the suite is, without --history: the suite's own history.
    let d = Dashboard::start(b.p.path(), &[]);
    let rest = d.url.strip_prefix("http://127.0.0.1:").expect(&d.url);
    let port: u16 = rest.trim_end_matches('/').parse().expect("a port");
    assert!(port > 0 && d.url.ends_with('/'), "{}", d.url);
    assert!(d.get("/").contains("<h1>Runs in "));
    // A page elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) is refused.
    let url = format!("{}runs.json", d.url);
    let (status, body) = d.rt.block_on(async {
        let res = d
            .client
            .get(&url)
            .header("host", "evil.example:80")
            .send()
            .await
            .expect("send");
        (res.status().as_u16(), res.text().await.unwrap())
    });
    assert_eq!(status, 403, "{body}");
    let localhost = d.url.replace("127.0.0.1", "localhost");
    let (status, _) = d.rt.block_on(async {
        let res = d.client.get(&localhost).send().await.expect("send");
        (res.status().as_u16(), ())
    });
    assert_eq!(status, 200, "localhost is loopback too");
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 130, "interrupted, as any command: {stderr}");
    assert!(stderr.contains("read-only; Ctrl-C stops"), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");

    let history = b.history();
    let d = Dashboard::start(
        b.p.path(),
        &["--bind", "0.0.0.0", "--history", history.to_str().unwrap()],
    );
    assert!(d.url.starts_with("http://0.0.0.0:"), "{}", d.url);
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 130, "{stderr}");
    assert!(
        stderr.contains(
            "warning: listening on 0.0.0.0: anyone who can reach this address reads the history"
        ),
        "{stderr}"
    );
}

#[test]
fn anything_but_get_and_head_is_405_and_nothing_is_written() {
    let b = built();
    let history = b.history();
    let before = std::fs::read(&history).unwrap();
    let d = Dashboard::start(b.p.path(), &["--history", history.to_str().unwrap()]);
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        for path in [
            "/",
            "/runs.json",
            "/runs/1",
            "/runs/1.json",
            "/case?case=slips",
            "/nope",
        ] {
            let (status, headers, _) = d.call(method, path);
            assert_eq!(status, 405, "{method} {path}");
            assert_eq!(headers["allow"], "GET, HEAD", "{method} {path}");
        }
    }
    let (status, headers, body) = d.call("HEAD", "/runs/4");
    assert_eq!((status, body.as_str()), (200, ""));
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(numbers(&d.json("/runs.json")), [5, 4, 3, 2, 1]);
    drop(d);
    assert_eq!(
        std::fs::read(&history).unwrap(),
        before,
        "the history is as it was"
    );
}

#[test]
fn the_runs_list_shows_every_branch_and_filters_by_branch_status_and_date() {
    let b = built();
    let history = b.history();
    let d = Dashboard::start(b.p.path(), &["--history", history.to_str().unwrap()]);
    let page = d.get("/");
    assert_eq!(page.matches("<tr class=\"run\"").count(), 5, "{page}");
    assert!(
        page.contains("<form method=\"get\" action=\"/case\">"),
        "{page}"
    );
    for branch in ["main", "feature", "other"] {
        assert!(
            page.contains(&format!("data-branch=\"{branch}\"")),
            "{page}"
        );
    }
    assert!(page.contains(&format!("<code>{}</code>", &b.feature_commit[..7])));
    let feature = d.get("/?branch=feature");
    assert_eq!(feature.matches("<tr class=\"run\"").count(), 2, "{feature}");
    assert!(!feature.contains("data-branch=\"main\""), "{feature}");
    assert!(feature.contains("<a href=\"/runs/4\">#4</a>"), "{feature}");

    let runs = d.json("/runs.json");
    assert_eq!(numbers(&runs), [5, 4, 3, 2, 1]);
    let branches: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["branch"].as_str().unwrap())
        .collect();
    assert_eq!(branches, ["other", "feature", "feature", "main", "main"]);
    assert_eq!(numbers(&d.json("/runs.json?branch=main")), [2, 1]);
    assert_eq!(numbers(&d.json("/runs.json?branch=other&suite=gate")), [5]);
    assert_eq!(
        numbers(&d.json("/runs.json?suite=elsewhere")),
        Vec::<i64>::new()
    );
    assert_eq!(numbers(&d.json("/runs.json?status=completed")).len(), 5);
    assert!(numbers(&d.json("/runs.json?status=aborted")).is_empty());
    let today = chrono::Utc::now().date_naive();
    let yesterday = today.pred_opt().unwrap();
    assert_eq!(
        numbers(&d.json(&format!("/runs.json?since={today}"))).len(),
        5
    );
    assert!(numbers(&d.json(&format!("/runs.json?until={yesterday}"))).is_empty());
    assert_eq!(
        numbers(&d.json(&format!(
            "/runs.json?since={yesterday}&until={today}&branch=feature"
        ))),
        [4, 3]
    );
    let (status, _, body) = d.call("GET", "/?since=last-tuesday");
    assert_eq!(status, 400);
    assert!(
        body.contains("since=last-tuesday: expected a day as YYYY-MM-DD"),
        "{body}"
    );
    let (status, _, _) = d.call("GET", "/runs/99");
    assert_eq!(status, 404);
}

#[test]
fn a_runs_page_is_its_report_against_its_baseline_and_its_json_is_the_snapshot() {
    let b = built();
    let history = b.history();
    let h = history.to_str().unwrap();
    let d = Dashboard::start(b.p.path(), &["--history", h]);
    let page = d.get("/runs/4");
    // The report `evals report` writes of run 4 against main, as `check` judged it.
    let report =
        b.p.evals(&[
            "report",
            "4",
            "--baseline",
            "main",
            "--format",
            "html",
            "--history",
            h,
        ])
        .ok()
        .stdout;
    let body = report
        .find("<body")
        .map(|i| i + report[i..].find('>').unwrap() + 1);
    let body = body.expect("the report has a body");
    let end = report.rfind("</body>").expect("the report's body ends");
    assert!(page.starts_with(&report[..body]), "{page}");
    assert!(
        page.contains(&report[body..end]),
        "the whole report is on the page"
    );
    assert!(page.contains("<header class=\"evals-nav\">"));
    assert!(
        page.contains("<a href=\"/case?case=slips&amp;dataset=d&amp;suite=gate\">d / slips</a>"),
        "{page}"
    );
    // Run 1 is the first on main: no baseline before it, and the page says so.
    assert!(
        d.get("/runs/1")
            .contains("no earlier run of main: this run is the first baseline")
    );

    let snapshot = d.json("/runs/4.json");
    let runs = d.json("/runs.json");
    assert_eq!(snapshot["run"]["id"], runs[1]["id"]);
    assert_eq!(snapshot["run"]["branch"], "feature");
    assert_eq!(
        snapshot["run"]["commit"].as_str(),
        Some(b.feature_commit.as_str())
    );
    // By id too: the same snapshot.
    let id = runs[1]["id"].as_str().unwrap();
    assert_eq!(d.json(&format!("/runs/{id}.json")), snapshot);
}

#[test]
fn a_cases_history_says_which_run_and_commit_it_started_failing_at() {
    let b = built();
    let history = b.history();
    let d = Dashboard::start(b.p.path(), &["--history", history.to_str().unwrap()]);
    let series = d.json("/case.json?case=slips&dataset=d");
    let series = series.as_array().expect("an array");
    assert_eq!(series.len(), 1, "one contender, one dataset: {series:?}");
    let s = &series[0];
    let verdicts: Vec<(i64, &str)> = s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let verdict = if r["passed"] == false { "fail" } else { "pass" };
            (r["number"].as_i64().unwrap(), verdict)
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            (1, "pass"),
            (2, "pass"),
            (3, "fail"),
            (4, "fail"),
            (5, "fail")
        ]
    );
    // Run 3, feature's `record`, ran before its commit: on main's commit.
    assert_eq!(s["first_failed"]["number"], 3);
    assert_eq!(
        s["first_failed"]["commit"].as_str(),
        Some(b.main_commit.as_str())
    );
    assert_eq!(s["first_failed"]["branch"], "feature");
    assert_eq!(s["failing_since"], s["first_failed"]);
    let page = d.get("/case?case=slips&dataset=d");
    assert!(
        page.contains(&format!(
            "first failed at run #3, commit {} on feature, and fails since",
            &b.main_commit[..7]
        )),
        "{page}"
    );
    assert_eq!(
        page.matches("class=\"fail\">fail</td>").count(),
        3,
        "{page}"
    );

    let steady = d.json("/case.json?case=steady&dataset=d");
    assert_eq!(steady[0]["runs"].as_array().unwrap().len(), 5);
    assert_eq!(steady[0]["first_failed"], Value::Null);
    assert!(
        d.get("/case?case=steady")
            .contains("passed in every one of its 5 runs")
    );
    // On main alone, slips never failed.
    let main = d.json("/case.json?case=slips&branch=main");
    assert_eq!(main[0]["runs"].as_array().unwrap().len(), 2);
    assert_eq!(main[0]["first_failed"], Value::Null);
    let (status, _, _) = d.call("GET", "/case");
    assert_eq!(status, 400);
}

#[test]
fn the_trend_on_main_charts_each_experiments_primary_score_inline() {
    let b = built();
    let history = b.history();
    let d = Dashboard::start(b.p.path(), &["--history", history.to_str().unwrap()]);
    let points = d.json("/trend.json");
    let got: Vec<(i64, f64)> = points
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["number"].as_i64().unwrap(), p["score"].as_f64().unwrap()))
        .collect();
    assert_eq!(got, [(1, 1.0), (2, 1.0)], "main's two runs, oldest first");
    let feature = d.json("/trend.json?branch=feature");
    let scores: Vec<f64> = feature
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.len() == 2 && scores.iter().all(|s| *s < 1.0),
        "{scores:?}"
    );
    let page = d.get("/trend");
    assert!(
        page.contains("<svg") && page.contains("<polyline"),
        "{page}"
    );
    assert_eq!(page.matches("<circle").count(), 2, "{page}");
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "{page}"
    );
}

#[test]
fn a_postgresql_history_serves_the_same_runs_and_cases() {
    let b = built();
    let history = b.history();
    let url = pg::database();
    b.p.evals(&[
        "history",
        "migrate",
        "--to",
        &url,
        "--history",
        history.to_str().unwrap(),
    ])
    .ok();
    let lite = Dashboard::start(b.p.path(), &["--history", history.to_str().unwrap()]);
    let pg = Dashboard::start(b.p.path(), &["--history", &url]);
    assert!(pg.url.starts_with("http://127.0.0.1:"));
    for path in [
        "/runs.json",
        "/runs.json?branch=feature",
        "/case.json?case=slips&dataset=d",
        "/trend.json",
        "/runs/4.json",
    ] {
        assert_eq!(pg.json(path), lite.json(path), "{path}");
    }
    assert_eq!(
        pg.get("/runs/4"),
        lite.get("/runs/4").replace(
            &history.display().to_string(),
            &url.replace(&format!(":{}@", pg::password(&url)), "@")
        ),
    );
    for method in ["POST", "DELETE"] {
        assert_eq!(pg.call(method, "/runs.json").0, 405);
    }
    let page = pg.get("/");
    assert!(
        !page.contains(&pg::password(&url)),
        "the password is never shown"
    );
    // The dashboard's session is read-only: a store through it refuses to write.
    use llm_evals::history::RunStore;
    let mut store = llm_evals::history::PgStore::open_read_only(&url).expect("open");
    let id = store.find("1").unwrap().expect("run 1");
    let mut run = store.get(&id).unwrap().expect("run 1");
    run.run.id = "0198ffff-0000-7000-8000-000000000000".into();
    let e = store.insert(&run).expect_err("read-only").to_string();
    assert!(e.contains("read-only transaction"), "{e}");
    assert_eq!(numbers(&pg.json("/runs.json")).len(), 5);
}

#[test]
fn a_mysql_history_serves_the_same_runs_and_cases() {
    let b = built();
    let history = b.history();
    let url = my::database();
    b.p.evals(&[
        "history",
        "migrate",
        "--to",
        &url,
        "--history",
        history.to_str().unwrap(),
    ])
    .ok();
    let lite = Dashboard::start(b.p.path(), &["--history", history.to_str().unwrap()]);
    let mysql = Dashboard::start(b.p.path(), &["--history", &url]);
    for path in [
        "/runs.json",
        "/runs.json?branch=feature",
        "/case.json?case=slips&dataset=d",
        "/trend.json",
        "/runs/4.json",
    ] {
        assert_eq!(mysql.json(path), lite.json(path), "{path}");
    }
    assert_eq!(
        mysql.get("/runs/4"),
        lite.get("/runs/4")
            .replace(&history.display().to_string(), &my::shown(&url)),
    );
    let page = mysql.get("/");
    assert!(
        !page.contains(&my::password(&url)),
        "the password is never shown"
    );
    // The dashboard's session is read-only: a store through it refuses to write.
    use llm_evals::history::RunStore;
    let mut store = llm_evals::history::MysqlStore::open_read_only(&url).expect("open");
    let id = store.find("1").unwrap().expect("run 1");
    let mut run = store.get(&id).unwrap().expect("run 1");
    run.run.id = "0198ffff-0000-7000-8000-000000000000".into();
    let e = store.insert(&run).expect_err("read-only").to_string();
    assert!(e.contains("READ ONLY transaction"), "{e}");
    assert_eq!(numbers(&mysql.json("/runs.json")).len(), 5);
}

#[test]
fn no_history_or_a_taken_port_is_a_clear_error() {
    let p = Project::toy();
    let d = p.evals(&["dashboard", "--port", "0"]).code(2);
    d.stderr_has("/.evals/history.sqlite3: no history here yet; run `evals check` (or any run) first, or pass --history PATH");
    let b = built();
    let history = b.history();
    let first = Dashboard::start(b.p.path(), &["--history", history.to_str().unwrap()]);
    let port = first.url.trim_end_matches('/').rsplit(':').next().unwrap();
    let d =
        b.p.evals(&[
            "dashboard",
            "--port",
            port,
            "--history",
            history.to_str().unwrap(),
        ])
        .code(2);
    d.stderr_has(&format!("error: cannot listen on 127.0.0.1:{port}: "));
    d.stderr_has("pass another --port (0 takes a free one)");
    assert_eq!(
        numbers(&first.json("/runs.json")).len(),
        5,
        "the first still serves"
    );
}

/// A test double of a wedged dashboard: a loopback listener that accepts every connection
/// and never answers (the connections are held open until it is dropped).
struct Wedged {
    url: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Wedged {
    fn start() -> Wedged {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stopped.load(std::sync::atomic::Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => held.push(conn),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Wedged { url, stop }
    }
}

impl Drop for Wedged {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn a_wedged_dashboard_fails_its_test_within_the_deadline_naming_it() {
    // The dashboard accepts the request and never answers: the test's GET gives up at its
    // deadline (here 2 s; 30 s in the tests above) and fails naming the test.
    let wedged = Wedged::start();
    let d = Dashboard::at(&wedged.url, Duration::from_secs(2));
    let text = fails_within(Duration::from_secs(10), || {
        d.get("/runs.json");
    });
    assert_eq!(
        text,
        format!(
            "dashboard::a_wedged_dashboard_fails_its_test_within_the_deadline_naming_it: GET {}runs.json: no answer in time (is the dashboard wedged?)",
            wedged.url
        )
    );
}

#[test]
fn a_wedged_dashboard_that_prints_no_url_is_killed_and_fails_its_test_naming_it() {
    // A dashboard stuck before it prints its URL (a double: a process that sleeps): the
    // wait for the URL gives up at its deadline, kills it and fails naming the test.
    let mut cmd = std::process::Command::new("sleep");
    cmd.arg("600");
    let text = fails_within(Duration::from_secs(10), || {
        Dashboard::serving(cmd, Duration::from_secs(2), ANSWER);
    });
    assert!(
        text.starts_with("dashboard::a_wedged_dashboard_that_prints_no_url_is_killed_and_fails_its_test_naming_it: `sleep 600` wrote no line on stdout within its deadline of 2 s, so it was killed (pid "),
        "{text}"
    );
    assert_killed(&text);
}

impl Dashboard {
    fn port(&self) -> u16 {
        let port = self.url.trim_end_matches('/').rsplit(':').next();
        port.and_then(|p| p.parse().ok())
            .expect("a port in the URL")
    }

    /// The most memory the process has held (VmHWM), in bytes.
    fn peak_memory(&self) -> u64 {
        let pid = self.child.as_ref().expect("running").id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM");
        kb * 1024
    }

    /// `request` (a whole HTTP/1.1 request, as written) on a raw connection: the status and
    /// the body. The read gives up after 20 s, so a dashboard that hangs fails the test.
    fn raw(&self, request: &str) -> (u16, String) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port())).expect("connect");
        s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        s.write_all(request.as_bytes()).expect("send");
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        let text = String::from_utf8_lossy(&got).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no answer to {request:?}: {text:?}"));
        let body = text
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        (status, body)
    }

    /// `GET path` with `headers`, on a raw connection that closes after it.
    fn raw_get(&self, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
        let mut req = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n",
            self.port()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        self.raw(&req)
    }
}

/// Well under what reading an endless file costs (17 MB → 3.6 GB in 20 s on 39e9115).
const BOUNDED: u64 = 256 * 1024 * 1024;

#[test]
fn a_query_parameter_names_a_run_or_a_branch_and_never_makes_it_read_a_file() {
    let b = built();
    let history = b.history();
    let d = Dashboard::start(b.p.path(), &["--history", history.to_str().unwrap()]);
    // An endless file, a secret file, a path out of the project: refused, never opened.
    for bad in [
        "/dev/zero",
        "/etc/passwd",
        "../../../../etc/passwd",
        "/proc/self/environ",
    ] {
        let (status, body) = d.raw_get(&format!("/runs/1?baseline={bad}"), &[]);
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            body.contains(&format!("baseline={bad}: not a branch or a run")),
            "{bad}: {body}"
        );
        assert!(
            body.contains("the dashboard reads no file"),
            "{bad}: {body}"
        );
    }
    // A run's snapshot on disk where the dashboard runs, and a name that is no file: both
    // are branches of the history (neither has a run), so a page says nothing of the disk.
    std::fs::write(b.p.path().join("there.json"), d.get("/runs/2.json")).unwrap();
    for name in ["there.json", "nowhere.json", "evals/.llm-evals.config.yml"] {
        let page = d.get(&format!("/runs/4?baseline={name}"));
        assert!(
            page.contains(&format!(
                "no completed run of suite gate on branch {name} in "
            )),
            "{name}: {page}"
        );
    }
    // Another run or branch of the history still is a baseline.
    assert!(
        !d.get("/runs/4?baseline=%232")
            .contains("no completed run of suite gate")
    );
    assert!(
        d.peak_memory() < BOUNDED,
        "peak memory {} bytes",
        d.peak_memory()
    );
    assert_eq!(numbers(&d.json("/runs.json")).len(), 5, "it still answers");
}

#[test]
fn another_sites_request_is_403_and_every_read_is_capped() {
    let b = built();
    let history = b.history();
    let h = history.to_str().unwrap();
    let d = Dashboard::start(b.p.path(), &["--history", h]);
    let own = format!("http://127.0.0.1:{}", d.port());
    for headers in [
        vec![("Sec-Fetch-Site", "cross-site")],
        vec![("Sec-Fetch-Site", "same-site")],
        vec![("Origin", "http://evil.example")],
        vec![("Origin", "null")],
        vec![("Origin", "http://127.0.0.1:1")],
    ] {
        let (status, body) = d.raw_get("/runs/1?baseline=/dev/zero", &headers);
        assert_eq!(status, 403, "{headers:?}: {body}");
        assert!(body.contains("not from other sites"), "{body}");
    }
    // Its own pages' requests and a typed URL go through.
    for headers in [
        vec![("Sec-Fetch-Site", "same-origin"), ("Origin", own.as_str())],
        vec![("Sec-Fetch-Site", "none")],
    ] {
        assert_eq!(d.raw_get("/runs.json", &headers).0, 200, "{headers:?}");
    }
    // A long target, long headers, a body: capped at 16 KiB by default.
    let long = "x".repeat(20_000);
    let (status, body) = d.raw_get(&format!("/runs.json?suite={long}"), &[]);
    assert_eq!(status, 414, "{body}");
    assert!(body.contains("over the dashboard's limit of 16384 (--max-request-bytes)"));
    assert_eq!(d.raw_get("/runs.json", &[("X-Pad", &long)]).0, 431);
    let port = d.port();
    let (status, body) = d.raw(&format!(
        "GET /runs.json HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: 1000000000\r\n\r\n"
    ));
    assert_eq!(status, 413, "{body}");
    // The rows a page reads are bounded too.
    for (path, want) in [
        (
            "/runs.json?limit=100000",
            "limit=100000: expected 1 to 10000",
        ),
        ("/trend.json?last=5000", "last=5000: expected 1 to 1000"),
        (
            "/case.json?case=slips&limit=0",
            "limit=0: expected 1 to 10000",
        ),
    ] {
        let (status, _, body) = d.call("GET", path);
        assert_eq!(status, 400, "{path}");
        assert!(body.contains(want), "{path}: {body}");
    }
    assert_eq!(numbers(&d.json("/runs.json?limit=2")), [5, 4]);
    drop(d);

    // A run's snapshot over --max-run-bytes is never read: its page says why.
    let d = Dashboard::start(b.p.path(), &["--history", h, "--max-run-bytes", "1000"]);
    let (status, _, body) = d.call("GET", "/runs/4");
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("snapshot is ") && body.contains(" bytes, over the limit of 1000 bytes set by --max-run-bytes: raise --max-run-bytes to read it"),
        "{body}"
    );
    assert_eq!(d.call("GET", "/runs/4.json").0, 500);
    assert_eq!(
        numbers(&d.json("/runs.json")).len(),
        5,
        "lists need no snapshot"
    );
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 130, "{stderr}");
}

/// A page on another origin: a tiny HTTP server on loopback answering every request with
/// `page`.
fn serve_page(page: String) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            );
        }
    });
    port
}

/// Headless Chromium loads `url` (and what it embeds) and ends, or is killed after 60 s.
fn chromium_loads(url: &str) {
    let profile = tempfile::tempdir().expect("a profile dir");
    let mut child = crate::browser::headless(profile.path())
        .args(["--virtual-time-budget=5000", "--dump-dom"])
        .arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run chromium");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium on {url} did not end in 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_page_elsewhere_embedding_the_dashboard_is_refused_in_a_real_chromium() {
    let b = built();
    let history = b.history();
    let d = Dashboard::start(b.p.path(), &["--history", history.to_str().unwrap()]);
    let port = d.port();
    let page = format!(
        "<!doctype html><html><body><p>a page elsewhere</p>\
         <img src=\"http://127.0.0.1:{port}/runs/1?baseline=/dev/zero\">\
         <img src=\"http://127.0.0.1:{port}/runs.json\"></body></html>"
    );
    let site = serve_page(page.clone());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("elsewhere.html");
    std::fs::write(&file, &page).unwrap();
    // Another host (cross-site), another port of this one (same-site), a file.
    chromium_loads(&format!("http://localhost:{site}/"));
    chromium_loads(&format!("http://127.0.0.1:{site}/"));
    chromium_loads(&format!("file://{}", file.display()));
    assert!(
        d.peak_memory() < BOUNDED,
        "peak memory {} bytes",
        d.peak_memory()
    );
    assert_eq!(numbers(&d.json("/runs.json")).len(), 5, "it still answers");
    let (code, stderr) = d.interrupt();
    assert_eq!(code, 130, "{stderr}");
    // Each page's requests reached the dashboard, and were refused.
    let refused = |site: &str, path: &str| {
        stderr
            .matches(&format!(
                "warning: refused a request another site made (Sec-Fetch-Site: {site}) for {path}: a web page tried to read the dashboard"
            ))
            .count()
    };
    assert_eq!(refused("cross-site", "/runs/1"), 2, "{stderr}");
    assert_eq!(refused("same-site", "/runs/1"), 1, "{stderr}");
    assert_eq!(refused("cross-site", "/runs.json"), 2, "{stderr}");
    assert_eq!(refused("same-site", "/runs.json"), 1, "{stderr}");
}
