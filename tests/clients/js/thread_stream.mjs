// The thread-centric streaming protocol with the official JS SDK: `client.threads.stream(...)`
// (@langchain/langgraph-sdk 1.15.x, the release that has it; 2.0.0 was published earlier and
// does not) against graphkit-test-server's graphs `researcher` and `agent`.
//
// Usage: GRAPHKIT_SDK_JS_STREAM=<node_modules dir> node thread_stream.mjs URL
//        (or GRAPHKIT_SERVER_URL=URL instead of the argument)
//
// `researcher` is START -> `research` (a subgraph: `model` asks the tool `lookup` about the
// user's words, `tools` answers, `model` answers with the tool's text) -> END; `agent` is the
// demo graph (see tests/clients/python/check.py), which pauses on an interrupt when
// `ask_human` is set.
//
// Over each transport (SSE, then WebSocket), on a thread that does not exist until the run
// creates it:
// - the researcher run: the subgraph's lifecycle (started, then completed before the root),
//   the `tools` channel (tool-started with the call's input, tool-finished with the tool
//   message), the SDK's `toolCalls` projection (name, input, output), the model's tool call
//   as a message content block, `checkpoints` chained by parent, the namespace filter, and
//   `thread.output`;
// - the agent run: the pause (`thread.interrupted`, `thread.interrupts`), `input.respond`,
//   the run completed and its output.
//
// Node 20 has no global WebSocket without a flag: the script runs itself again with it.
//
// Every check prints one line; the script stops at the first failure and exits 1.

import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";

import { CheckFailed, DEADLINE_MS, expect, show } from "./client_checks.mjs";

if (typeof WebSocket === "undefined") {
  const again = spawnSync(process.execPath, ["--experimental-websocket", ...process.argv.slice(1)], {
    stdio: "inherit",
  });
  process.exit(again.status ?? 1);
}

const modulesDir = process.env.GRAPHKIT_SDK_JS_STREAM;
if (!modulesDir) {
  console.error("set GRAPHKIT_SDK_JS_STREAM to the node_modules folder that holds @langchain/langgraph-sdk 1.15");
  process.exit(2);
}
const require = createRequire(join(modulesDir, "graphkit-thread-stream.cjs"));
const { Client } = require("@langchain/langgraph-sdk");

/** `promise`, or a failure naming `what` after the deadline. */
async function within(promise, what) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed(`${what} did not happen within ${DEADLINE_MS} ms`)), DEADLINE_MS);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The events of a subscription, to read in parts with `readUntil` (a `for await` that
 * stops early would close the subscription). */
const eventsOf = (subscription) => subscription[Symbol.asyncIterator]();

/** Reads `events` into `seen` until `stop(event)` holds. */
async function readUntil(events, seen, stop, what) {
  const read = async () => {
    for (;;) {
      const { value: event, done } = await events.next();
      if (done) break;
      seen.push(event);
      if (stop(event)) return event;
    }
    throw new CheckFailed(`the subscription ended before ${what}; saw ${show(seen.map(describe))}`);
  };
  return within(read(), what);
}

const lifecycleOf = (event) => (event.method === "lifecycle" ? event.params.data.event : undefined);
const rootEnded = (event) => event.params.namespace.length === 0 && ["completed", "failed"].includes(lifecycleOf(event));
const describe = (event) => `${event.method}:${event.params.data?.event ?? ""}@${event.params.namespace.join("/")}`;

