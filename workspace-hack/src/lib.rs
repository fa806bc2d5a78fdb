//! No code. This crate exists for its `Cargo.toml`: the main job's package depends on it so
//! that the crates it compiles get the same features as in `cargo test --workspace`, and the
//! README's two commands share one build (see that manifest's comments and
//! `.ci/build-sharing`).
