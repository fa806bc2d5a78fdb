"""LangGraph twin of graphkit's workload runner, for W6 `reducer` (WORKLOADS.md §6).

The same eight cases as `workloads --only 'reducer_*'`, built as WORKLOADS.md defines
them for LangGraph: `Annotated[list, operator.add]` for append, `Annotated[dict, lambda
l, r: {**l, **r}]` for merge, one `produce` node looping 100 times or 100 `Send`s in one
step; `sync` is `invoke`, `async` is `ainvoke` with `async def` nodes on one stock asyncio
loop. The timing protocol is §9: a fresh process per case and pass, 2 untimed warm-ups,
9 timed runs with the input built and `gc.collect()` run outside the timer, every run's
checksum checked, passes interleaved; one §11 JSON line per case on stdout.

    python workloads.py [--only PATTERN] [--passes N] [--list]
    python workloads.py --ratios FILE     # LangGraph / graphkit medians from JSON lines

Run it with the interpreter of a venv that has `langgraph` (benches/langgraph/run.sh
makes one and runs this beside graphkit's runner).
"""

import argparse
import asyncio
import fnmatch
import gc
import json
import operator
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from typing import Annotated, Any, Callable, TypedDict

N = 10_000  # items
B = 100  # items per batch
BATCHES = N // B
UNIQUE = {"append": 10_000, "merge": 5_000}
WARMUP = 2
RUNS = 9

# WORKLOADS.md §6: the same for both shapes and both modes.
EXPECTED = {
    "append": {"len": 10000, "sum_v": 49995000, "fnv": "732662ea849ad783"},
    "merge": {"len": 5000, "sum_v": 37497500, "fnv": "d665b5dea3ce0ea7"},
}


def fnv(text: str) -> str:
    """FNV-1a 64-bit over the UTF-8 bytes of `text`, as 16 lowercase hex digits."""
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


assert fnv("") == "cbf29ce484222325"
assert fnv("a") == "af63dc4c8601ec8c"
assert fnv("0,1,2") == "1c2c3ac2c828864a"


def append_checksum(state: dict) -> dict:
    log = state["log"]
    return {
        "len": len(log),
        "sum_v": sum(it["v"] for it in log),
        "fnv": fnv("\n".join(f"{it['id']}:{it['v']}" for it in log)),
    }


def merge_checksum(state: dict) -> dict:
    by_id = state["by_id"]
    # Sorted byte by byte: the ids are ASCII, so code point order is byte order.
    keys = sorted(by_id)
    return {
        "len": len(by_id),
        "sum_v": sum(it["v"] for it in by_id.values()),
        "fnv": fnv("\n".join(f"{k}:{by_id[k]['v']}" for k in keys)),
    }


# ---------------------------------------------------------------------------------------
# The graphs (imports of langgraph are deferred so `--ratios` and `--list` need no venv).


def merge_dicts(left: dict, right: dict) -> dict:
    """WORKLOADS.md's MergeByKey: a shallow, right-biased union."""
    return {**left, **right}


class Item(TypedDict):
    id: str
    v: int


class AppendState(TypedDict):
    batch: int
    log: Annotated[list[Item], operator.add]


class MergeState(TypedDict):
    batch: int
    by_id: Annotated[dict[str, Item], merge_dicts]


def build(reducer: str, shape: str, mode: str):
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    unique = UNIQUE[reducer]
    if reducer == "append":
        S = AppendState

        def update_of(b: int) -> dict:
            return {
                "log": [{"id": f"item-{n % unique}", "v": n} for n in range(b * B, (b + 1) * B)]
            }

    else:
        S = MergeState

        def update_of(b: int) -> dict:
            items = [{"id": f"item-{n % unique}", "v": n} for n in range(b * B, (b + 1) * B)]
            return {"by_id": {it["id"]: it for it in items}}

    graph = StateGraph(S)
    if shape == "loop":
        if mode == "sync":

            def produce(state: dict) -> dict:
                b = state["batch"]
                return {**update_of(b), "batch": b + 1}

        else:

            async def produce(state: dict) -> dict:
                b = state["batch"]
                return {**update_of(b), "batch": b + 1}

        graph.add_node("produce", produce)
        graph.add_edge(START, "produce")
        graph.add_conditional_edges(
            "produce",
            lambda state: "produce" if state["batch"] < BATCHES else END,
            ["produce", END],
        )
    else:
        if mode == "sync":

            def produce(packet: dict) -> dict:
                return update_of(packet["batch"])

        else:

            async def produce(packet: dict) -> dict:
                return update_of(packet["batch"])

        graph.add_node("produce", produce)
        graph.add_conditional_edges(
            START, lambda state: [Send("produce", {"batch": b}) for b in range(BATCHES)], ["produce"]
        )
        graph.add_edge("produce", END)
    return graph.compile()


