#!/usr/bin/env bash
# graphkit-server side by side with the reference Agent Server (`langgraph dev`, its in-memory
# runtime) on this machine, in one window: the same graph (graphkit-server's demo `agent` and
# its Python twin in benches/server-vs-langgraph/), the same load client (the Rust bench
# graphkit-server/benches/server.rs, which costs far less CPU than either server), rounds
# alternating between the servers. Prints one JSON line per measurement; docs/benchmarks.md
# ("graphkit-server against langgraph dev") has the figures and how to read them.
#
#   benches/server-vs-langgraph.sh [ROUNDS] [RUNS]     (default 2 rounds of 400 runs)
#
# Needs Python 3 and the package registry the first time (the reference is installed into
# $GRAPHKIT_LANGGRAPH_VENV, default ~/.cache/graphkit/langgraph-ref); PostgreSQL from
# GRAPHKIT_TEST_POSTGRES_URL for the PostgreSQL lines (skipped without it).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-2}"
runs="${2:-400}"
clients="${GRAPHKIT_BENCH_CLIENTS:-8}"
venv="${GRAPHKIT_LANGGRAPH_VENV:-$HOME/.cache/graphkit/langgraph-ref}"
if ! "$venv/bin/python" -c 'import langgraph_api, langgraph_cli' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    'langgraph-cli[inmem]==0.4.40' 'langgraph-api==0.16.7' 'langgraph==1.2.24'
fi

bench() {
  cargo bench -q -p graphkit-server --features postgres --bench server -- \
    --clients "$clients" --runs "$runs" "$@"
}
cargo bench -q -p graphkit-server --features postgres --bench server --no-run

# The reference: in memory, no reload, no browser, no telemetry (this machine has no network),
# 10 concurrent runs as graphkit-server's default of 10 workers per process.
port="${GRAPHKIT_LANGGRAPH_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
log="$(mktemp)"
(
  cd benches/server-vs-langgraph
  LANGGRAPH_CLI_NO_ANALYTICS=1 LANGSMITH_TRACING=false LANGCHAIN_TRACING_V2=false \
    exec "$venv/bin/langgraph" dev --no-browser --no-reload --host 127.0.0.1 --port "$port" \
      --n-jobs-per-worker 10
) >"$log" 2>&1 &
reference=$!
trap 'kill "$reference" 2>/dev/null || true; wait "$reference" 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do
  curl -sf "http://127.0.0.1:$port/ok" >/dev/null 2>&1 && break
  kill -0 "$reference" 2>/dev/null || { cat "$log" >&2; echo "langgraph dev exited" >&2; exit 1; }
  sleep 0.5
done
curl -sf "http://127.0.0.1:$port/ok" >/dev/null || { cat "$log" >&2; exit 1; }
# The process that listens (langgraph dev may run the server in a child).
listener="$(ss -ltnpH "sport = :$port" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)"
against=(--against "http://127.0.0.1:$port" --against-pid "${listener:-$reference}"
         --against-label "langgraph dev")

echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  echo "# round $round"
  bench --only sqlite,sqlite-stream
  bench --only against-wait,against-stream "${against[@]}"
  bench --only postgres-1,postgres-1-stream
done
bench --only big-message
bench --only against-big-message "${against[@]}"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
