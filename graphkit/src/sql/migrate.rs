//! The schema migration runner of every graphkit database, and of servers that keep their own
//! tables next to graphkit's.
//!
//! A database keeps a table `graphkit_migrations (component, version, description,
//! applied_at_ms)`. A component ([`Schema`]) has an ordered list of migrations compiled in;
//! opening applies those above the highest version recorded, in order, in one transaction,
//! and records them. Two processes opening a database at once do not race: SQLite migrates
//! inside `BEGIN IMMEDIATE` (one writer at a time), PostgreSQL inside a transaction that
//! first takes an advisory lock. A database migrated by a newer build (a version this build
//! does not know) is refused rather than written to with an old idea of its schema.

use super::{Dialect, backend_error};
use crate::clock::now_ms;
use crate::error::StorageError;

/// One step of a schema's history. Versions count 1, 2, 3, ...; once released, a step is
/// never edited: a change is a new step with the next version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Its version.
    pub version: i64,
    /// What it creates or changes, recorded with it.
    pub description: &'static str,
    /// Its statements, run in the migration's transaction.
    pub sql: &'static str,
}

/// The schema history of one component of a database.
///
/// ```
/// use graphkit::sql::{Migration, Schema};
///
/// const NOTES: Schema = Schema {
///     component: "notes",
///     upgrade: "my-app",
///     migrations: &[Migration {
///         version: 1,
///         description: "notes",
///         sql: "CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT NOT NULL);",
///     }],
/// };
/// assert_eq!(NOTES.newest(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schema {
    /// The component's name in `graphkit_migrations`: `checkpoint`, `store`, ...
    pub component: &'static str,
    /// What to upgrade when the database was migrated by a newer build (`graphkit`).
    pub upgrade: &'static str,
    /// Its steps, oldest first.
    pub migrations: &'static [Migration],
}

impl Schema {
    /// The newest version this build knows (0 without steps).
    pub fn newest(&self) -> i64 {
        self.migrations.last().map_or(0, |m| m.version)
    }

    /// The steps a database at version `applied` lacks, or the error for a database that a
    /// newer build migrated.
    fn steps_after(
        &self,
        applied: i64,
        backend: &'static str,
    ) -> Result<&[Migration], StorageError> {
        let known = self.newest();
        if applied > known {
            return Err(StorageError::backend(
                backend,
                format!(
                    "the database's {} schema is at version {applied}, newer than this build knows ({known}); upgrade {}",
                    self.component, self.upgrade
                ),
            ));
        }
        Ok(&self.migrations[self.migrations.partition_point(|m| m.version <= applied)..])
    }
}

/// The table of applied migrations.
fn table(dialect: Dialect) -> String {
    let integer = dialect.integer();
    format!(
        "CREATE TABLE IF NOT EXISTS graphkit_migrations (
            component     TEXT    NOT NULL,
            version       {integer} NOT NULL,
            description   TEXT    NOT NULL,
            applied_at_ms {integer} NOT NULL,
            PRIMARY KEY (component, version)
        )"
    )
}

/// The version a component is at: (component) → version.
const APPLIED: &str =
    "SELECT COALESCE(MAX(version), 0) FROM graphkit_migrations WHERE component = ?1";
/// Records an applied step: (component, version, description, applied_at_ms).
const RECORD: &str = "INSERT INTO graphkit_migrations (component, version, description, applied_at_ms) VALUES (?1, ?2, ?3, ?4)";

/// Migrates `schema` in an SQLite database, inside `BEGIN IMMEDIATE`; while another process
/// holds the file locked, it starts over until the busy timeout has passed.
#[cfg(feature = "sqlite")]
pub async fn migrate_sqlite(
    pool: &sqlx::SqlitePool,
    backend: &'static str,
    schema: &Schema,
) -> Result<(), StorageError> {
    use super::sqlite::{is_locked, retry_while_locked};
    use sqlx::AssertSqlSafe;

    let dialect = Dialect::Sqlite;
    let attempt = move || async move {
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        sqlx::query(AssertSqlSafe(table(dialect)))
            .execute(&mut *tx)
            .await?;
        let applied: i64 = sqlx::query_scalar(APPLIED)
            .bind(schema.component)
            .fetch_one(&mut *tx)
            .await?;
        let Ok(steps) = schema.steps_after(applied, backend) else {
            return Ok(applied); // refused below; the transaction rolls back
        };
        for step in steps {
            sqlx::raw_sql(step.sql).execute(&mut *tx).await?;
            sqlx::query(RECORD)
                .bind(schema.component)
                .bind(step.version)
                .bind(step.description)
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(applied)
    };
    let applied = retry_while_locked(is_locked, attempt)
        .await
        .map_err(|e| backend_error(backend, "schema migration failed", e))?;
    schema.steps_after(applied, backend)?;
    Ok(())
}

/// Migrates `schema` in a PostgreSQL database (in the pool's `search_path`), in one
/// transaction that first takes a transaction-level advisory lock, so processes starting at
/// once apply each step exactly once.
#[cfg(feature = "postgres")]
pub async fn migrate_postgres(
    pool: &sqlx::PgPool,
    backend: &'static str,
    schema: &Schema,
) -> Result<(), StorageError> {
    use super::postgres::advisory_key;
    use sqlx::AssertSqlSafe;

    let dialect = Dialect::Postgres;
    let err = |e| backend_error(backend, "schema migration failed", e);
    let mut tx = pool.begin().await.map_err(err)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(advisory_key("graphkit migrations"))
        .execute(&mut *tx)
        .await
        .map_err(err)?;
    sqlx::query(AssertSqlSafe(table(dialect)))
        .execute(&mut *tx)
        .await
        .map_err(err)?;
    let applied: i64 = sqlx::query_scalar(AssertSqlSafe(dialect.statement(APPLIED)))
        .bind(schema.component)
        .fetch_one(&mut *tx)
        .await
        .map_err(err)?;
    for step in schema.steps_after(applied, backend)? {
        sqlx::raw_sql(step.sql)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        sqlx::query(AssertSqlSafe(dialect.statement(RECORD)))
            .bind(schema.component)
            .bind(step.version)
            .bind(step.description)
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(err)?;
    }
    tx.commit().await.map_err(err)
}
