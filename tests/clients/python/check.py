"""Client check for graphkit-server with the official Python SDK (`langgraph-sdk` 0.4.x).

Usage: python check.py URL   (or GRAPHKIT_SERVER_URL=URL python check.py)

The server must serve the demo graph `agent` (graphkit-server's binary does): state
`messages` (appended `{role, content}` items), `sleep` (seconds) and `ask_human` (bool);
`respond` sleeps, then appends `echo: <last user message>`; with `ask_human` the graph
goes on to `human`, which interrupts with `{"question": "approve?"}` and appends the
resume value as a `human` message.

Every check prints one line. The script stops at the first failure with a message that
names the check and what differed, and exits 1.
"""

import asyncio
import os
import sys
import time
import traceback
import uuid
from datetime import datetime, timezone

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.errors import (
    ConflictError,
    NotFoundError,
    UnprocessableEntityError,
)

from client_checks import DEADLINE_SECONDS, CheckFailed, expect, user

# The system assistant id the reference server gives a graph: uuid5 in this namespace.
ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
AGENT_ID = str(uuid.uuid5(ASSISTANT_NAMESPACE, "agent"))
# One marker per script run: other clients may share the server's database.
MARKER = uuid.uuid4().hex


def contents(values):
    expect(isinstance(values, dict), f"expected state values (an object), got {values!r}")
    messages = values.get("messages")
    expect(isinstance(messages, list), f"state has no `messages` list: {values!r}")
    return [(m.get("role"), m.get("content")) for m in messages]


async def wait_for_status(client, thread_id, run_id, wanted):
    """Polls the run until its status is in `wanted`; fails after DEADLINE_SECONDS."""
    give_up = time.monotonic() + DEADLINE_SECONDS
    while True:
        run = await client.runs.get(thread_id, run_id)
        if run["status"] in wanted:
            return run
        expect(
            time.monotonic() < give_up,
            f"run {run_id} stayed {run['status']!r}, expected one of {sorted(wanted)}",
        )
        await asyncio.sleep(0.05)


async def new_thread(client, **metadata):
    return (await client.threads.create(metadata={"check": MARKER, **metadata}))["thread_id"]


CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


@check
async def health(client):
    ok = await client.http.get("/ok")
    expect(ok == {"ok": True}, f"GET /ok gave {ok!r}")
    info = await client.http.get("/info")
    expect(isinstance(info, dict), f"GET /info gave {info!r}")


@check
async def assistants_search_and_get(client):
    found = await client.assistants.search(graph_id="agent")
    ids = [a["assistant_id"] for a in found]
    expect(AGENT_ID in ids, f"assistants.search(graph_id='agent') lacks {AGENT_ID}: {ids}")
    assistant = await client.assistants.get(AGENT_ID)
    expect(assistant["graph_id"] == "agent", f"graph_id is {assistant['graph_id']!r}")
    expect(
        assistant["metadata"].get("created_by") == "system",
        f"system assistant metadata is {assistant['metadata']!r}",
    )
    for key in ("config", "created_at", "updated_at", "version", "name"):
        expect(key in assistant, f"assistant lacks `{key}`: {assistant!r}")


@check
async def assistants_graph_and_schemas(client):
    graph = await client.assistants.get_graph(AGENT_ID)
    nodes = {n["id"] for n in graph["nodes"]}
    for node in ("__start__", "respond", "human", "__end__"):
        expect(node in nodes, f"graph nodes lack {node!r}: {sorted(nodes)}")
    edges = {(e["source"], e["target"]) for e in graph["edges"]}
    expect(("__start__", "respond") in edges, f"no edge __start__ -> respond: {edges}")
    expect(("respond", "human") in edges, f"no edge respond -> human: {edges}")
    schemas = await client.assistants.get_schemas(AGENT_ID)
    expect(schemas["graph_id"] == "agent", f"schemas graph_id is {schemas.get('graph_id')!r}")
    state_schema = schemas.get("state_schema")
    expect(isinstance(state_schema, dict), f"state_schema is {state_schema!r}")
    properties = state_schema.get("properties", {})
    for field in ("messages", "sleep", "ask_human"):
        expect(field in properties, f"state_schema lacks property {field!r}: {sorted(properties)}")


