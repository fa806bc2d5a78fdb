// The reference MCP client of the official TypeScript SDK (@modelcontextprotocol/sdk),
// driven by graphkit-tools' MCP server tests (tests/mcp_server*.rs) and graphkit-server's
// MCP endpoint test (graphkit-server/tests/mcp.rs).
//
// Usage: node mcp_sdk_client.mjs SDK_DIR CALLS_JSON http URL
//        node mcp_sdk_client.mjs SDK_DIR CALLS_JSON stdio COMMAND [ARGS...]
//
// SDK_DIR is the installed package directory (node_modules/@modelcontextprotocol/sdk);
// CALLS_JSON a list of {"name", "arguments"}. It connects, lists the tools, makes the calls
// in order and prints one JSON report on stdout (over HTTP, the environment variable
// GRAPHKIT_MCP_HEADERS, a JSON object, gives headers to send with every request):
//   {"server": {name, version}, "tools": [...], "calls": [{"result": ...} | {"error": {code, message}}]}
// The assertions live in the Rust tests.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [sdkDir, callsJson, kind, ...target] = process.argv.slice(2);
const load = (file) => import(pathToFileURL(join(sdkDir, 'dist/esm', file)).href);

const { Client } = await load('client/index.js');
let transport;
if (kind === 'http') {
  const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
  const headers = JSON.parse(process.env.GRAPHKIT_MCP_HEADERS ?? '{}');
  transport = new StreamableHTTPClientTransport(new URL(target[0]), { requestInit: { headers } });
} else if (kind === 'stdio') {
  const { StdioClientTransport } = await load('client/stdio.js');
  transport = new StdioClientTransport({
    command: target[0],
    args: target.slice(1),
    env: { ...process.env },
    stderr: 'inherit',
  });
} else {
  console.error(`unknown transport ${kind}; use http or stdio`);
  process.exit(2);
}

const client = new Client({ name: 'graphkit-sdk-test-client', version: '1.0.0' });
await client.connect(transport);
const report = { server: client.getServerVersion(), tools: (await client.listTools()).tools, calls: [] };
for (const call of JSON.parse(callsJson)) {
  try {
    report.calls.push({ result: await client.callTool(call) });
  } catch (error) {
    report.calls.push({ error: { code: error.code ?? null, message: String(error.message ?? error) } });
  }
}
await client.close();
console.log(JSON.stringify(report));
