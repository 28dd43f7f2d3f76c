//! A history given as a URL rather than a file: which server it names, and its password
//! kept out of every message and file (whichever stores this build has).

/// Whether `value` starts with one of `schemes` (`name://`, any case).
fn has_scheme(value: &str, schemes: &[&str]) -> bool {
    let v = value.trim_start();
    schemes.iter().any(|s| {
        v.get(..s.len() + 3)
            .is_some_and(|head| head.eq_ignore_ascii_case(&format!("{s}://")))
    })
}

/// Whether `value` names a PostgreSQL database rather than a SQLite file.
pub fn is_postgres(value: &str) -> bool {
    has_scheme(value, &["postgres", "postgresql"])
}

/// Whether `value` names a MySQL or MariaDB database (`mysql://`, `mariadb://`).
pub fn is_mysql(value: &str) -> bool {
    has_scheme(value, &["mysql", "mariadb"])
}

/// Whether `value` names a database of any store (PostgreSQL, MySQL) rather than a file:
/// what `DATABASE_URL` must be to choose the history.
pub fn is_database(value: &str) -> bool {
    is_postgres(value) || is_mysql(value)
}

/// The URL without its password (in the user info or a `password=` parameter): what every
/// message names the store by.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (info, host) = authority.split_at(at);
            let user = info.split(':').next().unwrap_or_default();
            format!("{user}{host}")
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|kv| {
                    !kv.split('=')
                        .next()
                        .unwrap_or_default()
                        .eq_ignore_ascii_case("password")
                })
                .collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

/// Registers the URL's password (as written and percent-decoded) with the egress scrubber,
/// so that nothing the run writes (its argv in a snapshot, a message) carries it.
pub(crate) fn register_password(url: &str) {
    let written = url
        .split_once("://")
        .map(|(_, rest)| rest)
        .and_then(|r| r.split(['/', '?']).next())
        .and_then(|a| a.rsplit_once('@'))
        .and_then(|(info, _)| info.split_once(':'))
        .map(|(_, p)| p.to_string());
    let param = url.split_once('?').and_then(|(_, q)| {
        q.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            k.eq_ignore_ascii_case("password").then(|| v.to_string())
        })
    });
    let found: Vec<String> = written.into_iter().chain(param).collect();
    let decoded: Vec<String> = found
        .iter()
        .map(|p| crate::text::percent_decoded(p))
        .collect();
    crate::secrets::register(found.into_iter().chain(decoded));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_url_has_no_password() {
        assert_eq!(
            redact("postgres://evals:s3cr%40t@db.example:5432/hist?sslmode=require"),
            "postgres://evals@db.example:5432/hist?sslmode=require"
        );
        assert_eq!(
            redact("postgresql://u:p@h/db?password=hunter22&sslmode=require"),
            "postgresql://u@h/db?sslmode=require"
        );
        assert_eq!(redact("postgres://h/db?password=x"), "postgres://h/db");
        assert_eq!(redact("postgres://u@h"), "postgres://u@h");
        assert!(is_postgres("postgresql://h/db") && is_postgres("POSTGRES://h"));
        assert!(!is_postgres("history.sqlite3") && !is_postgres("./postgres/h.db"));
        assert_eq!(
            redact("mysql://evals:s3cr%40t@db.example:3306/hist?ssl-mode=VERIFY_CA&ssl-ca=/ca.pem"),
            "mysql://evals@db.example:3306/hist?ssl-mode=VERIFY_CA&ssl-ca=/ca.pem"
        );
        assert!(is_mysql("mysql://h/db") && is_mysql(" MariaDB://h") && !is_mysql("mysql.db"));
        assert!(is_database("mysql://h") && is_database("postgres://h"));
        assert!(!is_database("sqlite://h") && !is_database("x"));
    }

    #[test]
    fn the_password_is_registered_with_the_scrubber_as_written_and_decoded() {
        register_password("postgres://u:pw%2Fin-url-77@h/db?password=param-secret-9");
        let text = "a pw/in-url-77 b pw%2Fin-url-77 c param-secret-9";
        let scrubbed = crate::secrets::scrub(text);
        for s in ["pw/in-url-77", "pw%2Fin-url-77", "param-secret-9"] {
            assert!(!scrubbed.contains(s), "{scrubbed}");
        }
    }
}