@check
async def assistants_create_update_versions_delete(client):
    created = await client.assistants.create(
        graph_id="agent",
        config={"configurable": {"tone": "dry"}},
        metadata={"check": MARKER},
        name="checked",
    )
    assistant_id = created["assistant_id"]
    expect(created["version"] == 1, f"a new assistant is at version {created['version']}")
    expect(created["name"] == "checked", f"name is {created['name']!r}")
    again = await client.assistants.create(
        graph_id="agent", assistant_id=assistant_id, if_exists="do_nothing", name="other"
    )
    expect(again["name"] == "checked", f"if_exists='do_nothing' gave {again!r}")
    try:
        await client.assistants.create(graph_id="agent", assistant_id=assistant_id)
        expect(False, "creating a taken assistant id did not raise")
    except ConflictError:
        pass
    found = await client.assistants.search(metadata={"check": MARKER})
    expect([a["assistant_id"] for a in found] == [assistant_id], f"search gave {found!r}")
    updated = await client.assistants.update(
        assistant_id, config={"configurable": {"tone": "warm"}}, metadata={"stage": "beta"}
    )
    expect(updated["version"] == 2, f"an update gave version {updated['version']}")
    expect(
        updated["metadata"] == {"check": MARKER, "stage": "beta"},
        f"metadata after the update is {updated['metadata']!r}",
    )
    versions = await client.assistants.get_versions(assistant_id)
    expect([v["version"] for v in versions] == [2, 1], f"versions are {versions!r}")
    latest = await client.assistants.set_latest(assistant_id, 1)
    expect(
        latest["version"] == 1 and latest["config"] == {"configurable": {"tone": "dry"}},
        f"set_latest(1) gave {latest!r}",
    )
    thread_id = await new_thread(client)
    run = await client.runs.create(thread_id, assistant_id, input=user("assisted"))
    expect(
        run["kwargs"]["config"]["configurable"].get("tone") == "dry",
        f"the run lacks its assistant's config: {run['kwargs']!r}",
    )
    values = await client.runs.join(thread_id, run["run_id"])
    expect(values["messages"][-1]["content"] == "echo: assisted", f"join gave {values!r}")
    await client.assistants.delete(assistant_id)
    try:
        await client.assistants.get(assistant_id)
        expect(False, "a deleted assistant is still found")
    except NotFoundError:
        pass


@check
async def threads_create_get_search_update(client):
    thread = await client.threads.create(metadata={"check": MARKER, "kind": "crud"})
    thread_id = thread["thread_id"]
    uuid.UUID(thread_id)
    expect(thread["status"] == "idle", f"a new thread is {thread['status']!r}, not idle")
    expect(thread["metadata"].get("kind") == "crud", f"metadata not kept: {thread['metadata']!r}")
    got = await client.threads.get(thread_id)
    expect(got["thread_id"] == thread_id, f"threads.get returned {got['thread_id']}")
    other = await new_thread(client, kind="other")
    found = await client.threads.search(metadata={"check": MARKER, "kind": "crud"})
    expect(
        [t["thread_id"] for t in found] == [thread_id],
        f"search by metadata found {[t['thread_id'] for t in found]}, expected [{thread_id}]",
    )
    count = await client.threads.count(metadata={"check": MARKER, "kind": "other"})
    expect(count == 1, f"threads.count found {count}, expected 1 ({other})")
    updated = await client.threads.update(thread_id, metadata={"extra": 1})
    expect(
        updated["metadata"].get("kind") == "crud" and updated["metadata"].get("extra") == 1,
        f"PATCH did not merge metadata: {updated['metadata']!r}",
    )
    explicit = str(uuid.uuid4())
    made = await client.threads.create(thread_id=explicit, metadata={"check": MARKER})
    expect(made["thread_id"] == explicit, f"client-chosen thread id became {made['thread_id']}")
    try:
        await client.threads.create(thread_id=explicit)
        raise CheckFailed("creating an existing thread id did not give 409")
    except ConflictError:
        pass
    same = await client.threads.create(thread_id=explicit, if_exists="do_nothing")
    expect(same["thread_id"] == explicit, "if_exists='do_nothing' did not return the thread")


