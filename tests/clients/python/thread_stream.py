"""The thread-centric streaming protocol with the official Python SDK (`langgraph-sdk` 0.4.x):
`client.threads.stream(...)` against graphkit-server's demo graph `agent` (see check.py for
the graph).

Usage: python thread_stream.py URL   (or GRAPHKIT_SERVER_URL=URL python thread_stream.py)

Over each transport (SSE, then WebSocket): a run started with `thread.run.start` streams
lifecycle, values and updates, pauses on the `human` node's interrupt (seen as
`input.requested`, and as `thread.interrupted` / `thread.interrupts` by the SDK's lifecycle
watcher), is answered with `thread.run.respond` (`input.respond`), and finishes;
`thread.output` is the final state. A wrong interrupt id is refused with
`no_such_interrupt`. Over a raw WebSocket: the connection-bound commands (subscribe,
`agent.getTree`, unsubscribe) and their errors.

Every check prints one line; the script stops at the first failure and exits 1.
"""

import asyncio
import json
import os
import sys
import traceback

import httpx
import websockets
from langgraph_sdk import get_client

from client_checks import DEADLINE_SECONDS, CheckFailed, expect, user


def method(event):
    return event.get("method")


def lifecycle_of(event):
    if method(event) != "lifecycle":
        return None
    return ((event.get("params") or {}).get("data") or {}).get("event")


async def read_until(events, seen, stop):
    """Appends events to `seen` until `stop(event)` holds; returns that event."""

    async def read():
        async for event in events:
            # Over a WebSocket the answer to the transport's own subscribe command comes on
            # the same connection; the SDK's fanout skips it, and so does this reader.
            if event.get("type") != "event":
                continue
            seen.append(event)
            if stop(event):
                return event
        raise CheckFailed(f"the event stream ended early after {[method(e) for e in seen]}")

    try:
        return await asyncio.wait_for(read(), DEADLINE_SECONDS)
    except asyncio.TimeoutError:
        raise CheckFailed(
            f"no matching event within {DEADLINE_SECONDS}s; saw {[method(e) for e in seen]}"
        ) from None


