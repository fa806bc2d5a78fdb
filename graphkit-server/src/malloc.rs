//! Giving freed memory back to the operating system: the `graphkit-server` binary runs with
//! glibc's malloc told to serve every block of [`MMAP_THRESHOLD`] bytes or more with its own
//! mapping (unmapped when freed), to trim the heap's free top beyond [`TRIM_THRESHOLD`], and
//! to ask for transparent huge pages on its mappings (`glibc.malloc.hugetlb=1`: a fresh
//! 9 MB block then costs a few page faults instead of 2,300, which had made the 9 MB
//! message take ~30 % more CPU; a no-op where the kernel's THP mode is `never`).
//!
//! Without it, glibc raises its mapping threshold to the size of the largest block freed
//! so far (up to 32 MiB): after one 9 MB message, the next copies of 9 MB come from the
//! heaps of the runtime's threads, and freed, they stay there (a server measured 17.8 MB
//! before such a message and 250 MB after, for good). The settings are glibc tunables,
//! read from the `GLIBC_TUNABLES` environment variable when a program starts, so the
//! binary re-executes itself once with the variable set ([`reexec_with_malloc_tunables`]);
//! `unsafe_code` is forbidden, which rules out calling `mallopt` or `malloc_trim`.
//! docs/benchmarks.md has the figures.

/// Blocks of this many bytes or more get a mapping of their own, returned when freed.
pub const MMAP_THRESHOLD: usize = 128 * 1024;

/// The heap's free top is given back beyond this many bytes.
pub const TRIM_THRESHOLD: usize = 128 * 1024;

/// The `GLIBC_TUNABLES` value the server runs with.
pub fn malloc_tunables() -> String {
    format!(
        "glibc.malloc.mmap_threshold={MMAP_THRESHOLD}:glibc.malloc.trim_threshold={TRIM_THRESHOLD}:glibc.malloc.hugetlb=1"
    )
}

/// Re-executes the running program with `GLIBC_TUNABLES` set to [`malloc_tunables`],
/// unless the variable is set already (then the settings it holds are kept; an empty
/// value runs with glibc's defaults). Call it first thing in `main`, before any thread is
/// started. It returns only when there is nothing to do (the variable is set, or the
/// target is not Linux with glibc) or when the re-execution failed, which is logged and
/// harmless: the program goes on with glibc's defaults.
pub fn reexec_with_malloc_tunables() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;

        if std::env::var_os("GLIBC_TUNABLES").is_some() {
            return;
        }
        let mut args = std::env::args_os();
        let program = match std::env::current_exe() {
            Ok(program) => program,
            Err(error) => {
                eprintln!(
                    "graphkit-server: freed memory may not go back to the system: the program's path is unknown ({error}); set GLIBC_TUNABLES={} to fix it",
                    malloc_tunables()
                );
                return;
            }
        };
        let mut command = std::process::Command::new(&program);
        if let Some(arg0) = args.next() {
            command.arg0(arg0);
        }
        // `exec` returns only on failure; on success this process image is replaced.
        let error = command
            .args(args)
            .env("GLIBC_TUNABLES", malloc_tunables())
            .exec();
        eprintln!(
            "graphkit-server: freed memory may not go back to the system: re-executing {} failed ({error}); set GLIBC_TUNABLES={} to fix it",
            program.display(),
            malloc_tunables()
        );
    }
}
