//! The schema migration runner (`graphkit::sql`), one suite run against SQLite and, when
//! `GRAPHKIT_TEST_POSTGRES_URL` names a server, PostgreSQL: steps run once, in order, and
//! are recorded; a failing step leaves nothing behind; a database migrated by a newer build
//! is refused. Components and tables are unique per test, so runs can share a database.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

use crate::backend_support;

use backend_support::unique;
use graphkit::error::StorageError;
use graphkit::sql::{Migration, Schema};

/// A database of either kind, through the one runner of each.
enum Database {
    #[cfg(feature = "sqlite")]
    Sqlite(sqlx::SqlitePool),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
}

impl Database {
    async fn migrate(&self, schema: &Schema) -> Result<(), StorageError> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(pool) => graphkit::sql::migrate_sqlite(pool, "test", schema).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => graphkit::sql::migrate_postgres(pool, "test", schema).await,
        }
    }

    /// Runs `sql` (no parameters); `false` if the database refused it.
    async fn run(&self, sql: String) -> bool {
        let sql = sqlx::AssertSqlSafe(sql);
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(pool) => sqlx::raw_sql(sql).execute(pool).await.is_ok(),
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => sqlx::raw_sql(sql).execute(pool).await.is_ok(),
        }
    }

    /// The versions recorded for `component`, in order.
    async fn versions(&self, component: &str) -> Vec<i64> {
        let sql = format!(
            "SELECT version FROM graphkit_migrations WHERE component = '{component}' ORDER BY version"
        );
        let sql = sqlx::AssertSqlSafe(sql);
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(pool) => sqlx::query_scalar(sql).fetch_all(pool).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(pool) => sqlx::query_scalar(sql).fetch_all(pool).await,
        }
        .expect("read graphkit_migrations")
    }
}

/// A name no other test uses, leaked to be `'static` like a schema compiled in.
fn name(prefix: &str) -> &'static str {
    Box::leak(unique(prefix).replace('-', "_").into_boxed_str())
}

fn step(version: i64, sql: String) -> Migration {
    Migration {
        version,
        description: "a test step",
        sql: Box::leak(sql.into_boxed_str()),
    }
}

fn schema(component: &'static str, steps: Vec<Migration>) -> Schema {
    Schema {
        component,
        upgrade: "the test build",
        migrations: Box::leak(steps.into_boxed_slice()),
    }
}

async fn steps_run_once_in_order_and_are_recorded(db: &Database) {
    let (component, table) = (name("once"), name("once_t"));
    let first = step(1, format!("CREATE TABLE {table} (id INTEGER NOT NULL);"));
    db.migrate(&schema(component, vec![first]))
        .await
        .expect("migrate");
    db.migrate(&schema(component, vec![first]))
        .await
        .expect("nothing to do the second time");
    assert_eq!(db.versions(component).await, [1]);

    // A later build appends a step: only that one runs.
    let second = step(2, format!("ALTER TABLE {table} ADD COLUMN note TEXT;"));
    db.migrate(&schema(component, vec![first, second]))
        .await
        .expect("migrate");
    assert_eq!(db.versions(component).await, [1, 2]);
    assert!(
        db.run(format!("INSERT INTO {table} (id, note) VALUES (1, 'x')"))
            .await
    );
}

async fn a_failing_step_leaves_nothing_behind(db: &Database) {
    let (component, table) = (name("failing"), name("failing_t"));
    let steps = vec![
        step(1, format!("CREATE TABLE {table} (id INTEGER NOT NULL);")),
        step(2, "THIS IS NOT SQL;".to_owned()),
    ];
    let failed = db.migrate(&schema(component, steps)).await;
    assert!(
        matches!(&failed, Err(StorageError::Backend { message, .. }) if message.starts_with("schema migration failed")),
        "{failed:?}"
    );
    assert_eq!(db.versions(component).await, [0_i64; 0]);
    assert!(
        !db.run(format!("SELECT id FROM {table}")).await,
        "step 1 was rolled back with step 2"
    );
}

async fn a_database_migrated_by_a_newer_build_is_refused(db: &Database) {
    let (component, table) = (name("newer"), name("newer_t"));
    let steps = vec![step(
        1,
        format!("CREATE TABLE {table} (id INTEGER NOT NULL);"),
    )];
    db.migrate(&schema(component, steps.clone()))
        .await
        .expect("migrate");
    assert!(
        db.run(format!(
            "INSERT INTO graphkit_migrations (component, version, description, applied_at_ms) \
             VALUES ('{component}', 2, 'from a newer build', 0)"
        ))
        .await
    );
    let refused = db.migrate(&schema(component, steps)).await;
    let Err(StorageError::Backend { message, .. }) = refused else {
        panic!("a newer database must be refused: {refused:?}");
    };
    assert_eq!(
        message,
        format!(
            "the database's {component} schema is at version 2, newer than this build knows (1); upgrade the test build"
        )
    );
}

macro_rules! for_each_database {
    ($($behaviour:ident),* $(,)?) => {
        #[cfg(feature = "sqlite")]
        mod sqlite {
            $(
                #[tokio::test]
                async fn $behaviour() {
                    let dir = tempfile::tempdir().expect("a temporary directory");
                    let saver = graphkit::checkpoint::SqliteSaver::open(dir.path().join("m.db"))
                        .await
                        .expect("open");
                    let db = super::Database::Sqlite(saver.pool().clone());
                    super::$behaviour(&db).await;
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test]
                async fn $behaviour() {
                    let Some(url) = super::backend_support::postgres_url() else { return };
                    let saver = graphkit::checkpoint::PostgresSaver::connect(&url)
                        .await
                        .expect("connect");
                    let db = super::Database::Postgres(saver.pool().clone());
                    super::$behaviour(&db).await;
                }
            )*
        }
    };
}

for_each_database!(
    steps_run_once_in_order_and_are_recorded,
    a_failing_step_leaves_nothing_behind,
    a_database_migrated_by_a_newer_build_is_refused,
);