async function theResearcherRun(client, transport) {
  const thread = client.threads.stream({ assistantId: "researcher", transport });
  try {
    const all = eventsOf(await thread.subscribe({ channels: ["lifecycle", "tools", "messages", "values", "checkpoints"] }));
    // The projection yields a call when it starts and again when it ends: one per call id.
    const calls = new Map();
    const collecting = (async () => {
      for await (const call of thread.toolCalls) calls.set(call.callId, call);
    })();
    const started = await thread.run.start({ input: { messages: [{ type: "human", content: "rust" }] } });
    expect(typeof started.run_id === "string", `run.start gave no run_id: ${show(started)}`);
    const seen = [];
    await readUntil(all, seen, rootEnded, "the researcher run's end");
    expect(lifecycleOf(seen.at(-1)) === "completed", `the run ended ${describe(seen.at(-1))}`);

    const lifecycle = seen.filter((e) => e.method === "lifecycle").map(describe);
    const sub = lifecycle.find((l) => l.startsWith("lifecycle:started@research:"));
    expect(sub, `no subgraph lifecycle started: ${show(lifecycle)}`);
    const subNamespace = sub.split("@")[1];
    const order = [`lifecycle:running@`, sub, `lifecycle:completed@${subNamespace}`, `lifecycle:completed@`];
    expect(show(lifecycle) === show(order), `lifecycle: got ${show(lifecycle)}, expected ${show(order)}`);
    const startedEvent = seen.find((e) => describe(e) === sub);
    expect(startedEvent.params.data.graph_name === "research", `subgraph graph_name: ${show(startedEvent.params.data)}`);
    console.log(`ok js thread_stream ${transport} the subgraph run started and completed under ${subNamespace}`);

    const tools = seen.filter((e) => e.method === "tools").map((e) => e.params.data);
    expect(tools.length === 2, `tools events: ${show(tools)}`);
    expect(
      tools[0].event === "tool-started" && tools[0].tool_name === "lookup" && show(tools[0].input) === show({ topic: "rust" }),
      `tool-started: ${show(tools[0])}`,
    );
    expect(
      tools[1].event === "tool-finished" && tools[1].tool_call_id === tools[0].tool_call_id && tools[1].output.content === "notes on rust",
      `tool-finished: ${show(tools[1])}`,
    );
    console.log(`ok js thread_stream ${transport} the tools channel: lookup started and finished`);

    await within(thread.output, "thread.output");
    await within(collecting, "the toolCalls projection's end");
    const [lookup, ...others] = calls.values();
    expect(lookup?.name === "lookup" && others.length === 0, `toolCalls: ${show([...calls.values()].map((c) => c.name))}`);
    expect(lookup.callId === tools[0].tool_call_id, `toolCalls call id: ${lookup.callId}`);
    expect(show(lookup.input) === show({ topic: "rust" }), `toolCalls input: ${show(lookup.input)}`);
    const output = await within(lookup.output, "the tool call's output");
    expect(output === "notes on rust", `the tool call's output: ${show(output)}`);
    console.log(`ok js thread_stream ${transport} thread.toolCalls gave lookup with its input and output`);

    const finished = seen
      .filter((e) => e.method === "messages" && e.params.data.event === "content-block-finish")
      .map((e) => e.params.data.content);
    const call = finished.find((c) => c.type === "tool_call");
    expect(call && call.name === "lookup" && show(call.args) === show({ topic: "rust" }), `tool-call block: ${show(finished)}`);
    expect(finished.some((c) => c.type === "text" && c.text === "notes on rust"), `the answer's text block: ${show(finished)}`);
    console.log(`ok js thread_stream ${transport} the model's tool call came as a tool_call content block`);

    const checkpoints = seen.filter((e) => e.method === "checkpoints").map((e) => e.params.data);
    expect(checkpoints.length >= 2, `checkpoints: ${show(checkpoints)}`);
    expect(checkpoints.every((c) => typeof c.id === "string" && Number.isInteger(c.step) && ["input", "loop"].includes(c.source)),
      `checkpoint envelopes: ${show(checkpoints)}`);
    const root = seen.filter((e) => e.method === "checkpoints" && e.params.namespace.length === 0).map((e) => e.params.data);
    expect(root.slice(1).every((c, i) => c.parent_id === root[i].id), `root checkpoints chain by parent_id: ${show(root)}`);
    console.log(`ok js thread_stream ${transport} ${checkpoints.length} checkpoints, the root's chained by parent_id`);

    const output_ = await thread.output;
    const last = output_.messages.at(-1);
    expect(last.type === "ai" && last.content === "notes on rust", `thread.output's last message: ${show(last)}`);
    console.log(`ok js thread_stream ${transport} thread.output ends with the answer`);

    // A subscription scoped to the subgraph's namespace sees only its lifecycle.
    const scoped = await thread.subscribe({ channels: ["lifecycle"], namespaces: [["research"]], depth: 0 });
    const inside = [];
    await readUntil(eventsOf(scoped), inside, (e) => lifecycleOf(e) === "completed", "the scoped subscription's completed");
    const names = inside.map(describe);
    expect(show(names) === show([sub, `lifecycle:completed@${subNamespace}`]), `scoped lifecycle: ${show(names)}`);
    await scoped.unsubscribe();
    console.log(`ok js thread_stream ${transport} a namespace-scoped subscription sees only the subgraph`);
  } finally {
    thread.close();
  }
}

async function theAgentPausesAndResumes(client, transport) {
  const thread = client.threads.stream({ assistantId: "agent", transport });
  try {
    const all = eventsOf(await thread.subscribe({ channels: ["lifecycle", "input", "values"] }));
    await thread.run.start({ input: { messages: [{ role: "user", content: "hi" }], ask_human: true } });
    const seen = [];
    const requested = await readUntil(all, seen, (e) => e.method === "input.requested", "input.requested");
    expect(show(requested.params.data.payload) === show({ question: "approve?" }), `input.requested: ${show(requested.params.data)}`);
    await within(
      (async () => {
        while (!thread.interrupted) await new Promise((resolve) => setTimeout(resolve, 20));
      })(),
      "thread.interrupted",
    );
    const interrupt = thread.interrupts[0];
    expect(interrupt?.interruptId === requested.params.data.interrupt_id, `thread.interrupts: ${show(thread.interrupts)}`);
    console.log(`ok js thread_stream ${transport} the agent paused: thread.interrupted with its interrupt`);

    await thread.input.respond({ interrupt_id: interrupt.interruptId, namespace: [], response: "yes" });
    await readUntil(all, seen, rootEnded, "the resumed run's end");
    const phases = seen.filter((e) => e.method === "lifecycle").map(lifecycleOf);
    expect(show(phases) === show(["running", "interrupted", "running", "completed"]), `lifecycle: ${show(phases)}`);
    const values = seen.filter((e) => e.method === "values").at(-1).params.data;
    const got = values.messages.map((m) => `${m.role}|${m.content}`);
    expect(show(got) === show(["user|hi", "assistant|echo: hi", "human|yes"]), `final values: ${show(got)}`);
    console.log(`ok js thread_stream ${transport} input.respond resumed the run to completed`);
  } finally {
    thread.close();
  }
}

const CHECKS = [theResearcherRun, theAgentPausesAndResumes];

async function main() {
  const base = process.argv[2] ?? process.env.GRAPHKIT_SERVER_URL;
  if (!base) {
    console.error("usage: node thread_stream.mjs URL");
    process.exit(2);
  }
  const client = new Client({ apiUrl: base });
  let count = 0;
  for (const transport of ["sse", "websocket"]) {
    for (const check of CHECKS) {
      try {
        await check(client, transport);
        count += 1;
      } catch (err) {
        console.error(`FAILED js thread_stream ${transport} ${check.name}: ${err instanceof CheckFailed ? err.message : err.stack}`);
        process.exit(1);
      }
    }
  }
  console.log(`all ${count} js thread_stream checks passed`);
  process.exit(0);
}

await main();