@check
async def bad_input_statuses(client):
    try:
        await client.threads.get("not-a-uuid")
        raise CheckFailed("GET /threads/not-a-uuid did not fail")
    except UnprocessableEntityError:
        pass
    try:
        await client.threads.get(str(uuid.uuid4()))
        raise CheckFailed("GET of an unknown thread did not fail")
    except NotFoundError:
        pass
    try:
        await client.assistants.get(str(uuid.uuid4()))
        raise CheckFailed("GET of an unknown assistant did not fail")
    except NotFoundError:
        pass


@check
async def stream_values_and_updates(client):
    thread_id = await new_thread(client)
    created = []
    events = []
    async for part in client.runs.stream(
        thread_id,
        "agent",
        input=user("hello"),
        stream_mode=["values", "updates"],
        on_run_created=created.append,
    ):
        events.append(part)
    names = [e.event for e in events]
    expect(names and names[0] == "metadata", f"first event is not metadata: {names}")
    run_id = events[0].data.get("run_id")
    expect(run_id, f"metadata event has no run_id: {events[0].data!r}")
    expect(created, "Content-Location gave the SDK no run id (on_run_created not called)")
    expect(
        created[0]["run_id"] == run_id and created[0]["thread_id"] == thread_id,
        f"Content-Location names {created[0]}, metadata run_id is {run_id}",
    )
    updates = [e.data for e in events if e.event == "updates"]
    expect(
        any("respond" in u for u in updates), f"no `updates` event keyed by respond: {updates}"
    )
    values = [e.data for e in events if e.event == "values"]
    expect(values, f"no `values` event: {names}")
    expect(
        contents(values[-1]) == [("user", "hello"), ("assistant", "echo: hello")],
        f"last values event is {values[-1]!r}",
    )
    run = await client.runs.get(thread_id, run_id)
    expect(run["status"] == "success", f"streamed run ended {run['status']!r}")


@check
async def stream_updates_only_interrupt_shape(client):
    thread_id = await new_thread(client)
    updates = []
    async for part in client.runs.stream(
        thread_id, "agent", input=user("hi", ask_human=True), stream_mode="updates"
    ):
        if part.event == "updates":
            updates.append(part.data)
    pauses = [u["__interrupt__"] for u in updates if "__interrupt__" in u]
    expect(pauses, f"no updates event with __interrupt__: {updates}")
    first = pauses[-1][0]
    expect(first.get("value") == {"question": "approve?"}, f"interrupt is {first!r}")
    expect(first.get("id"), f"interrupt has no id: {first!r}")


@check
async def wait_returns_final_values(client):
    thread_id = await new_thread(client)
    result = await client.runs.wait(thread_id, "agent", input=user("ping"))
    expect(
        contents(result) == [("user", "ping"), ("assistant", "echo: ping")],
        f"runs.wait returned {result!r}",
    )


@check
async def interrupt_and_resume(client):
    thread_id = await new_thread(client)
    paused = await client.runs.wait(thread_id, "agent", input=user("deploy?", ask_human=True))
    expect("__interrupt__" in paused, f"runs.wait of a pausing run has no __interrupt__: {paused!r}")
    expect(
        paused["__interrupt__"][0]["value"] == {"question": "approve?"},
        f"interrupt value is {paused['__interrupt__']!r}",
    )
    thread = await client.threads.get(thread_id)
    expect(thread["status"] == "interrupted", f"paused thread is {thread['status']!r}")
    state = await client.threads.get_state(thread_id)
    expect(state["next"] == ["human"], f"paused state next is {state['next']!r}")
    expect(
        state["interrupts"] and state["interrupts"][0]["value"] == {"question": "approve?"},
        f"state interrupts are {state['interrupts']!r}",
    )
    expect(
        state["tasks"] and state["tasks"][0]["name"] == "human",
        f"state tasks are {state['tasks']!r}",
    )
    done = await client.runs.wait(thread_id, "agent", command={"resume": "yes"})
    expect(
        contents(done)[-2:] == [("assistant", "echo: deploy?"), ("human", "yes")],
        f"after resume the messages are {contents(done)}",
    )
    thread = await client.threads.get(thread_id)
    expect(thread["status"] == "idle", f"resumed thread is {thread['status']!r}")
    state = await client.threads.get_state(thread_id)
    expect(state["next"] == [], f"finished state next is {state['next']!r}")