class Case:
    def __init__(self, reducer: str, shape: str, mode: str):
        self.reducer, self.shape, self.mode = reducer, shape, mode
        self.name = f"reducer_{reducer}_{shape}_10k_{mode}"
        self.steps = BATCHES if shape == "loop" else 1

    def input(self) -> dict:
        field = "log" if self.reducer == "append" else "by_id"
        return {"batch": 0, field: [] if self.reducer == "append" else {}}

    def checksum(self, state: dict) -> dict:
        return (append_checksum if self.reducer == "append" else merge_checksum)(state)


CASES = [
    Case(reducer, shape, mode)
    for reducer in ("append", "merge")
    for shape in ("loop", "fanout")
    for mode in ("sync", "async")
]


# ---------------------------------------------------------------------------------------
# One case in this process (§9).


def rss_mb(key: str) -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    return 0.0


def run_child(case: Case) -> dict:
    load_1m = os.getloadavg()[0]
    graph = build(case.reducer, case.shape, case.mode)
    config = {"recursion_limit": 1_000_000}
    expected = EXPECTED[case.reducer]
    rss_base = rss_mb("VmRSS")
    wall: list[float] = []
    cpu: list[float] = []
    ok = True
    last: dict = {}

    def record(timed: bool, elapsed: float, cpu_elapsed: float, state: dict) -> None:
        nonlocal ok, last
        last = case.checksum(state)
        ok &= last == expected
        if timed:
            wall.append(elapsed)
            cpu.append(cpu_elapsed)

    if case.mode == "sync":
        for i in range(WARMUP + RUNS):
            data = case.input()
            gc.collect()
            c0, t0 = time.process_time(), time.perf_counter()
            state = graph.invoke(data, config)
            t1, c1 = time.perf_counter(), time.process_time()
            record(i >= WARMUP, t1 - t0, c1 - c0, state)
    else:

        async def main() -> None:
            for i in range(WARMUP + RUNS):
                data = case.input()
                gc.collect()
                c0, t0 = time.process_time(), time.perf_counter()
                state = await graph.ainvoke(data, config)
                t1, c1 = time.perf_counter(), time.process_time()
                record(i >= WARMUP, t1 - t0, c1 - c0, state)

        asyncio.run(main())
    return {
        "name": case.name,
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_base_mb": rss_base,
        "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6,
        "checksum": last,
        "checksum_ok": ok,
        "loadavg_1m": load_1m,
    }


# ---------------------------------------------------------------------------------------
# The suite: interleaved passes, one process per case and pass.


def quantile(values: list[float], q: float) -> float:
    """Linear interpolation between neighbours, as numpy's default and graphkit's runner."""
    if not values:
        return 0.0
    s = sorted(values)
    pos = q * (len(s) - 1)
    low, high = int(pos), min(int(pos) + 1, len(s) - 1)
    return s[low] + (s[high] - s[low]) * (pos - low)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def result_line(case: Case, reports: list[dict], passes: int) -> dict:
    from importlib.metadata import version

    samples = [w for r in reports for w in r["wall_s"]]
    cpu = [c for r in reports for c in r["cpu_s"]]
    median = quantile(samples, 0.5)
    return {
        "name": case.name,
        "impl": "langgraph",
        "workload": "reducer",
        "params": {"N": N, "B": B, "U": UNIQUE[case.reducer]},
        "mode": case.mode,
        "checkpointer": "none",
        "durability": None,
        "runs": len(samples),
        "warmup": WARMUP,
        "passes": passes,
        "median_s": median,
        "min_s": min(samples),
        "max_s": max(samples),
        "p25_s": quantile(samples, 0.25),
        "p75_s": quantile(samples, 0.75),
        "cpu_median_s": quantile(cpu, 0.5),
        "pass_medians_s": [quantile(r["wall_s"], 0.5) for r in reports],
        "steps": case.steps,
        "per_step_us": median * 1e6 / case.steps,
        "items": N,
        "item_unit": "item",
        "per_item_us": median * 1e6 / N,
        "rss_base_mb": quantile([r["rss_base_mb"] for r in reports], 0.5),
        "rss_peak_mb": max(r["rss_peak_mb"] for r in reports),
        "checksum": reports[-1]["checksum"],
        "checksum_ok": all(r["checksum_ok"] for r in reports),
        "env": {
            "cpu": cpu_model(),
            "nproc": os.cpu_count(),
            "loadavg": list(os.getloadavg()),
            "loadavg_1m_by_pass": [r["loadavg_1m"] for r in reports],
            "python": platform.python_version(),
            "langgraph": version("langgraph"),
            "runtime": "asyncio (stock loop)" if case.mode == "async" else "invoke (thread pool for >1 task)",
        },
    }


