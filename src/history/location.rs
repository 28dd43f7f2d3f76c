//! Where a history is (a SQLite file, a PostgreSQL or a MySQL database), and the one place
//! that turns it into an open store.

use std::path::{Path, PathBuf};

use super::{AnyStore, SqliteStore, url};
use crate::error::Result;

/// Where a history is: a SQLite file or a database.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A `postgres://` / `postgresql://` URL, its password in it (never shown: see
    /// [`Location::shown`]).
    Postgres(String),
    /// A `mysql://` / `mariadb://` URL (MySQL 8.0+, MariaDB 10.11+), its password in it
    /// (never shown).
    Mysql(String),
}

impl Location {
    /// `value` as a location: a database URL, else a file (relative to `base`). A URL's
    /// password is registered with the egress scrubber here.
    pub fn parse(value: &str, base: &Path) -> Location {
        if url::is_postgres(value) {
            url::register_password(value);
            Location::Postgres(value.trim().to_string())
        } else if url::is_mysql(value) {
            url::register_password(value);
            Location::Mysql(value.trim().to_string())
        } else {
            Location::Sqlite(base.join(value))
        }
    }

    /// Whether it is a database (a URL) rather than a file.
    pub fn is_database(&self) -> bool {
        !matches!(self, Location::Sqlite(_))
    }

    /// How messages name it: the path, or the URL without its password.
    pub fn shown(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(u) | Location::Mysql(u) => url::redact(u),
        }
    }

    /// Whether there may be runs there: the file exists (a database is always asked).
    pub fn exists(&self) -> bool {
        match self {
            Location::Sqlite(p) => p.is_file(),
            Location::Postgres(_) | Location::Mysql(_) => true,
        }
    }

    /// Opens (creating and migrating as needed) the store. Nothing is read from the
    /// environment: a database URL must hold what it needs ([`Location::open_with`] takes
    /// `PGPASSWORD` and the timeouts' variables from an environment).
    pub fn open(&self) -> Result<AnyStore> {
        self.opened(false, &crate::env::Environment::default())
    }

    /// [`Location::open`], a PostgreSQL store given what `env` holds of its variables
    /// ([`Environment::postgres`](crate::env::Environment::postgres)) where its URL leaves
    /// them out.
    pub fn open_with(&self, env: &crate::env::Environment) -> Result<AnyStore> {
        self.opened(false, env)
    }

    /// Opens the store for reading alone (`evals dashboard`): a read-only SQLite
    /// connection, or a database session whose transactions are read-only. Either is
    /// migrated first when its schema is older than this binary's, as any command would.
    pub fn open_read_only(&self) -> Result<AnyStore> {
        self.opened(true, &crate::env::Environment::default())
    }

    /// [`Location::open_read_only`], with `env`'s variables as [`Location::open_with`].
    pub fn open_read_only_with(&self, env: &crate::env::Environment) -> Result<AnyStore> {
        self.opened(true, env)
    }

    fn opened(&self, read_only: bool, env: &crate::env::Environment) -> Result<AnyStore> {
        #[cfg(not(feature = "postgres"))]
        let _ = env;
        Ok(match (self, read_only) {
            (Location::Sqlite(p), false) => Box::new(SqliteStore::open(p)?),
            (Location::Sqlite(p), true) => Box::new(SqliteStore::open_read_only(p)?),
            #[cfg(feature = "postgres")]
            (Location::Postgres(u), false) => {
                Box::new(super::PgStore::open_with(u, &env.postgres)?)
            }
            #[cfg(feature = "postgres")]
            (Location::Postgres(u), true) => {
                Box::new(super::PgStore::open_read_only_with(u, &env.postgres)?)
            }
            #[cfg(feature = "mysql")]
            (Location::Mysql(u), false) => Box::new(super::MysqlStore::open(u)?),
            #[cfg(feature = "mysql")]
            (Location::Mysql(u), true) => Box::new(super::MysqlStore::open_read_only(u)?),
            #[cfg(not(feature = "postgres"))]
            (Location::Postgres(u), _) => return Err(without(u, "PostgreSQL", "postgres")),
            #[cfg(not(feature = "mysql"))]
            (Location::Mysql(u), _) => return Err(without(u, "MySQL", "mysql")),
        })
    }
}

/// A database URL given to a build without the store's feature.
#[cfg(not(all(feature = "postgres", feature = "mysql")))]
fn without(url: &str, name: &str, feature: &str) -> crate::error::Error {
    crate::error::Error::Usage(format!(
        "{}: this build of evals has no {name} history (the `{feature}` feature): build it with `--features {feature}`, or keep the history in a SQLite file",
        url::redact(url)
    ))
}
