// Client check for graphkit-server with the official JS SDK (@langchain/langgraph-sdk 2.0.x).
//
// Usage: GRAPHKIT_SDK_JS=<node_modules dir> node check.mjs URL
//        (or GRAPHKIT_SERVER_URL=URL instead of the argument)
//
// The server must serve the demo graph `agent` (graphkit-server's binary does); see
// tests/clients/python/check.py for its behaviour. This script mirrors that one and adds
// what only the JS client does: it parses every body except 202/204 as JSON, sends
// `stream_mode` on GET streams as one JSON array, reads the checkpoint-object form of
// getState, and sends booleans as 1/0.
//
// Every check prints one line. The script stops at the first failure with a message that
// names the check and what differed, and exits 1.

import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import { join } from "node:path";

import { CheckFailed, DEADLINE_MS, expect, show } from "./client_checks.mjs";

const modulesDir = process.env.GRAPHKIT_SDK_JS;
if (!modulesDir) {
  console.error("set GRAPHKIT_SDK_JS to the node_modules folder that holds @langchain/langgraph-sdk");
  process.exit(2);
}
const require = createRequire(join(modulesDir, "graphkit-client-check.cjs"));
const { Client } = require("@langchain/langgraph-sdk");

// The system assistant id of graph `agent`: uuid5(6ba7b821-9dad-11d1-80b4-00c04fd430c8, "agent").
const AGENT_ID = "fe096781-5601-53d2-b2f6-0d3403f7e9ca";
// One marker per script run: other clients may share the server's database.
const MARKER = randomUUID().replaceAll("-", "");

function user(text, extra = {}) {
  return { messages: [{ role: "user", content: text }], ...extra };
}

function contents(values) {
  expect(values && typeof values === "object", `expected state values, got ${show(values)}`);
  expect(Array.isArray(values.messages), `state has no messages list: ${show(values)}`);
  return values.messages.map((m) => `${m.role}|${m.content}`);
}

function sameList(actual, wanted, what) {
  expect(show(actual) === show(wanted), `${what}: got ${show(actual)}, expected ${show(wanted)}`);
}

async function expectStatus(promise, status, what) {
  try {
    await promise;
  } catch (err) {
    expect(err.status === status, `${what} gave ${err.status ?? err}, expected ${status}`);
    return;
  }
  throw new CheckFailed(`${what} did not fail with ${status}`);
}

