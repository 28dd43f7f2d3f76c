//! A real PostgreSQL server for the history tests, and a fresh database on it per test.
//! `.ci/run` starts a throwaway cluster and exports its URL as `EVALS_TEST_POSTGRES_URL`
//! (a superuser's, on a loopback port); a bare `cargo test` starts one here, once per test
//! binary: `initdb` into a temp folder, `postgres` on a free loopback port with password
//! (scram) authentication, as the `postgres` user when the tests run as root (the server
//! refuses root). That server is the child of a thread that lives as long as the tests, and
//! stops when they end (the parent-death signal), leaving its folder to the next run to
//! clear. Without `initdb` the tests fail, saying to install Debian's `postgresql`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::harness::Bounded;

struct Server {
    /// A superuser's URL, without a database (`postgres://user:pw@host:port`).
    url: String,
    /// The self-signed certificate the server's TLS presents (for `SSL_CERT_FILE`).
    ca: PathBuf,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| match std::env::var("EVALS_TEST_POSTGRES_URL") {
        Ok(url) => Server {
            url: url.trim_end_matches('/').to_string(),
            ca: std::env::var_os("EVALS_TEST_POSTGRES_CA")
                .map(PathBuf::from)
                .expect("EVALS_TEST_POSTGRES_URL comes with EVALS_TEST_POSTGRES_CA (the server's certificate): run .ci/run"),
        },
        Err(_) => start(),
    })
}

/// The certificate a client must trust for `sslmode=require` on the test server.
pub fn ca() -> PathBuf {
    server().ca.clone()
}

/// A new, empty database on the test server: its URL, password included.
pub fn database() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "evals_test_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    let base = server().url.as_str();
    // The admin connection goes to the `postgres` database every cluster has; a URL from
    // .ci/run that names a database has it dropped here.
    let after = base.find("://").map_or(0, |i| i + 3);
    let root = match base[after..].find(['/', '?']) {
        Some(i) => &base[..after + i],
        None => base,
    };
    let mut c = connect(&format!("{root}/postgres"));
    c.batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("create the test database");
    format!("{root}/{name}")
}

/// The password in a database URL from [`database`].
pub fn password(url: &str) -> String {
    let info = url.split("://").nth(1).unwrap().split('@').next().unwrap();
    info.split_once(':').unwrap().1.to_string()
}

/// A client on `url` (the test's own look at the tables), connected within 30 s.
pub fn connect(url: &str) -> postgres::Client {
    bounded(url)
        .connect(postgres::NoTls)
        .unwrap_or_else(|e| panic!("connect to the test PostgreSQL server: {e}"))
}

/// `url`'s connection settings, with a deadline to connect: a server that accepts and
/// never answers fails the test instead of hanging it.
fn bounded(url: &str) -> postgres::Config {
    let mut config: postgres::Config = url
        .parse()
        .unwrap_or_else(|e| panic!("the test PostgreSQL URL: {e}"));
    config.connect_timeout(Duration::from_secs(30));
    config
}

fn bin(name: &str) -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut dirs: Vec<PathBuf> = on_path;
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<PathBuf> = rd.flatten().map(|e| e.path().join("bin")).collect();
        versions.sort();
        dirs.extend(versions.into_iter().rev());
    }
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("no {name}: install Debian's postgresql (apt-get install postgresql), or run .ci/run")
        })
}

/// The user the server runs as: this one, or `postgres` when this is root.
fn server_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let id = |flag: &str| -> u32 {
        let out = Command::new("id")
            .args([flag, "postgres"])
            .output_bounded()
            .expect("id postgres");
        assert!(
            out.status.success(),
            "the tests run as root and PostgreSQL refuses root: create a `postgres` user (Debian's postgresql package does), or run .ci/run"
        );
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    Some((id("-u"), id("-g")))
}

fn as_user(cmd: &mut Command, user: Option<(u32, u32)>) -> &mut Command {
    use std::os::unix::process::CommandExt;
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid);
    }
    cmd
}