@check
async def interrupt_before_then_continue(client):
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "agent", input=user("later"), interrupt_before=["respond"])
    state = await client.threads.get_state(thread_id)
    expect(state["next"] == ["respond"], f"interrupt_before left next={state['next']!r}")
    expect(contents(state["values"]) == [("user", "later")], f"values: {state['values']!r}")
    done = await client.runs.wait(thread_id, "agent", input=None)
    expect(
        contents(done) == [("user", "later"), ("assistant", "echo: later")],
        f"input=None did not continue: {done!r}",
    )


@check
async def if_not_exists(client):
    missing = str(uuid.uuid4())
    try:
        await client.runs.wait(missing, "agent", input=user("x"))
        raise CheckFailed("a run on an unknown thread did not fail")
    except httpx.HTTPStatusError as err:
        expect(err.response.status_code == 404, f"unknown thread gave {err.response.status_code}")
    made = await client.runs.wait(missing, "agent", input=user("x"), if_not_exists="create")
    expect(contents(made)[-1] == ("assistant", "echo: x"), f"if_not_exists=create: {made!r}")
    thread = await client.threads.get(missing)
    expect(thread["thread_id"] == missing, "the created thread does not carry the requested id")


@check
async def stateless_wait(client):
    result = await client.runs.wait(None, AGENT_ID, input=user("stateless"))
    expect(
        contents(result) == [("user", "stateless"), ("assistant", "echo: stateless")],
        f"stateless runs.wait returned {result!r}",
    )


@check
async def history_and_state_at_checkpoint(client):
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "agent", input=user("one"))
    await client.runs.wait(thread_id, "agent", input=user("two"))
    history = await client.threads.get_history(thread_id, limit=100)
    expect(len(history) >= 4, f"two runs left only {len(history)} history entries")
    latest = await client.threads.get_state(thread_id)
    expect(
        history[0]["checkpoint"]["checkpoint_id"] == latest["checkpoint"]["checkpoint_id"],
        "history[0] is not the latest state (history must be newest first)",
    )
    expect(latest["checkpoint"]["thread_id"] == thread_id, f"checkpoint: {latest['checkpoint']}")
    for key in ("metadata", "created_at", "parent_checkpoint", "tasks", "interrupts"):
        expect(key in latest, f"state lacks `{key}`")
    for newer, older in zip(history, history[1:]):
        parent = newer["parent_checkpoint"]
        expect(
            parent and parent["checkpoint_id"] == older["checkpoint"]["checkpoint_id"],
            f"parent_checkpoint chain broken: {parent} vs {older['checkpoint']}",
        )
    two = await client.threads.get_history(thread_id, limit=2)
    expect(len(two) == 2, f"limit=2 gave {len(two)} entries")
    first_done = next(
        h for h in reversed(history) if contents(h["values"])[-1:] == [("assistant", "echo: one")]
    )
    at = await client.threads.get_state(
        thread_id, checkpoint_id=first_done["checkpoint"]["checkpoint_id"]
    )
    expect(
        contents(at["values"]) == [("user", "one"), ("assistant", "echo: one")],
        f"state at an old checkpoint is {at['values']!r}",
    )


@check
async def update_state_as_node(client):
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "agent", input=user("base"))
    result = await client.threads.update_state(
        thread_id, {"messages": [{"role": "assistant", "content": "edited"}]}, as_node="respond"
    )
    expect(
        result.get("checkpoint", {}).get("checkpoint_id"),
        f"update_state returned {result!r}, expected a checkpoint",
    )
    state = await client.threads.get_state(thread_id)
    expect(
        contents(state["values"])
        == [("user", "base"), ("assistant", "echo: base"), ("assistant", "edited")],
        f"the append reducer did not apply: {state['values']!r}",
    )
    expect(
        state["checkpoint"]["checkpoint_id"] == result["checkpoint"]["checkpoint_id"],
        "the update's checkpoint is not the latest",
    )
    expect(state["next"] == [], f"after as_node=respond next is {state['next']!r}")


