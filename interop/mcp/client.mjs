// Drives agentcap's MCP servers with the official TypeScript MCP SDK
// client, for the Go interop tests (examples/bank, build tag mcpinterop),
// which start the servers, read what this prints on stdout (one JSON
// object per line) and check it.
//
//   node client.mjs server ENDPOINT TOKEN_URL
//     Streamable HTTP to ENDPOINT; every HTTP request carries a fresh
//     agent JWT, fetched from TOKEN_URL just before it is sent.
//   node client.mjs agentcap AGENTCAP_BINARY STATE_DIR PROVIDER_URL
//     stdio to `agentcap mcp`: connects an agent with the lifecycle tool,
//     prints the approval, waits for a line on stdin saying the user
//     approved, then for tools/list_changed, and calls the new tool.
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const print = (v) => process.stdout.write(JSON.stringify(v) + '\n');

const text = (res) => res.content.map((c) => c.text).join('');

const summary = (res) => ({ isError: res.isError === true, text: text(res), structuredContent: res.structuredContent ?? null });

async function server(endpoint, tokenURL) {
  const signedFetch = async (input, init = {}) => {
    const token = await (await fetch(tokenURL)).text();
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${token.trim()}`);
    return fetch(input, { ...init, headers });
  };
  const client = new Client({ name: 'agentcap-interop', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), { fetch: signedFetch });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const calls = [];
  for (const [name, args] of [
    ['check_balance', { account_id: 'acc_123' }],
    ['check_balance', { account_id: 'acc_456' }],
    ['transfer_money', { source_account: 'acc_123', destination_account: 'acc_456', amount: 1500, currency: 'USD' }],
    ['list_accounts', {}],
  ]) {
    calls.push({ name, ...summary(await client.callTool({ name, arguments: args })) });
  }
  let unknown = null;
  try {
    await client.callTool({ name: 'no_such_tool', arguments: {} });
  } catch (e) {
    unknown = { code: e.code, message: e.message };
  }
  print({
    server: client.getServerVersion()?.name ?? null,
    // The version the session speaks, and the newest this SDK knows.
    protocolVersion: transport.protocolVersion ?? null,
    latestProtocolVersion: LATEST_PROTOCOL_VERSION,
    sessionId: transport.sessionId ?? null,
    tools: tools.map((t) => ({ name: t.name, title: t.title ?? null, annotations: t.annotations ?? null, outputSchema: Boolean(t.outputSchema) })),
    calls,
    unknown,
  });
  await client.close();
}

async function agentcap(binary, state, provider) {
  let changed = 0;
  let notify = () => {};
  const client = new Client({ name: 'agentcap-interop', version: '1.0.0' }, {
    listChanged: {
      tools: {
        autoRefresh: false,
        onChanged: () => {
          changed++;
          notify();
        },
      },
    },
  });
  const transport = new StdioClientTransport({
    command: binary,
    args: ['mcp', '--url', provider, '--insecure-loopback', '--state', state, '--refresh', '0'],
    stderr: 'inherit',
  });
  await client.connect(transport);
  const before = (await client.listTools()).tools.map((t) => t.name);
  const connect = summary(await client.callTool({
    name: 'agentcap_connect',
    arguments: { url: provider, capabilities: ['check_balance'], reason: 'interop test' },
  }));
  print({ step: 'approval', before, connect });
  // The Go test approves as the user, then says so.
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (line.trim() === 'approved') break;
  }
  lines.close();
  if (changed === 0) {
    await new Promise((resolve, reject) => {
      notify = resolve;
      setTimeout(() => reject(new Error('no tools/list_changed within 30 s')), 30000);
    });
  }
  const after = (await client.listTools()).tools;
  const tool = after.find((t) => t.name.endsWith('__check_balance'));
  const calls = [];
  if (tool) {
    calls.push(summary(await client.callTool({ name: tool.name, arguments: { account_id: 'acc_123' } })));
    calls.push(summary(await client.callTool({ name: tool.name, arguments: { account_id: 'acc_456' } })));
  }
  const status = summary(await client.callTool({ name: 'agentcap_status', arguments: {} }));
  print({ step: 'done', after: after.map((t) => t.name), calls, status });
  await client.close();
}

const [mode, ...args] = process.argv.slice(2);
const run = { server, agentcap }[mode];
if (!run) {
  console.error('usage: node client.mjs server ENDPOINT TOKEN_URL | agentcap BINARY STATE PROVIDER');
  process.exit(2);
}
run(...args).then(
  () => process.exit(0),
  (e) => {
    console.error(e?.stack ?? String(e));
    process.exit(1);
  },
);
