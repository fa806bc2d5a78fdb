//! Records the compiler version for the `env` of result lines.

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map_or_else(|| "unknown".to_owned(), |v| v.trim().to_owned());
    println!("cargo:rustc-env=GRAPHKIT_BENCH_RUSTC={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