def matches(name: str, only: str | None) -> bool:
    if not only:
        return True
    for pattern in only.split(","):
        if "*" in pattern and fnmatch.fnmatchcase(name, pattern):
            return True
        if "*" not in pattern and pattern in name:
            return True
    return False


def spec_json(value: Any) -> str:
    """JSON in the spec's style (`", "` and `": "` in objects, as graphkit's runner)."""
    return json.dumps(value, separators=(", ", ": "))


def run_suite(cases: list[Case], passes: int) -> int:
    reports: dict[str, list[dict]] = {c.name: [] for c in cases}
    failed: set[str] = set()
    for p in range(1, passes + 1):
        print(f"pass {p}/{passes} (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
        for case in cases:
            if case.name in failed:
                continue
            out = subprocess.run(
                [sys.executable, __file__, "--child", case.name], capture_output=True, text=True
            )
            if out.returncode != 0 or not out.stdout.strip():
                print(f"  {case.name:<36} FAILED: {out.stderr.strip()}", file=sys.stderr)
                failed.add(case.name)
                continue
            report = json.loads(out.stdout.strip().splitlines()[-1])
            reports[case.name].append(report)
            flag = "" if report["checksum_ok"] else "  CHECKSUM MISMATCH"
            median_us = quantile(report["wall_s"], 0.5) * 1e6
            print(f"  {case.name:<36} median {median_us:>10.1f} µs{flag}", file=sys.stderr)
    bad = 0
    for case in cases:
        if case.name in failed or not reports[case.name]:
            bad += 1
            print(spec_json({"name": case.name, "impl": "langgraph", "error": "the case failed", "checksum_ok": False}))
            continue
        line = result_line(case, reports[case.name], passes)
        bad += not line["checksum_ok"]
        print(spec_json(line), flush=True)
    return bad


def ratios(path: str) -> None:
    """A Markdown table from the JSON lines in `path`: per case, the median over the runs
    of each implementation (its `label`, or `impl`) of its wall and CPU medians, and
    LangGraph's over graphkit's (how many times faster graphkit is)."""
    by_case: dict[str, dict[str, list[dict]]] = {}
    with open(path) as f:
        for text in f:
            if not text.startswith("{"):
                continue
            line = json.loads(text)
            if "median_s" in line:
                label = line.get("label", line["impl"])
                by_case.setdefault(line["name"], {}).setdefault(label, []).append(line)
    labels = sorted({label for sides in by_case.values() for label in sides} - {"langgraph"})
    cells = ["case", "LangGraph ms (wall / CPU)"]
    for label in labels:
        cells += [f"{label} ms (wall / CPU)", "× (wall / CPU)"]
    print("| " + " | ".join(cells) + " |")
    print("|---|" + "---:|" * (len(cells) - 1))

    def medians(lines: list[dict]) -> tuple[float, float]:
        return (
            statistics.median(l["median_s"] for l in lines),
            statistics.median(l["cpu_median_s"] for l in lines),
        )

    for name in sorted(by_case):
        sides = by_case[name]
        if "langgraph" not in sides:
            continue
        lg_wall, lg_cpu = medians(sides["langgraph"])
        cells = [f"`{name}`", f"{lg_wall * 1e3:.1f} / {lg_cpu * 1e3:.1f}"]
        for label in labels:
            if label not in sides:
                cells += ["—", "—"]
                continue
            wall, cpu = medians(sides[label])
            cells += [
                f"{wall * 1e3:.3f} / {cpu * 1e3:.3f}",
                f"{lg_wall / wall:.0f} / {lg_cpu / cpu:.0f}",
            ]
        print("| " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="substring or * glob; several separated by commas")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--ratios", metavar="FILE", help="compare the JSON lines in FILE")
    args = parser.parse_args()
    if args.ratios:
        ratios(args.ratios)
        return 0
    if args.child:
        case = next((c for c in CASES if c.name == args.child), None)
        if case is None:
            print(f"no case named `{args.child}`", file=sys.stderr)
            return 2
        print(json.dumps(run_child(case)))
        return 0
    cases = [c for c in CASES if matches(c.name, args.only)]
    if args.list:
        for case in cases:
            print(case.name)
        return 0
    if args.passes < 1:
        print("--passes must be at least 1", file=sys.stderr)
        return 2
    return 1 if run_suite(cases, args.passes) else 0


if __name__ == "__main__":
    sys.exit(main())