async function waitForStatus(client, threadId, runId, wanted) {
  const giveUp = Date.now() + DEADLINE_MS;
  for (;;) {
    const run = await client.runs.get(threadId, runId);
    if (wanted.includes(run.status)) return run;
    expect(Date.now() < giveUp, `run ${runId} stayed ${run.status}, expected one of ${wanted}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function newThread(client, metadata = {}) {
  return (await client.threads.create({ metadata: { check: MARKER, ...metadata } })).thread_id;
}

const checks = {
  async health(client) {
    const response = await fetch(`${client.runs.apiUrl}/ok`, { headers: client.runs.defaultHeaders });
    const ok = await response.json();
    sameList(ok, { ok: true }, "GET /ok");
  },

  async assistantsSearchAndGet(client) {
    const found = await client.assistants.search({ graphId: "agent" });
    expect(found.some((a) => a.assistant_id === AGENT_ID), `search lacks ${AGENT_ID}: ${show(found)}`);
    const byUuid = await client.assistants.get(AGENT_ID);
    expect(byUuid.graph_id === "agent", `graph_id is ${byUuid.graph_id}`);
    expect(byUuid.metadata?.created_by === "system", `metadata is ${show(byUuid.metadata)}`);
    const graph = await client.assistants.getGraph(AGENT_ID);
    const nodes = graph.nodes.map((n) => n.id);
    for (const node of ["__start__", "respond", "human", "__end__"]) {
      expect(nodes.includes(node), `graph nodes lack ${node}: ${show(nodes)}`);
    }
    const schemas = await client.assistants.getSchemas(AGENT_ID);
    expect(schemas.graph_id === "agent", `schemas graph_id is ${schemas.graph_id}`);
    expect(schemas.state_schema?.properties?.messages, `state_schema: ${show(schemas.state_schema)}`);
  },

  async threadsCrud(client) {
    const thread = await client.threads.create({ metadata: { check: MARKER, kind: "crud" } });
    expect(thread.status === "idle", `a new thread is ${thread.status}`);
    expect(thread.metadata.kind === "crud", `metadata not kept: ${show(thread.metadata)}`);
    const got = await client.threads.get(thread.thread_id);
    expect(got.thread_id === thread.thread_id, "threads.get returned another thread");
    await newThread(client, { kind: "other" });
    const found = await client.threads.search({ metadata: { check: MARKER, kind: "crud" } });
    sameList(found.map((t) => t.thread_id), [thread.thread_id], "search by metadata");
    const count = await client.threads.count({ metadata: { check: MARKER, kind: "other" } });
    expect(count === 1, `threads.count gave ${count}, expected 1`);
    const updated = await client.threads.update(thread.thread_id, { metadata: { extra: 1 } });
    expect(updated.metadata.kind === "crud" && updated.metadata.extra === 1, `PATCH: ${show(updated.metadata)}`);
    await expectStatus(client.threads.get("not-a-uuid"), 422, "GET /threads/not-a-uuid");
    await expectStatus(client.threads.get(randomUUID()), 404, "GET of an unknown thread");
  },

  async streamValuesAndUpdates(client) {
    const threadId = await newThread(client);
    const created = [];
    const events = [];
    for await (const part of client.runs.stream(threadId, "agent", {
      input: user("hello"),
      streamMode: ["values", "updates"],
      onRunCreated: (meta) => created.push(meta),
    })) {
      events.push(part);
    }
    const names = events.map((e) => e.event);
    expect(names[0] === "metadata", `first event is not metadata: ${show(names)}`);
    const runId = events[0].data.run_id;
    expect(runId, `metadata has no run_id: ${show(events[0].data)}`);
    expect(created[0]?.run_id === runId && created[0]?.thread_id === threadId,
      `Content-Location gave ${show(created)}, metadata run_id is ${runId}`);
    expect(events.some((e) => e.event === "updates" && e.data.respond), `no respond update: ${show(names)}`);
    const values = events.filter((e) => e.event === "values").map((e) => e.data);
    sameList(contents(values.at(-1)), ["user|hello", "assistant|echo: hello"], "last values event");
  },

  async streamUpdatesOnlyInterrupt(client) {
    const threadId = await newThread(client);
    const pauses = [];
    for await (const part of client.runs.stream(threadId, "agent", {
      input: user("hi", { ask_human: true }),
      streamMode: "updates",
    })) {
      if (part.event === "updates" && part.data.__interrupt__) pauses.push(part.data.__interrupt__);
    }
    expect(pauses.length > 0, "no updates event with __interrupt__");
    const first = pauses.at(-1)[0];
    sameList(first.value, { question: "approve?" }, "interrupt value");
    expect(first.id, `interrupt has no id: ${show(first)}`);
  },

  async interruptResumeAndState(client) {
    const threadId = await newThread(client);
    const paused = await client.runs.wait(threadId, "agent", { input: user("deploy?", { ask_human: true }) });
    expect(paused.__interrupt__?.[0]?.value?.question === "approve?", `wait body: ${show(paused)}`);
    const thread = await client.threads.get(threadId);
    expect(thread.status === "interrupted", `paused thread is ${thread.status}`);
    const state = await client.threads.getState(threadId);
    sameList(state.next, ["human"], "paused state next");
    const done = await client.runs.wait(threadId, "agent", { command: { resume: "yes" } });
    sameList(contents(done).slice(-2), ["assistant|echo: deploy?", "human|yes"], "after resume");
    const after = await client.threads.get(threadId);
    expect(after.status === "idle", `resumed thread is ${after.status}`);
    // The checkpoint-object form (POST /threads/{id}/state/checkpoint).
    const atPause = await client.threads.getState(threadId, state.checkpoint);
    sameList(atPause.next, ["human"], "state at the paused checkpoint");
  },

  async waitStatelessAndIfNotExists(client) {
    const stateless = await client.runs.wait(null, "agent", { input: user("solo") });
    sameList(contents(stateless), ["user|solo", "assistant|echo: solo"], "stateless wait");
    const missing = randomUUID();
    await expectStatus(client.runs.wait(missing, "agent", { input: user("x") }), 404, "a run on an unknown thread");
    const made = await client.runs.wait(missing, "agent", { input: user("x"), ifNotExists: "create" });
    sameList(contents(made), ["user|x", "assistant|echo: x"], "ifNotExists create");
  },

  async historyUpdateStateCopyDelete(client) {
    const threadId = await newThread(client);
    await client.runs.wait(threadId, "agent", { input: user("one") });
    await client.runs.wait(threadId, "agent", { input: user("two") });
    const history = await client.threads.getHistory(threadId, { limit: 100 });
    expect(history.length >= 4, `two runs left ${history.length} history entries`);
    for (let i = 0; i + 1 < history.length; i += 1) {
      expect(history[i].parent_checkpoint?.checkpoint_id === history[i + 1].checkpoint.checkpoint_id,
        `parent_checkpoint chain broken at ${i}`);
    }
    const limited = await client.threads.getHistory(threadId, { limit: 2 });
    expect(limited.length === 2, `limit 2 gave ${limited.length}`);
    const update = await client.threads.updateState(threadId, {
      values: { messages: [{ role: "assistant", content: "edited" }] },
      asNode: "respond",
    });
    expect(update.checkpoint?.checkpoint_id, `updateState returned ${show(update)}`);
    const state = await client.threads.getState(threadId);
    sameList(contents(state.values).slice(-2), ["assistant|echo: two", "assistant|edited"], "after updateState");
    const copy = await client.threads.copy(threadId);
    expect(copy.thread_id !== threadId, "copy kept the thread id");
    const copied = await client.threads.getState(copy.thread_id);
    sameList(contents(copied.values), contents(state.values), "the copy's values");
    const deleted = await client.threads.delete(threadId);
    expect(deleted === undefined, `delete returned ${show(deleted)} (expected 204)`);
    await expectStatus(client.threads.get(threadId), 404, "GET of a deleted thread");
  },

  async store(client) {
    const ns = ["check", MARKER];
    await client.store.putItem([...ns, "prefs"], "k1", { color: "red" });
    await client.store.putItem([...ns, "prefs"], "k2", { color: "blue" });
    await client.store.putItem([...ns, "other"], "k3", { color: "red" });
    const item = await client.store.getItem([...ns, "prefs"], "k1");
    sameList(item?.value, { color: "red" }, "getItem");
    const missing = await client.store.getItem([...ns, "prefs"], "nope");
    expect(missing === null, `a missing key gave ${show(missing)}`);
    const found = await client.store.searchItems(ns, { filter: { color: "red" } });
    sameList(found.items.map((i) => i.key).sort(), ["k1", "k3"], "searchItems with a filter");
    const spaces = await client.store.listNamespaces({ prefix: ns });
    sameList(spaces.namespaces.map((n) => n.join("/")).sort(),
      [[...ns, "other"].join("/"), [...ns, "prefs"].join("/")], "listNamespaces");
    await client.store.deleteItem([...ns, "prefs"], "k1");
    expect((await client.store.getItem([...ns, "prefs"], "k1")) === null, "a deleted item is still there");
  },

  async backgroundJoinAndCancel(client) {
    const threadId = await newThread(client);
    const run = await client.runs.create(threadId, "agent", { input: user("bg") });
    expect(run.status === "pending", `a new background run is ${run.status}`);
    const listed = await client.runs.list(threadId);
    expect(listed.some((r) => r.run_id === run.run_id), "runs.list lacks the run");
    const joined = await client.runs.join(threadId, run.run_id);
    sameList(contents(joined), ["user|bg", "assistant|echo: bg"], "runs.join");

    const slow = await client.runs.create(threadId, "agent", { input: user("slow", { sleep: 600 }) });
    await waitForStatus(client, threadId, slow.run_id, ["running"]);
    await expectStatus(
      client.runs.create(threadId, "agent", { input: user("no"), multitaskStrategy: "reject" }),
      409, "a reject run on a busy thread");
    const answer = await client.runs.cancel(threadId, slow.run_id);
    expect(answer === undefined, `cancel returned ${show(answer)} (expected 202, no body)`);
    const ended = await waitForStatus(client, threadId, slow.run_id, ["interrupted", "success", "error"]);
    expect(ended.status === "interrupted", `the cancelled run ended ${ended.status}`);
  },

  async enqueueRunsInOrder(client) {
    const threadId = await newThread(client);
    const first = await client.runs.create(threadId, "agent", { input: user("first", { sleep: 1 }) });
    const second = await client.runs.create(threadId, "agent", {
      input: user("second"),
      multitaskStrategy: "enqueue",
    });
    expect(second.status === "pending", `the enqueued run is ${second.status}`);
    const joined = await client.runs.join(threadId, second.run_id);
    sameList(contents(joined),
      ["user|first", "assistant|echo: first", "user|second", "assistant|echo: second"],
      "enqueued runs in order");
    const firstEnd = await client.runs.get(threadId, first.run_id);
    expect(firstEnd.status === "success", `the first run ended ${firstEnd.status}`);
  },

  async joinStreamWithLastEventId(client) {
    const threadId = await newThread(client);
    let first;
    for await (const part of client.runs.stream(threadId, "agent", {
      input: user("resume me", { sleep: 1 }),
      streamMode: ["values", "updates"],
      streamResumable: true,
    })) {
      first = part;
      break; // hang up after the first event; on_disconnect defaults to continue
    }
    expect(first?.event === "metadata", `first event: ${show(first)}`);
    expect(first.id, "a resumable stream sent no SSE id");
    const rest = [];
    for await (const part of client.runs.joinStream(threadId, first.data.run_id, {
      lastEventId: first.id,
      streamMode: ["values", "updates"],
    })) {
      rest.push(part);
    }
    const ids = rest.map((p) => p.id).filter(Boolean);
    expect(!ids.includes(first.id), `the replay repeated event ${first.id}`);
    expect(new Set(ids).size === ids.length, `the replay repeated ids: ${show(ids)}`);
    const values = rest.filter((p) => p.event === "values").map((p) => p.data);
    expect(values.length > 0, `no values after Last-Event-ID: ${show(rest.map((p) => p.event))}`);
    sameList(contents(values.at(-1)), ["user|resume me", "assistant|echo: resume me"], "replayed final values");
  },

  async cronsCreateSearchUpdateDelete(client) {
    const threadId = await newThread(client);
    const onThread = await client.crons.createForThread(threadId, "agent", {
      schedule: "30 9 * * 1-5",
      input: user("cron"),
      metadata: { check: MARKER },
    });
    expect(onThread.thread_id === threadId, `createForThread gave ${show(onThread)}`);
    expect(onThread.next_run_date, `a cron without a next run date: ${show(onThread)}`);
    const alone = await client.crons.create("agent", {
      schedule: "*/10 * * * *",
      input: user("tick"),
      onRunCompleted: "keep",
      metadata: { check: MARKER },
    });
    expect(alone.thread_id == null, `a cron without a thread got one: ${show(alone)}`);
    expect(alone.on_run_completed === "keep", `create gave ${show(alone)}`);
    const onTheThread = await client.crons.search({ threadId });
    sameList(onTheThread.map((c) => c.cron_id), [onThread.cron_id], "search by thread");
    const count = await client.crons.count({ threadId });
    expect(count === 1, `count for the thread gave ${show(count)}`);
    const updated = await client.crons.update(alone.cron_id, { schedule: "0 * * * *", enabled: false });
    expect(updated.schedule === "0 * * * *" && updated.enabled === false, `update gave ${show(updated)}`);
    expect(updated.next_run_date == null, `a disabled cron is due: ${show(updated)}`);
    const answers = [];
    for (const cron of [onThread, alone]) answers.push(await client.crons.delete(cron.cron_id));
    expect(answers.every((a) => a === undefined), `delete returned ${show(answers)}`);
    const left = await client.crons.count({ threadId });
    expect(left === 0, `${left} crons left on the thread after deleting its cron`);
    const all = await client.crons.search({ assistantId: AGENT_ID, limit: 1000 });
    expect(!all.some((c) => c.cron_id === alone.cron_id), "the deleted cron is still found");
  },

  async threadJoinStreamReplaysEveryRun(client) {
    const threadId = await newThread(client);
    const first = await client.runs.create(threadId, "agent", { input: user("one") });
    await client.runs.join(threadId, first.run_id);
    const second = await client.runs.create(threadId, "agent", { input: user("two") });
    await client.runs.join(threadId, second.run_id);
    // graphkit-server's thread-stream ids are `{run_id}:{seq}`: after `:0` is the first run
    // from its start. No streamMode: the SDK sends none and the server uses run_modes.
    const parts = [];
    const isDone = (p) => p.event === "metadata" && p.data?.status === "run_done";
    for await (const part of client.threads.joinStream(threadId, {
      lastEventId: `${first.run_id}:0`,
      signal: AbortSignal.timeout(DEADLINE_MS),
    })) {
      parts.push(part);
      if (parts.filter(isDone).length === 2) break;
    }
    const starts = parts.filter((p) => p.event === "metadata" && "attempt" in p.data).map((p) => p.data.run_id);
    const ends = parts.filter(isDone).map((p) => p.data.run_id);
    sameList(starts, [first.run_id, second.run_id], "runs started on the thread stream");
    sameList(ends, starts, "runs done on the thread stream");
    const values = parts.filter((p) => p.event === "values").map((p) => p.data);
    expect(values.length > 0, `no values on the thread stream: ${show(parts.map((p) => p.event))}`);
    expect(contents(values.at(-1)).at(-1) === "assistant|echo: two", `the thread stream ends with ${show(values.at(-1))}`);
    expect(parts.every((p) => p.id), "a thread-stream event had no id");
  },
};

async function main() {
  const url = process.argv[2] ?? process.env.GRAPHKIT_SERVER_URL;
  if (!url) {
    console.error("usage: node check.mjs URL (or set GRAPHKIT_SERVER_URL)");
    return 2;
  }
  const client = new Client({
    apiUrl: url,
    apiKey: process.env.GRAPHKIT_SERVER_API_KEY || null,
    // A server error must fail the check, not be retried away.
    callerOptions: { maxRetries: 0 },
  });
  const names = Object.keys(checks);
  for (const name of names) {
    try {
      await checks[name](client);
    } catch (err) {
      const detail = err instanceof CheckFailed ? err.message : `${err?.name}: ${err?.message ?? err}`;
      console.log(`FAIL js ${name}: ${detail}`);
      if (!(err instanceof CheckFailed)) console.error(err);
      return 1;
    }
    console.log(`ok js ${name}`);
  }
  console.log(`all ${names.length} js checks passed`);
  return 0;
}

process.exitCode = await main();