@check
async def copy_and_delete(client):
    thread_id = await new_thread(client)
    await client.runs.wait(thread_id, "agent", input=user("keep"))
    copy = await client.threads.copy(thread_id)
    expect(copy["thread_id"] != thread_id, "copy kept the same thread id")
    copied = await client.threads.get_state(copy["thread_id"])
    expect(
        contents(copied["values"]) == [("user", "keep"), ("assistant", "echo: keep")],
        f"the copy's state is {copied['values']!r}",
    )
    deleted = await client.threads.delete(thread_id)
    expect(deleted is None, f"threads.delete returned {deleted!r}")
    try:
        await client.threads.get(thread_id)
        raise CheckFailed("a deleted thread is still there")
    except NotFoundError:
        pass
    still = await client.threads.get_state(copy["thread_id"])
    expect(contents(still["values"])[-1] == ("assistant", "echo: keep"), "deleting hurt the copy")


@check
async def store(client):
    ns = ["check", MARKER]
    await client.store.put_item(ns + ["prefs"], "k1", {"color": "red", "n": 1})
    await client.store.put_item(ns + ["prefs"], "k2", {"color": "blue", "n": 2})
    await client.store.put_item(ns + ["other"], "k3", {"color": "red", "n": 3})
    item = await client.store.get_item(ns + ["prefs"], "k1")
    expect(item and item["value"] == {"color": "red", "n": 1}, f"get_item gave {item!r}")
    expect(item["namespace"] == ns + ["prefs"] and item["key"] == "k1", f"item: {item!r}")
    missing = await client.store.get_item(ns + ["prefs"], "nope")
    expect(missing is None, f"a missing key gave {missing!r}, expected None")
    found = await client.store.search_items(ns, filter={"color": "red"})
    keys = sorted(i["key"] for i in found["items"])
    expect(keys == ["k1", "k3"], f"search with prefix and filter found {keys}")
    spaces = await client.store.list_namespaces(prefix=ns)
    expect(
        sorted(map(tuple, spaces["namespaces"])) == [tuple(ns + ["other"]), tuple(ns + ["prefs"])],
        f"list_namespaces gave {spaces!r}",
    )
    await client.store.delete_item(ns + ["prefs"], "k1")
    gone = await client.store.get_item(ns + ["prefs"], "k1")
    expect(gone is None, f"a deleted item is still there: {gone!r}")


@check
async def crons_create_search_update_delete(client):
    thread_id = await new_thread(client)
    on_thread = await client.crons.create_for_thread(
        thread_id,
        "agent",
        schedule="30 9 * * 1-5",
        input=user("cron"),
        metadata={"check": MARKER},
    )
    expect(on_thread.get("thread_id") == thread_id, f"create_for_thread gave {on_thread!r}")
    expect(on_thread.get("next_run_date"), f"a cron without a next run date: {on_thread!r}")
    alone = await client.crons.create(
        "agent",
        schedule="*/10 * * * *",
        input=user("tick"),
        on_run_completed="keep",
        end_time=datetime(2999, 1, 1, tzinfo=timezone.utc),
        metadata={"check": MARKER},
    )
    expect(alone.get("thread_id") is None, f"a cron without a thread got one: {alone!r}")
    expect(alone.get("on_run_completed") == "keep", f"create gave {alone!r}")
    found = await client.crons.search(
        metadata={"check": MARKER}, sort_by="created_at", sort_order="asc"
    )
    ids = [c["cron_id"] for c in found]
    expect(ids == [on_thread["cron_id"], alone["cron_id"]], f"search found {ids}")
    count = await client.crons.count(thread_id=thread_id)
    expect(count == 1, f"count for the thread gave {count!r}")
    updated = await client.crons.update(alone["cron_id"], schedule="0 * * * *", enabled=False)
    expect(
        updated["schedule"] == "0 * * * *" and updated["enabled"] is False,
        f"update gave {updated!r}",
    )
    expect(updated["next_run_date"] is None, f"a disabled cron is due: {updated!r}")
    for cron in (on_thread, alone):
        await client.crons.delete(cron["cron_id"])
    left = await client.crons.count(metadata={"check": MARKER})
    expect(left == 0, f"{left} crons left after deleting both")


