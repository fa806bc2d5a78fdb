//! The official LangGraph clients against graphkit-server: `langgraph-sdk` (Python 0.4.x) runs
//! `clients/python/check.py` and `clients/python/thread_stream.py`, `@langchain/langgraph-sdk`
//! (JS 2.0.x) runs `clients/js/check.mjs`, and `@langchain/langgraph-sdk` 1.15.x (the JS
//! release with the thread streaming protocol; 2.0.0 was published before it and has none)
//! runs `clients/js/thread_stream.mjs`, each against a server process serving the demo graph
//! `agent` (and `researcher`), on SQLite and (with the feature `postgres` and
//! `GRAPHKIT_TEST_POSTGRES_URL`) on PostgreSQL.
//!
//! The clients come from the package registries, so `.ci/run` installs them into `target/`
//! and exports `GRAPHKIT_SDK_PYTHON` (the venv's python), `GRAPHKIT_SDK_JS` and
//! `GRAPHKIT_SDK_JS_STREAM` (the `node_modules` folders). Without those variables the tests
//! print why they skip.

use std::path::Path;
use std::process::Command;

use graphkit_tests::ServerProcess;
#[cfg(feature = "postgres")]
use graphkit_tests::{drop_schema, fresh_schema, postgres_args, postgres_url};

/// The server binary with the demo graph `agent`.
const SERVER: &str = env!("CARGO_BIN_EXE_graphkit-test-server");

/// One client script: the interpreter from `variable` and the script under `clients/`.
struct Client {
    variable: &'static str,
    script: &'static str,
}

const PYTHON: Client = Client {
    variable: "GRAPHKIT_SDK_PYTHON",
    script: "clients/python/check.py",
};

/// The thread-centric streaming protocol (`client.threads.stream(...)`) with the Python SDK.
const PYTHON_THREAD_STREAM: Client = Client {
    variable: "GRAPHKIT_SDK_PYTHON",
    script: "clients/python/thread_stream.py",
};

const JS: Client = Client {
    variable: "GRAPHKIT_SDK_JS",
    script: "clients/js/check.mjs",
};

/// The thread-centric streaming protocol (`client.threads.stream(...)`) with the JS SDK.
const JS_THREAD_STREAM: Client = Client {
    variable: "GRAPHKIT_SDK_JS_STREAM",
    script: "clients/js/thread_stream.mjs",
};

impl Client {
    /// The configured SDK location, or `None` after printing why the test is skipped.
    fn configured(&self, test: &str) -> Option<String> {
        match std::env::var(self.variable) {
            Ok(value) if !value.is_empty() => Some(value),
            _ => {
                eprintln!(
                    "SKIPPED {test}: set {} (bash .ci/run installs the SDK into target/ and sets it)",
                    self.variable
                );
                None
            }
        }
    }

    /// Runs the script against `base` and fails the test with its output unless it exits 0.
    fn run_against(&self, sdk: &str, base: &str) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(self.script);
        let mut command = if self.variable.starts_with("GRAPHKIT_SDK_JS") {
            let mut node = Command::new("node");
            node.env(self.variable, sdk);
            node
        } else {
            Command::new(sdk)
        };
        // The SDKs send `x-api-key` from these when set; the test server has no key.
        for key in [
            "LANGGRAPH_API_KEY",
            "LANGSMITH_API_KEY",
            "LANGCHAIN_API_KEY",
        ] {
            command.env_remove(key);
        }
        let output = command
            .arg(&script)
            .arg(base)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {} with {sdk}: {e}", script.display()));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        println!("{stdout}");
        assert!(
            output.status.success(),
            "{} failed ({}):\n{stdout}\n{stderr}",
            self.script,
            output.status
        );
        assert!(
            stdout.contains("checks passed"),
            "{} exited 0 without reporting its checks:\n{stdout}",
            self.script
        );
    }

    fn check_on_sqlite(&self, test: &str) {
        let Some(sdk) = self.configured(test) else {
            return;
        };
        let dir = tempfile::tempdir().expect("a temporary directory");
        let database = dir.path().join("server.db").display().to_string();
        let server = ServerProcess::start(SERVER, &["--database", &database]);
        self.run_against(&sdk, &server.base);
    }

    #[cfg(feature = "postgres")]
    fn check_on_postgres(&self, test: &str) {
        let Some(sdk) = self.configured(test) else {
            return;
        };
        let Some(url) = postgres_url(test) else {
            return;
        };
        let schema = fresh_schema(test);
        let server = ServerProcess::start(SERVER, &postgres_args(&url, &schema));
        self.run_against(&sdk, &server.base);
        drop(server);
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
            .block_on(drop_schema(&url, &schema));
    }
}

#[test]
fn python_sdk_client_checks_pass_on_sqlite() {
    PYTHON.check_on_sqlite("python_sdk_client_checks_pass_on_sqlite");
}

#[test]
fn python_sdk_thread_stream_runs_pauses_and_resumes_on_sqlite() {
    PYTHON_THREAD_STREAM
        .check_on_sqlite("python_sdk_thread_stream_runs_pauses_and_resumes_on_sqlite");
}

#[cfg(feature = "postgres")]
#[test]
fn python_sdk_thread_stream_runs_pauses_and_resumes_on_postgres() {
    PYTHON_THREAD_STREAM
        .check_on_postgres("python_sdk_thread_stream_runs_pauses_and_resumes_on_postgres");
}

#[test]
fn js_sdk_client_checks_pass_on_sqlite() {
    JS.check_on_sqlite("js_sdk_client_checks_pass_on_sqlite");
}

#[test]
fn js_sdk_thread_stream_sees_tools_subgraphs_and_pauses_on_sqlite() {
    JS_THREAD_STREAM
        .check_on_sqlite("js_sdk_thread_stream_sees_tools_subgraphs_and_pauses_on_sqlite");
}

#[cfg(feature = "postgres")]
#[test]
fn js_sdk_thread_stream_sees_tools_subgraphs_and_pauses_on_postgres() {
    JS_THREAD_STREAM
        .check_on_postgres("js_sdk_thread_stream_sees_tools_subgraphs_and_pauses_on_postgres");
}

#[cfg(feature = "postgres")]
#[test]
fn python_sdk_client_checks_pass_on_postgres() {
    PYTHON.check_on_postgres("python_sdk_client_checks_pass_on_postgres");
}

#[cfg(feature = "postgres")]
#[test]
fn js_sdk_client_checks_pass_on_postgres() {
    JS.check_on_postgres("js_sdk_client_checks_pass_on_postgres");
}
