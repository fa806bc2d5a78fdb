//! The SQL layer graphkit's SQLite and PostgreSQL backends share, also for servers built on
//! graphkit that keep their own tables next to graphkit's: the one schema migration runner
//! ([`Schema`], [`migrate_sqlite`], [`migrate_postgres`]).
//!
//! Inside the crate it also holds what differs between the two dialects. Statements are
//! written once, with SQLite's numbered placeholders (`?1`, `?2`, ...), and
//! [`Dialect::statement`] gives them in PostgreSQL's (`$1`, `$2`, ...); reading a field of a
//! JSON text column is the other difference the shared statements meet. Opening connections
//! is per database (`sqlite.rs`, `postgres.rs`).

mod migrate;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

#[cfg(feature = "postgres")]
pub use migrate::migrate_postgres;
#[cfg(feature = "sqlite")]
pub use migrate::migrate_sqlite;
pub use migrate::{Migration, Schema};

use crate::error::StorageError;

/// The SQL dialect a statement is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(all(feature = "sqlite", feature = "postgres")),
    allow(dead_code, reason = "a build with one database uses one dialect")
)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// `statement`, written with SQLite's numbered placeholders (`?1`), in this dialect.
    pub(crate) fn statement(self, statement: &str) -> String {
        match self {
            Self::Sqlite => statement.to_owned(),
            Self::Postgres => dollar_placeholders(statement),
        }
    }

    /// An expression reading the field `key` (as text) of the JSON text column `column`.
    pub(crate) fn json_field(self, column: &str, key: &str) -> String {
        match self {
            Self::Sqlite => format!("json_extract({column}, '$.{key}')"),
            Self::Postgres => format!("({column}::jsonb ->> '{key}')"),
        }
    }

    /// The type of a 64-bit integer column.
    pub(crate) fn integer(self) -> &'static str {
        match self {
            Self::Sqlite => "INTEGER",
            Self::Postgres => "BIGINT",
        }
    }
}

/// `?1`, `?2`, ... written as `$1`, `$2`, ... (the shared statements hold no `?` otherwise).
fn dollar_placeholders(statement: &str) -> String {
    let mut text = String::with_capacity(statement.len());
    let mut chars = statement.chars().peekable();
    while let Some(c) = chars.next() {
        let numbered = c == '?' && chars.peek().is_some_and(char::is_ascii_digit);
        text.push(if numbered { '$' } else { c });
    }
    text
}

/// An [`StorageError::Backend`] saying what was being done. A database's own error gives its
/// message and SQLSTATE code, without the server's C source position that PostgreSQL's
/// display adds (`at line 1234` of some server file, which only confuses).
pub(crate) fn backend_error(
    backend: &'static str,
    doing: &str,
    error: sqlx::Error,
) -> StorageError {
    let message = match &error {
        sqlx::Error::Database(db) => match db.code() {
            Some(code) => format!("{doing}: {} (SQLSTATE {code})", db.message()),
            None => format!("{doing}: {}", db.message()),
        },
        other => format!("{doing}: {other}"),
    };
    StorageError::backend(backend, message)
}

/// How many rows a statement's `LIMIT` lets through: `limit`, or all of them.
pub(crate) fn sql_limit(limit: Option<usize>) -> i64 {
    limit.map_or(i64::MAX, |limit| i64::try_from(limit).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_statements_number_their_parameters_with_dollars() {
        let statement = "SELECT a FROM t WHERE b = ?1 AND (?2 IS NULL OR c < ?2) LIMIT ?10";
        assert_eq!(
            Dialect::Postgres.statement(statement),
            "SELECT a FROM t WHERE b = $1 AND ($2 IS NULL OR c < $2) LIMIT $10"
        );
        assert_eq!(Dialect::Sqlite.statement(statement), statement);
    }
}