@check
async def ttls_on_threads_and_store_items(client):
    thread = await client.threads.create(metadata={"check": MARKER}, ttl=60)
    expect(thread.get("thread_id"), f"create with a ttl gave {thread!r}")
    await client.threads.update(thread["thread_id"], metadata={"ttl": "set"}, ttl=120)
    shown = await client.threads.get(thread["thread_id"], include=["ttl"])
    ttl = shown.get("ttl") or {}
    expect(ttl.get("strategy") == "delete" and ttl.get("ttl") == 120, f"include=ttl gave {shown!r}")
    ns = ["check", MARKER, "ttl"]
    await client.store.put_item(ns, "k", {"v": 1}, ttl=5)
    item = await client.store.get_item(ns, "k", refresh_ttl=True)
    expect(item and item["value"] == {"v": 1}, f"get_item of an item with a ttl gave {item!r}")
    found = await client.store.search_items(ns, refresh_ttl=True)
    expect([i["key"] for i in found["items"]] == ["k"], f"search gave {found!r}")


@check
async def background_run_and_join(client):
    thread_id = await new_thread(client)
    run = await client.runs.create(thread_id, "agent", input=user("bg"))
    for key in ("run_id", "thread_id", "assistant_id", "status", "created_at", "multitask_strategy"):
        expect(key in run, f"the created run lacks `{key}`: {run!r}")
    expect(run["status"] == "pending", f"a new background run is {run['status']!r}")
    expect(run["thread_id"] == thread_id, "the run names another thread")
    got = await client.runs.get(thread_id, run["run_id"])
    expect(got["run_id"] == run["run_id"], "runs.get returned another run")
    listed = await client.runs.list(thread_id)
    expect(run["run_id"] in [r["run_id"] for r in listed], "runs.list lacks the run")
    joined = await client.runs.join(thread_id, run["run_id"])
    expect(
        contents(joined) == [("user", "bg"), ("assistant", "echo: bg")],
        f"runs.join returned {joined!r}",
    )
    done = await client.runs.get(thread_id, run["run_id"])
    expect(done["status"] == "success", f"the joined run is {done['status']!r}")


@check
async def cancel_while_sleeping(client):
    thread_id = await new_thread(client)
    run = await client.runs.create(thread_id, "agent", input=user("slow", sleep=600))
    await wait_for_status(client, thread_id, run["run_id"], {"running"})
    answer = await client.runs.cancel(thread_id, run["run_id"])
    expect(answer is None, f"cancel without wait returned {answer!r} (expected 202, no body)")
    ended = await wait_for_status(
        client, thread_id, run["run_id"], {"interrupted", "success", "error"}
    )
    expect(ended["status"] == "interrupted", f"the cancelled run ended {ended['status']!r}")
    state = await client.threads.get_state(thread_id)
    expect(
        ("assistant", "echo: slow") not in contents(state["values"]),
        "the cancelled node still wrote its update",
    )


@check
async def reject_gives_409(client):
    thread_id = await new_thread(client)
    first = await client.runs.create(thread_id, "agent", input=user("busy", sleep=600))
    try:
        await client.runs.create(
            thread_id, "agent", input=user("second"), multitask_strategy="reject"
        )
        raise CheckFailed("multitask_strategy='reject' on a busy thread did not give 409")
    except ConflictError:
        pass
    finally:
        await client.runs.cancel(thread_id, first["run_id"], wait=True)
    runs = await client.runs.list(thread_id)
    expect(len(runs) == 1, f"the rejected run was stored anyway: {[r['run_id'] for r in runs]}")


@check
async def enqueue_runs_in_order(client):
    thread_id = await new_thread(client)
    first = await client.runs.create(thread_id, "agent", input=user("first", sleep=1))
    second = await client.runs.create(
        thread_id, "agent", input=user("second", sleep=0), multitask_strategy="enqueue"
    )
    expect(second["status"] == "pending", f"the enqueued run is {second['status']!r}")
    second_now = await client.runs.get(thread_id, second["run_id"])
    first_now = await client.runs.get(thread_id, first["run_id"])
    if first_now["status"] in ("pending", "running"):
        expect(
            second_now["status"] == "pending",
            f"the enqueued run is {second_now['status']!r} while the first is in flight",
        )
    joined = await client.runs.join(thread_id, second["run_id"])
    expect(
        contents(joined)
        == [
            ("user", "first"),
            ("assistant", "echo: first"),
            ("user", "second"),
            ("assistant", "echo: second"),
        ],
        f"the runs did not run one after the other: {contents(joined)}",
    )
    first_end = await client.runs.get(thread_id, first["run_id"])
    expect(first_end["status"] == "success", f"the first run ended {first_end['status']!r}")