async def until(condition, what):
    """Waits for `condition()` (state the SDK's own watcher sets); fails after the deadline."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + DEADLINE_SECONDS
    while not condition():
        expect(loop.time() < give_up, f"{what} did not happen within {DEADLINE_SECONDS}s")
        await asyncio.sleep(0.05)


async def a_run_streams_pauses_and_resumes(client, transport):
    async with client.threads.stream(assistant_id="agent", transport=transport) as thread:
        started = await thread.run.start(input=user("hi", ask_human=True))
        run_id = started.get("run_id")
        expect(isinstance(run_id, str) and run_id, f"run.start gave no run_id: {started!r}")
        print(f"ok python thread_stream {transport} run.start gave run {run_id}", flush=True)

        events = thread.events
        seen = []
        requested = await read_until(events, seen, lambda e: method(e) == "input.requested")
        expect(
            lifecycle_of(seen[0]) == "running",
            f"the run should open with lifecycle running, got {seen[0]!r}",
        )
        nodes = [e["params"].get("node") for e in seen if method(e) == "updates"]
        expect(nodes == ["respond"], f"updates before the pause should be respond's: {nodes}")
        values = [e["params"]["data"] for e in seen if method(e) == "values"]
        expect(values, "no values event before the pause")
        last = [(m["role"], m["content"]) for m in values[-1]["messages"]]
        expect(
            last == [("user", "hi"), ("assistant", "echo: hi")],
            f"values before the pause: {last}",
        )
        data = requested["params"]["data"]
        expect(
            data.get("payload") == {"question": "approve?"} and isinstance(data.get("interrupt_id"), str),
            f"input.requested should carry the interrupt: {data!r}",
        )
        seqs = [e["seq"] for e in seen]
        expect(seqs == sorted(set(seqs)), f"seq should rise: {seqs}")
        print(f"ok python thread_stream {transport} lifecycle, values, updates and input.requested", flush=True)

        await until(lambda: thread.interrupted, "thread.interrupted")
        expect(
            [i["interrupt_id"] for i in thread.interrupts] == [data["interrupt_id"]],
            f"thread.interrupts: {thread.interrupts!r}",
        )
        try:
            await thread._send_command(
                "input.respond", {"interrupt_id": "nope", "namespace": [], "response": "no"}
            )
            raise CheckFailed("input.respond with an unknown interrupt id was accepted")
        except RuntimeError as err:
            expect("no_such_interrupt" in str(err), f"unexpected refusal: {err}")
        print(f"ok python thread_stream {transport} an unknown interrupt id is no_such_interrupt", flush=True)

        answered = await thread.run.respond("yes")
        expect(answered == {}, f"input.respond result: {answered!r}")
        await read_until(events, seen, lambda e: lifecycle_of(e) == "completed")
        after = seen[seen.index(requested) + 1 :]
        phases = [lifecycle_of(e) for e in after if lifecycle_of(e)]
        expect(
            phases == ["interrupted", "running", "completed"],
            f"lifecycle after the pause: {phases}",
        )
        nodes = [e["params"].get("node") for e in after if method(e) == "updates"]
        expect(nodes == ["human"], f"updates after the answer: {nodes}")
        print(f"ok python thread_stream {transport} input.respond resumed the run to completed", flush=True)

        output = await asyncio.wait_for(thread.output, DEADLINE_SECONDS)
        got = [(m["role"], m["content"]) for m in output["messages"]]
        expect(
            got == [("user", "hi"), ("assistant", "echo: hi"), ("human", "yes")],
            f"thread.output: {got}",
        )
        expect(not thread.interrupted, "the finished run left thread.interrupted set")
        print(f"ok python thread_stream {transport} thread.output is the final state", flush=True)


async def a_run_streams_pauses_and_resumes_over_sse(client):
    await a_run_streams_pauses_and_resumes(client, "sse")


async def a_run_streams_pauses_and_resumes_over_websocket(client):
    await a_run_streams_pauses_and_resumes(client, "websocket")


async def a_websocket_session_answers_its_own_commands(client):
    """The WebSocket's connection-bound commands, over a raw socket (the `websockets`
    package the SDK depends on): subscribe, agent.getTree, unsubscribe, and the errors."""
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "agent", input=user("tree"))
    base = str(client.http.client.base_url).rstrip("/")
    url = base.replace("http://", "ws://", 1) + f"/threads/{thread_id}/stream/events"

    async with websockets.connect(url) as socket:

        async def ask(command):
            await socket.send(command if isinstance(command, str) else json.dumps(command))
            wanted = command.get("id") if isinstance(command, dict) else None
            while True:
                frame = json.loads(
                    await asyncio.wait_for(socket.recv(), DEADLINE_SECONDS)
                )
                if frame.get("type") in ("success", "error") and frame.get("id") == wanted:
                    return frame

        subscribed = await ask({"id": 1, "method": "subscription.subscribe", "params": {"channels": ["lifecycle"]}})
        expect(subscribed["type"] == "success", f"subscribe: {subscribed!r}")
        subscription = subscribed["result"]["subscription_id"]
        # The finished run's lifecycle, replayed to the subscription.
        while True:
            frame = json.loads(await asyncio.wait_for(socket.recv(), DEADLINE_SECONDS))
            if frame.get("method") == "lifecycle" and frame["params"]["data"]["event"] == "completed":
                break
        tree = await ask({"id": 2, "method": "agent.getTree", "params": {}})
        expect(
            tree.get("result") == {"tree": {"namespace": [], "status": "completed", "graph_name": "agent"}},
            f"agent.getTree: {tree!r}",
        )
        gone = await ask({"id": 3, "method": "subscription.unsubscribe", "params": {"subscription_id": subscription}})
        expect(gone["type"] == "success" and gone["result"] == {}, f"unsubscribe: {gone!r}")
        again = await ask({"id": 4, "method": "subscription.unsubscribe", "params": {"subscription_id": subscription}})
        expect(again.get("error") == "no_such_subscription", f"a second unsubscribe: {again!r}")
        unknown = await ask({"id": 5, "method": "state.get", "params": {}})
        expect(unknown.get("error") == "unknown_command", f"an unknown command: {unknown!r}")
    print("ok python thread_stream websocket subscribe, agent.getTree, unsubscribe and errors", flush=True)


CHECKS = [
    a_run_streams_pauses_and_resumes_over_sse,
    a_run_streams_pauses_and_resumes_over_websocket,
    a_websocket_session_answers_its_own_commands,
]


async def main():
    url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("GRAPHKIT_SERVER_URL")
    if not url:
        print("usage: thread_stream.py URL (or set GRAPHKIT_SERVER_URL)", file=sys.stderr)
        return 2
    client = get_client(url=url, api_key=None, timeout=httpx.Timeout(120.0))
    for fn in CHECKS:
        try:
            await fn(client)
        except CheckFailed as err:
            print(f"FAIL python {fn.__name__}: {err}", flush=True)
            return 1
        except Exception:
            print(f"FAIL python {fn.__name__}: unexpected error", flush=True)
            traceback.print_exc()
            return 1
    print(f"all {len(CHECKS)} python thread_stream checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