/// Clears the folders of earlier test servers that have stopped (no `postmaster.pid`).
/// Removes the folders of test processes that are gone. A folder is named by the pid that
/// made it, and only a dead pid's is removed: another test binary starting at the same time
/// (another worktree, `cargo test` beside `.ci/run`) has no `postmaster.pid` yet either.
fn clear_stale(tmp: &Path) {
    for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("evals-pg-test-") else {
            continue;
        };
        let alive = Path::new("/proc").join(pid).exists();
        if !alive && !e.path().join("data/postmaster.pid").exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn start() -> Server {
    let user = server_user();
    // Under /tmp, not target/: the `postgres` user must reach it, and a socket path must
    // be short.
    let tmp = PathBuf::from("/tmp");
    clear_stale(&tmp);
    let dir = tmp.join(format!("evals-pg-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sock")).unwrap();
    let secret = format!("pg-test-{}-{}", std::process::id(), nanos());
    std::fs::write(dir.join("pw"), &secret).unwrap();
    if let Some((uid, gid)) = user {
        for p in [dir.clone(), dir.join("sock"), dir.join("pw")] {
            std::os::unix::fs::chown(&p, Some(uid), Some(gid)).unwrap();
        }
    }
    certificates(&dir);
    if let Some((uid, gid)) = user {
        for f in ["server.key", "server.crt"] {
            std::os::unix::fs::chown(dir.join(f), Some(uid), Some(gid)).unwrap();
        }
    }
    let out = as_user(&mut Command::new(bin("initdb")), user)
        .arg("-D")
        .arg(dir.join("data"))
        .args([
            "-U",
            "evals",
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
        ])
        .args(["-E", "UTF8", "--locale=C", "--no-sync"])
        .arg(format!("--pwfile={}", dir.join("pw").display()))
        .output_bounded()
        .expect("run initdb");
    assert!(
        out.status.success(),
        "initdb failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let postgres = bin("postgres");
    let (data, sock, log) = (dir.join("data"), dir.join("sock"), dir.join("server.log"));
    let tls = [
        "-c".to_string(),
        "ssl=on".to_string(),
        "-c".to_string(),
        format!("ssl_cert_file={}", dir.join("server.crt").display()),
        "-c".to_string(),
        format!("ssl_key_file={}", dir.join("server.key").display()),
    ];
    let (tx, rx) = std::sync::mpsc::channel();
    // The server's parent is this thread, parked for as long as the tests run: when the
    // test binary exits, the server gets SIGINT (a fast shutdown).
    std::thread::spawn(move || {
        use std::os::unix::process::CommandExt;
        let log = std::fs::File::create(&log).unwrap();
        let mut cmd = Command::new(postgres);
        as_user(&mut cmd, user)
            .arg("-D")
            .arg(&data)
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(&sock)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", "max_connections=200"])
            .args(&tls)
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        // SAFETY: prctl is async-signal-safe; set after the uid change, which clears it.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn();
        let ok = child.is_ok();
        tx.send(child.map(|_| ()).map_err(|e| e.to_string()))
            .unwrap();
        if ok {
            loop {
                std::thread::park();
            }
        }
    });
    rx.recv()
        .unwrap()
        .unwrap_or_else(|e| panic!("start postgres: {e}"));
    let url = format!("postgres://evals:{secret}@127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match bounded(&format!("{url}/postgres")).connect(postgres::NoTls) {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!(
                "the test PostgreSQL server did not come up: {e}\n{}",
                std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
            ),
        }
    }
    Server {
        url,
        ca: dir.join("ca.crt"),
    }
}

/// A throwaway CA in `dir` (`ca.crt`), and the server's certificate for 127.0.0.1 signed by
/// it (`server.crt`, `server.key`), as .ci/run makes them (the MySQL tests' server too).
pub fn certificates(dir: &Path) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output_bounded()
            .expect("run openssl (Debian's openssl package)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=evals test CA",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        dir.join("server.ext"),
        "basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}