@check
async def join_stream_with_last_event_id(client):
    thread_id = await new_thread(client)
    seen = []
    async for part in client.runs.stream(
        thread_id,
        "agent",
        input=user("resume me", sleep=1),
        stream_mode=["values", "updates"],
        stream_resumable=True,
    ):
        seen.append(part)
        break  # hang up after the first event; on_disconnect defaults to continue
    expect(seen and seen[0].event == "metadata", f"first event: {seen}")
    run_id = seen[0].data["run_id"]
    first_id = seen[0].id
    expect(first_id, "a resumable stream sent no SSE id")
    rest = []
    async for part in client.runs.join_stream(
        thread_id, run_id, stream_mode=["values", "updates"], last_event_id=first_id
    ):
        rest.append(part)
    ids = [p.id for p in rest if p.id]
    expect(first_id not in ids, f"the replay repeated event {first_id}")
    expect(len(ids) == len(set(ids)), f"the replay repeated ids: {ids}")
    values = [p.data for p in rest if p.event == "values"]
    expect(values, f"the join after Last-Event-ID gave no values: {[p.event for p in rest]}")
    expect(
        contents(values[-1]) == [("user", "resume me"), ("assistant", "echo: resume me")],
        f"the replayed stream ends with {values[-1]!r}",
    )
    expect(
        any(p.event == "updates" and "respond" in p.data for p in rest),
        "the replay lacks the respond update",
    )
    run = await client.runs.get(thread_id, run_id)
    expect(run["status"] == "success", f"the run ended {run['status']!r} after the hang-up")


@check
async def thread_join_stream_replays_every_run(client):
    thread_id = await new_thread(client)
    first = await client.runs.create(thread_id, "agent", input=user("one"))
    await client.runs.join(thread_id, first["run_id"])
    second = await client.runs.create(thread_id, "agent", input=user("two"))
    await client.runs.join(thread_id, second["run_id"])
    parts = []

    async def follow():
        # graphkit-server's thread-stream ids are `{run_id}:{seq}`: after `:0` is the
        # first run from its start. The SDK sends its default stream_mode, run_modes.
        # (In SDK 0.4.14 the async join_stream is a coroutine that returns the stream.)
        async for part in await client.threads.join_stream(
            thread_id, last_event_id=f"{first['run_id']}:0"
        ):
            parts.append(part)
            done = [p for p in parts if p.event == "metadata" and p.data.get("status") == "run_done"]
            if len(done) == 2:
                return

    await asyncio.wait_for(follow(), DEADLINE_SECONDS)
    starts = [p.data["run_id"] for p in parts if p.event == "metadata" and "attempt" in p.data]
    ends = [p.data["run_id"] for p in parts if p.event == "metadata" and "status" in p.data]
    expect(starts == [first["run_id"], second["run_id"]], f"runs started: {starts}")
    expect(ends == starts, f"runs done: {ends}")
    values = [p.data for p in parts if p.event == "values"]
    expect(
        contents(values[-1])[-1] == ("assistant", "echo: two"),
        f"the thread stream ends with {values[-1]!r}",
    )
    expect(all(p.id for p in parts), "a thread-stream event had no id")


async def main():
    url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("GRAPHKIT_SERVER_URL")
    if not url:
        print("usage: check.py URL (or set GRAPHKIT_SERVER_URL)", file=sys.stderr)
        return 2
    api_key = os.environ.get("GRAPHKIT_SERVER_API_KEY") or None
    client = get_client(url=url, api_key=api_key, timeout=httpx.Timeout(120.0))
    for fn in CHECKS:
        name = fn.__name__
        try:
            await fn(client)
        except CheckFailed as err:
            print(f"FAIL python {name}: {err}", flush=True)
            return 1
        except Exception as err:  # an SDK error is a failure too, with its server message
            detail = ""
            response = getattr(err, "response", None)
            if response is not None:
                try:
                    body = response.text[:300]
                except httpx.ResponseNotRead:
                    body = "<streamed body>"
                detail = f" ({response.request.method} {response.request.url} -> "
                detail += f"{response.status_code} {body})"
            print(f"FAIL python {name}: {type(err).__name__}: {err}{detail}", flush=True)
            traceback.print_exc()
            return 1
        print(f"ok python {name}", flush=True)
    print(f"all {len(CHECKS)} python checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
