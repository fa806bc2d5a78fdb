//! The server's tables in PostgreSQL and their migrations.
//!
//! Everything lives in one schema (default `graphkit_server`, see
//! [`PostgresOptions::schema`](super::PostgresOptions::schema)): the server's tables, and
//! graphkit's checkpoint and store tables, which reach it through the pool's `search_path`.
//! A fresh schema is therefore a fresh server, which is how the tests isolate themselves.

use graphkit::sql::{Migration, Schema};

/// The server's schema history, run by graphkit's migration runner (component `server` in
/// `graphkit_migrations`, under the same advisory lock as graphkit's own components). Each
/// step runs once, in one transaction; a released step is never edited (a change is a new
/// step).
pub(crate) const SCHEMA: Schema = Schema {
    component: "server",
    upgrade: "graphkit-server",
    migrations: &[
        Migration {
            version: 1,
            description: "assistants, threads, runs (the queue), run events",
            sql: r#"
        CREATE TABLE server_assistants (
            assistant_id UUID PRIMARY KEY,
            graph_id     TEXT NOT NULL,
            config       JSONB NOT NULL,
            context      JSONB NOT NULL,
            metadata     JSONB NOT NULL,
            name         TEXT NOT NULL,
            description  TEXT,
            version      BIGINT NOT NULL,
            created_at   TIMESTAMPTZ NOT NULL,
            updated_at   TIMESTAMPTZ NOT NULL
        );
        CREATE TABLE server_threads (
            thread_id        UUID PRIMARY KEY,
            metadata         JSONB NOT NULL,
            status           TEXT NOT NULL,
            config           JSONB NOT NULL,
            -- JSON as text: JSONB refuses strings holding U+0000, and a run must never
            -- fail to finish because of what its state holds.
            values_json      TEXT,
            interrupts_json  TEXT,
            error_json       TEXT,
            created_at       TIMESTAMPTZ NOT NULL,
            updated_at       TIMESTAMPTZ NOT NULL,
            state_updated_at TIMESTAMPTZ NOT NULL
        );
        CREATE INDEX server_threads_metadata ON server_threads USING GIN (metadata jsonb_path_ops);
        -- The queue: a run is claimable while `pending`; `running` rows carry the worker
        -- that holds them and the lease it must keep renewing.
        CREATE TABLE server_runs (
            run_id             UUID PRIMARY KEY,
            thread_id          UUID NOT NULL,
            assistant_id       UUID NOT NULL,
            status             TEXT NOT NULL,
            metadata           JSONB NOT NULL,
            kwargs             JSONB NOT NULL,
            multitask_strategy TEXT NOT NULL,
            attempt            INTEGER NOT NULL DEFAULT 0,
            worker_id          TEXT,
            lease_until        TIMESTAMPTZ,
            cancel_requested   TEXT,
            cancel_reason      TEXT,
            last_seq           BIGINT NOT NULL DEFAULT 0,
            created_at         TIMESTAMPTZ NOT NULL,
            updated_at         TIMESTAMPTZ NOT NULL,
            started_at         TIMESTAMPTZ,
            ended_at           TIMESTAMPTZ
        );
        -- One running run per thread, enforced by the database: a second claimer's UPDATE
        -- fails with a unique violation and it moves on to another run.
        CREATE UNIQUE INDEX server_runs_one_running ON server_runs (thread_id) WHERE status = 'running';
        CREATE INDEX server_runs_pending ON server_runs (created_at) WHERE status = 'pending';
        CREATE INDEX server_runs_lease ON server_runs (lease_until) WHERE status = 'running';
        CREATE INDEX server_runs_thread ON server_runs (thread_id, created_at);
        -- Stream events; `seq` (1, 2, 3, ... per run, handed out by `server_runs.last_seq`)
        -- is the SSE id and the `Last-Event-ID` of a replay.
        CREATE TABLE server_run_events (
            run_id     UUID NOT NULL,
            seq        BIGINT NOT NULL,
            event      TEXT NOT NULL,
            data       TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (run_id, seq)
        );
    "#,
        },
        Migration {
            version: 2,
            description: "a run's due time (after_seconds) apart from its creation time",
            // Until now `created_at` held the due time; it stays that for older runs.
            sql: r#"
        ALTER TABLE server_runs ADD COLUMN due_at TIMESTAMPTZ;
        UPDATE server_runs SET due_at = created_at;
        ALTER TABLE server_runs ALTER COLUMN due_at SET NOT NULL;
        DROP INDEX server_runs_pending;
        CREATE INDEX server_runs_pending ON server_runs (due_at) WHERE status = 'pending';
    "#,
        },
        Migration {
            version: 3,
            description: "a lease token per claim, which fences the writes of a worker that lost the run",
            // Runs running at the upgrade have no token: their workers (of the old version)
            // are gone, and the sweeper returns the runs to the queue when their leases end.
            sql: r#"
        ALTER TABLE server_runs ADD COLUMN lease_token UUID;
    "#,
        },
        Migration {
            version: 4,
            description: "assistant versions",
            // Every assistant so far is at the version its row holds; that is its one version.
            sql: r#"
        CREATE TABLE server_assistant_versions (
            assistant_id UUID NOT NULL,
            version      BIGINT NOT NULL,
            graph_id     TEXT NOT NULL,
            config       JSONB NOT NULL,
            context      JSONB NOT NULL,
            metadata     JSONB NOT NULL,
            name         TEXT NOT NULL,
            description  TEXT,
            created_at   TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (assistant_id, version)
        );
        INSERT INTO server_assistant_versions (assistant_id, version, graph_id, config, context,
            metadata, name, description, created_at)
            SELECT assistant_id, version, graph_id, config, context, metadata, name, description, updated_at
            FROM server_assistants;
    "#,
        },
        Migration {
            version: 5,
            description: "crons; expiry times (ttl) of threads and store items",
            // Times of these columns are microseconds since the epoch (`*_us`), as the
            // server's records hold them.
            sql: r#"
        CREATE TABLE server_crons (
            cron_id          UUID PRIMARY KEY,
            assistant_id     UUID NOT NULL,
            thread_id        UUID,
            schedule         TEXT NOT NULL,
            timezone         TEXT,
            end_time_us      BIGINT,
            payload          JSONB NOT NULL,
            run_template     JSONB NOT NULL,
            on_run_completed TEXT,
            enabled          BOOLEAN NOT NULL,
            next_run_us      BIGINT,
            metadata         JSONB NOT NULL,
            created_us       BIGINT NOT NULL,
            updated_us       BIGINT NOT NULL
        );
        CREATE INDEX server_crons_due ON server_crons (next_run_us) WHERE enabled;
        ALTER TABLE server_threads ADD COLUMN ttl_minutes DOUBLE PRECISION;
        ALTER TABLE server_threads ADD COLUMN expires_us BIGINT;
        CREATE INDEX server_threads_expiry ON server_threads (expires_us) WHERE expires_us IS NOT NULL;
        CREATE TABLE server_store_ttl (
            namespace   TEXT NOT NULL,
            key         TEXT NOT NULL,
            ttl_minutes DOUBLE PRECISION NOT NULL,
            expires_us  BIGINT NOT NULL,
            PRIMARY KEY (namespace, key)
        );
        CREATE INDEX server_store_ttl_expiry ON server_store_ttl (expires_us);
    "#,
        },
    ],
};
