#!/usr/bin/env bash
# graphkit's workload runner and its LangGraph twin (benches/langgraph/workloads.py) on this
# machine in one window: rounds alternate between the implementations, each round running
# every case by the WORKLOADS.md §9 protocol (fresh process per case and pass, interleaved
# passes). Prints every JSON line, then a table of LangGraph's median over graphkit's per
# case, wall and CPU time (on a loaded machine compare CPU time: WORKLOADS.md §9.6).
#
#   benches/langgraph/run.sh [ROUNDS] [PASSES]          (default 2 rounds of 3 passes)
#
# GRAPHKIT_BENCH_ONLY    cases (default 'reducer_*', the cases the twin implements)
# GRAPHKIT_BENCH_BIN     graphkit's runner (default: built here, target/release/workloads)
# GRAPHKIT_BENCH_BEFORE  another build of `workloads` (say, of main) to run in each round too,
#                        labelled `graphkit-before`
# GRAPHKIT_BENCH_OUT     file for the JSON lines (default: a temporary file)
# GRAPHKIT_LANGGRAPH_VENV  the reference's venv (default ~/.cache/graphkit/langgraph-ref,
#                        made with `langgraph==1.2.24` from the package registry if missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-2}"
passes="${2:-3}"
only="${GRAPHKIT_BENCH_ONLY:-reducer_*}"
before="${GRAPHKIT_BENCH_BEFORE:-}"
out="${GRAPHKIT_BENCH_OUT:-$(mktemp)}"
venv="${GRAPHKIT_LANGGRAPH_VENV:-$HOME/.cache/graphkit/langgraph-ref}"
if ! "$venv/bin/python" -c 'import langgraph' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'langgraph==1.2.24'
fi
after="${GRAPHKIT_BENCH_BIN:-}"
if [ -z "$after" ]; then
  cargo build -q --release -p graphkit-benches --bin workloads
  after="target/release/workloads"
fi
twin=("$venv/bin/python" benches/langgraph/workloads.py)

# Adds `"label": LABEL` to each JSON line (so two graphkit builds can be told apart).
label() { sed -u "s/^{/{\"label\": \"$1\", /"; }

: >"$out"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
for round in $(seq 1 "$rounds"); do
  echo "# round $round (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$out"
  if [ -n "$before" ]; then
    "$before" --only "$only" --passes "$passes" | label graphkit-before | tee -a "$out"
  fi
  "$after" --only "$only" --passes "$passes" | label graphkit | tee -a "$out"
  "${twin[@]}" --only "$only" --passes "$passes" | label langgraph | tee -a "$out"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
echo "# JSON lines in $out"
"${twin[@]}" --ratios "$out"
