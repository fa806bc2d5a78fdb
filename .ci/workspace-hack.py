#!/usr/bin/env python3
"""Keeps the README's two commands (and each crate built alone) on one build.

Cargo turns on a dependency's features per invocation: `cargo run -p graphkit-examples`
compiles tokio, hyper, libc, ... with the features graphkit-examples asks for, while
`cargo test --workspace` compiles them with what every member and its dev-dependencies ask
for; each difference recompiles that crate and everything above it. Every member depends on
`graphkit-workspace-hack`, whose manifest turns on, for each such crate, the features it has
in `cargo test --workspace`.

    .ci/workspace-hack.py           # rewrites workspace-hack/Cargo.toml
    .ci/workspace-hack.py --check   # exits 1 if it is out of date, or if the main job
                                    # (graphkit-examples' binaries) still gets other features
                                    # than the tests for some crate (listed)

A feature outside the workspace build (`--features postgres`) still compiles what only it
needs (sqlx's PostgreSQL driver), and the members above it, once per such build.
"""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "workspace-hack" / "Cargo.toml"
HACK = "graphkit-workspace-hack"

HEADER = """[package]
name = "graphkit-workspace-hack"
description = "No code: every member depends on it so that a dependency gets the same features whichever member is built (written by .ci/workspace-hack.py)."
version.workspace = true
edition.workspace = true
rust-version.workspace = true
license.workspace = true
repository.workspace = true
publish = false

# Written by `.ci/workspace-hack.py`; do not edit by hand. Each line: a crate that some
# member's own build (`cargo test -p <member>`, `cargo run -p graphkit-examples`) would
# otherwise compile with fewer features than `cargo test --workspace` does.
[dependencies]
"""


def cargo(*args):
    return subprocess.run(["cargo", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def features(*selection):
    """{(name, version): frozenset(features)} for every non-member crate in the build."""
    seen = {}
    out = cargo("tree", *selection, "--prefix", "none", "--format", "{p}|{f}")
    for line in out.splitlines():
        package, _, feats = line.removesuffix(" (*)").partition("|")
        parts = package.split(" ")
        if len(parts) < 2 or "(/" in package:  # a blank line, or a member: "name vX (/path)"
            continue
        name, version = parts[0], parts[1].lstrip("v")
        seen.setdefault((name, version), set()).add(frozenset(f for f in feats.split(",") if f))
    return seen


def wanted():
    meta = json.loads(cargo("metadata", "--format-version", "1", "--no-deps"))
    workspace = features("--workspace")
    needed = {}
    # Each member alone, and with each of its optional features alone (as `.ci/features`
    # builds them): a dependency those builds share with the workspace's is compiled once.
    # A pin is a dependency of every member, so one that only a feature's build needs is
    # left out: it would join the main job's build.
    main_job = features("-p", "graphkit-examples", "--edges", "normal,build")
    members = [("-p", p["name"]) for p in meta["packages"] if p["name"] != HACK]
    with_feature = [
        ("-p", p["name"], "--no-default-features", "--features", f)
        for p in meta["packages"]
        if p["name"] != HACK
        for f in p["features"]
        if f != "default"
    ]
    selections = [
        (selection, True)
        for selection in members + [(*s, "--edges", "normal,build") for s in members]
    ] + [
        (selection, False)
        for selection in with_feature + [(*s, "--edges", "normal,build") for s in with_feature]
    ]
    for selection, default in selections:
        for key, sets in features(*selection).items():
            full = workspace.get(key)
            if full is None or (not default and key not in main_job):
                continue
            union = frozenset().union(*full)
            if any(s != union for s in sets):
                needed[key] = union
    return needed


def render(needed):
    meta = json.loads(cargo("metadata", "--format-version", "1"))
    declared = {(p["name"], p["version"]): set(p["features"]) for p in meta["packages"]}
    names = {}
    for name, version in needed:
        names.setdefault(name, []).append(version)
    lines = []
    for (name, version), feats in sorted(needed.items()):
        valid = sorted(f for f in feats if f in declared.get((name, version), set()) and f != "default")
        key = name if len(names[name]) == 1 else f"{name}-{version.replace('.', '_')}"
        spec = [f'version = "={version}"']
        if key != name:
            spec.insert(0, f'package = "{name}"')
        if "default" not in feats and "default" in declared.get((name, version), set()):
            spec.append("default-features = false")
        if valid:
            spec.append("features = [" + ", ".join(f'"{f}"' for f in valid) + "]")
        lines.append(f"{key} = {{ {', '.join(spec)} }}")
    return HEADER + "\n".join(lines) + "\n\n[lints]\nworkspace = true\n"


def main_job_drift():
    """The crates `cargo run -p graphkit-examples` would compile with other features than
    `cargo test --workspace` does, with the pins in place: each would be compiled twice."""
    main_job = features("-p", "graphkit-examples", "--edges", "normal,build")
    tests = features("--workspace")
    return sorted(
        f"{name} {version}: main job {sorted(s)}, tests {[sorted(t) for t in tests.get((name, version), [])]}"
        for (name, version), sets in main_job.items()
        for s in sets
        if s not in tests.get((name, version), set())
    )


def main():
    # The features to pin are those the members ask for by themselves: measure without the pins.
    current = MANIFEST.read_text()
    MANIFEST.write_text(HEADER + "\n[lints]\nworkspace = true\n")
    try:
        text = render(wanted())
    finally:
        MANIFEST.write_text(current)
    if "--check" in sys.argv:
        if MANIFEST.read_text() != text:
            print("workspace-hack/Cargo.toml is out of date: run .ci/workspace-hack.py", file=sys.stderr)
            sys.exit(1)
        drift = main_job_drift()
        if drift:
            print("the main job would compile these crates with other features than the tests:", file=sys.stderr)
            print("\n".join(drift), file=sys.stderr)
            sys.exit(1)
        print("workspace-hack: up to date; the main job's crates have the tests' features")
        return
    MANIFEST.write_text(text)
    print(f"workspace-hack: {MANIFEST.relative_to(ROOT)} written")


if __name__ == "__main__":
    main()
