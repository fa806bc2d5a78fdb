//! The workload suite runner (WORKLOADS.md §9–§11).
//!
//! ```text
//! cargo run --release -p graphkit-benches --bin workloads -- [--only PATTERN] [--passes N]
//!     [--runtime multi|current] [--list]
//! ```
//!
//! Prints one JSON line per case on stdout (progress goes to stderr) and exits non-zero if
//! any case failed or missed its checksum.

use std::process::ExitCode;

use graphkit_benches::case::AsyncRuntime;
use graphkit_benches::{BenchError, harness, suite};

const USAGE: &str =
    "usage: workloads [--only PATTERN] [--passes N] [--runtime multi|current] [--list]
  --only PATTERN   run the cases whose name contains PATTERN (or matches it as a * glob);
                   several patterns separated by commas
  --passes N       interleaved passes (default 3)
  --runtime R      tokio runtime of async cases: multi (default: multi-thread, one worker per
                   CPU) or current (current-thread)
  --list           print the case names and exit";

struct Options {
    only: Option<String>,
    passes: usize,
    runtime: AsyncRuntime,
    list: bool,
    child: Option<String>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, BenchError> {
    let mut options = Options {
        only: None,
        passes: 3,
        runtime: AsyncRuntime::MultiThread,
        list: false,
        child: None,
    };
    let usage = |message: String| BenchError::Usage(format!("{message}\n{USAGE}"));
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| usage(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--only" => options.only = Some(value("--only")?),
            "--passes" => {
                let text = value("--passes")?;
                options.passes = text
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| usage(format!("bad --passes `{text}`")))?;
            }
            "--runtime" => {
                let text = value("--runtime")?;
                options.runtime = AsyncRuntime::parse(&text)
                    .ok_or_else(|| usage(format!("bad --runtime `{text}`")))?;
            }
            "--list" => options.list = true,
            "--child" => options.child = Some(value("--child")?),
            "-h" | "--help" => return Err(BenchError::Usage(USAGE.to_owned())),
            other => return Err(usage(format!("unknown argument `{other}`"))),
        }
    }
    Ok(options)
}

fn run() -> Result<ExitCode, BenchError> {
    let options = parse(std::env::args().skip(1))?;
    let cases = suite::cases();
    if let Some(name) = options.child {
        let case = cases
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| BenchError::Usage(format!("no case named `{name}`")))?;
        let report = harness::run_child(case)?;
        println!(
            "{}",
            serde_json::to_string(&report).map_err(std::io::Error::other)?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let selected: Vec<_> = cases
        .into_iter()
        .filter(|c| {
            options
                .only
                .as_deref()
                .is_none_or(|p| suite::matches(p, &c.name))
        })
        .collect();
    if options.list {
        for case in &selected {
            println!("{}", case.name);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if selected.is_empty() {
        return Err(BenchError::Usage("no case matches --only".to_owned()));
    }
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; time the suite with --release");
    }
    let bad = harness::run_suite(
        &selected,
        options.passes,
        options.runtime,
        &mut std::io::stdout().lock(),
    )?;
    if bad > 0 {
        eprintln!("{bad} case(s) failed or missed their checksum");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    // RUST_LOG picks what is logged (for example RUST_LOG=graphkit=debug); off by default.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    match run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{error}");
            ExitCode::from(2)
        }
    }
}
