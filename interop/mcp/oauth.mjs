// Drives an MCP endpoint whose authorization server is agentcap's
// provider with the OAuth client of the official TypeScript MCP SDK
// (StreamableHTTPClientTransport with an OAuthClientProvider), for the Go
// interop test TestMCPInteropOAuth (examples/bank, build tag
// mcpinterop), which plays the user in a browser.
//
//   node oauth.mjs MCP_URL [CLIENT_METADATA_URL]
//
// With CLIENT_METADATA_URL the client identifies itself by that Client
// ID Metadata Document; without it, it registers itself (Dynamic Client
// Registration).
//
// Its redirect URI is http://127.0.0.1:PORT/callback, served here. It
// talks to the test in lines. On stdout:
//
//   authorize URL    the SDK asks to send the user to URL; the test
//                    does, and the browser lands on the redirect URI,
//                    which hands the code to the script;
//   {"step": ...}    what a step did, as one JSON object.
//
// On stdin it reads one line, "revoked", once the user has revoked the
// client's agent (metadata document mode only). Every wait is bounded;
// the script exits by itself.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, extractWWWAuthenticateParams, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const WAIT_MS = 60_000;

const print = (v) => process.stdout.write(JSON.stringify(v) + '\n');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// within rejects when promise has not settled after WAIT_MS.
function within(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${WAIT_MS / 1000} s`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// exchanges records every HTTP exchange of the SDK (discovery, token
// requests, MCP requests) as method, path and status, with the error a
// Bearer challenge names; a step reports those it caused.
const exchanges = [];
let lastChallenge = {};

async function recordingFetch(input, init = {}) {
  const res = await fetch(input, init);
  const u = new URL(input instanceof Request ? input.url : String(input));
  const challenge = extractWWWAuthenticateParams(res);
  if (res.status === 401 || res.status === 403) {
    lastChallenge = challenge;
  }
  exchanges.push({
    method: init.method ?? (input instanceof Request ? input.method : 'GET'),
    path: u.pathname,
    status: res.status,
    ...(challenge.error ? { error: challenge.error } : {}),
  });
  return res;
}

// since returns the exchanges recorded after mark, a length of exchanges.
const since = (mark) => exchanges.slice(mark);

// The redirect URI's server: each authorization the SDK starts waits
// for one visit of /callback with the state it sent.
function startCallbackServer() {
  let pending = null;
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://127.0.0.1');
    if (u.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end('<!doctype html><title>Authorized</title><p id="callback-done">You can close this page.</p>');
    if (pending) {
      const resolve = pending;
      pending = null;
      resolve(u.searchParams);
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve({
        server,
        redirectUrl: `http://127.0.0.1:${server.address().port}/callback`,
        expect() {
          return new Promise((resolve) => {
            pending = resolve;
          });
        },
      });
    });
  });
}

// InteropProvider is the OAuthClientProvider: it keeps everything in
// memory, prints where the SDK sends the user, and records the tokens it
// is given and the credentials it is told to drop.
class InteropProvider {
  constructor(callbacks, clientMetadataUrl) {
    this.callbacks = callbacks;
    if (clientMetadataUrl) {
      this.clientMetadataUrl = clientMetadataUrl;
    }
    this.saved = [];
    this.invalidated = [];
    this.authorizations = 0;
    this.callback = null;
  }

  get redirectUrl() {
    return this.callbacks.redirectUrl;
  }

  // Sent only when registering dynamically.
  get clientMetadata() {
    return {
      client_name: 'agentcap interop (TypeScript SDK, registered)',
      redirect_uris: [this.callbacks.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() {
    this._state = randomUUID();
    return this._state;
  }

  clientInformation() {
    return this._client;
  }

  saveClientInformation(info) {
    this._client = info;
  }

  tokens() {
    return this._tokens;
  }

  saveTokens(tokens) {
    this._tokens = tokens;
    this.saved.push({ at: Date.now(), access: tokens.access_token, refresh: tokens.refresh_token, expiresIn: tokens.expires_in, scope: tokens.scope ?? '' });
  }

  redirectToAuthorization(url) {
    this.authorizations++;
    this.callback = this.callbacks.expect();
    process.stdout.write(`authorize ${url.href}\n`);
  }

  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }

  codeVerifier() {
    return this._verifier;
  }

  invalidateCredentials(scope) {
    this.invalidated.push(scope);
    if (scope === 'all' || scope === 'client') this._client = undefined;
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'verifier') this._verifier = undefined;
  }

  // code waits for the browser to reach the redirect URI after the
  // authorization the SDK last started, and returns its code and iss
  // once its state is the one sent.
  async code() {
    if (!this.callback) {
      throw new Error('no authorization was started');
    }
    const params = await within(this.callback, 'visit of the redirect URI');
    this.callback = null;
    if (params.get('state') !== this._state) {
      throw new Error(`the redirect carries state ${params.get('state')}, not the one sent`);
    }
    if (params.get('error')) {
      throw new Error(`authorization refused: ${params.get('error')} ${params.get('error_description') ?? ''}`);
    }
    return { code: params.get('code'), iss: params.get('iss') };
  }
}

const text = (res) => res.content.map((c) => c.text).join('');

const summary = (name, res) => ({ name, isError: res.isError === true, text: text(res) });

const newClient = () => new Client({ name: 'agentcap-oauth-interop', version: '1.0.0' });

// connect connects as the SDK's examples do: the first attempt ends in
// UnauthorizedError once the SDK has sent the user to authorize; the
// code the browser brings back goes to transport.finishAuth, and a new
// transport connects with the tokens.
async function connect(url, provider) {
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recordingFetch });
  try {
    await newClient().connect(first);
    throw new Error('connected without authorization');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  const { code, iss } = await provider.code();
  await first.finishAuth(code);
  await first.close();
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recordingFetch });
  const client = newClient();
  await client.connect(transport);
  return { client, transport, iss };
}

// waitLine resolves on the first line of stdin that is want.
function waitLine(want) {
  const lines = createInterface({ input: process.stdin });
  return within(
    new Promise((resolve, reject) => {
      lines.on('line', (line) => {
        if (line.trim() === want) resolve();
      });
      lines.on('close', () => reject(new Error(`stdin ended before "${want}"`)));
    }),
    `"${want}" on stdin`,
  ).finally(() => lines.close());
}

async function main(mcpURL, clientMetadataUrl) {
  const url = new URL(mcpURL);
  const callbacks = await startCallbackServer();
  const provider = new InteropProvider(callbacks, clientMetadataUrl);

  // Connect: 401, discovery, registration or the metadata document,
  // authorization in the browser, the code exchanged.
  let mark = exchanges.length;
  const { client, transport, iss } = await connect(url, provider);
  print({
    step: 'connected',
    clientId: provider.clientInformation()?.client_id ?? null,
    iss,
    scope: provider.tokens()?.scope ?? '',
    expiresIn: provider.tokens()?.expires_in ?? null,
    server: client.getServerVersion()?.name ?? null,
    exchanges: since(mark),
  });

  const { tools } = await client.listTools();
  print({ step: 'tools', names: tools.map((t) => t.name) });

  print({ step: 'call', ...summary('check_balance', await client.callTool({ name: 'check_balance', arguments: { account_id: 'acc_123' } })) });

  if (!clientMetadataUrl) {
    await client.close();
    callbacks.server.close();
    return;
  }

  // A tool the user did not grant: 403 insufficient_scope naming it.
  mark = exchanges.length;
  const before = provider.saved.length;
  let by;
  let sdkError = null;
  try {
    await client.callTool({ name: 'list_accounts', arguments: {} });
    throw new Error('list_accounts was called without its grant');
  } catch (e) {
    if (e instanceof UnauthorizedError) {
      // The SDK sent the user to authorize the scope itself.
      by = 'sdk';
    } else if (e instanceof StreamableHTTPError && e.code === 403 && lastChallenge.error === 'insufficient_scope') {
      // The SDK's answer to insufficient_scope is auth() with the
      // challenge's scope, which refreshes the tokens it holds rather
      // than asking the user: the fresh token grants no more, the call
      // is refused again and the SDK gives up. An application then does
      // what the challenge asks: it drops its tokens and authorizes
      // again with that scope.
      by = 'script';
      sdkError = e.message;
      provider.invalidateCredentials('tokens');
      const result = await auth(provider, { serverUrl: url, scope: lastChallenge.scope, resourceMetadataUrl: lastChallenge.resourceMetadataUrl, fetchFn: recordingFetch });
      if (result !== 'REDIRECT') throw new Error(`auth() with the scope answered ${result}`);
    } else {
      throw e;
    }
  }
  const refreshedBefore = provider.saved.length - before;
  const stepUpScope = lastChallenge.scope ?? null;
  const { code } = await provider.code();
  await transport.finishAuth(code);
  const granted = await client.callTool({ name: 'list_accounts', arguments: {} });
  print({
    step: 'step-up',
    by,
    sdkError,
    challengeScope: stepUpScope,
    tokensSavedBeforeAsking: refreshedBefore,
    scope: provider.tokens()?.scope ?? '',
    exchanges: since(mark),
    ...summary('list_accounts', granted),
  });

  // The access token expires; the SDK refreshes on the 401.
  const last = provider.saved.at(-1);
  await sleep(Math.max(0, last.at + last.expiresIn * 1000 + 500 - Date.now()));
  mark = exchanges.length;
  const savedBefore = provider.saved.length;
  const afterExpiry = await client.callTool({ name: 'check_balance', arguments: { account_id: 'acc_123' } });
  const now = provider.saved.at(-1);
  print({
    step: 'refreshed',
    tokensSaved: provider.saved.length - savedBefore,
    accessChanged: now.access !== last.access,
    refreshChanged: now.refresh !== last.refresh,
    exchanges: since(mark),
    ...summary('check_balance', afterExpiry),
  });

  // The user revokes the agent; the refresh fails and the SDK asks for
  // authorization again.
  print({ step: 'waiting' });
  await waitLine('revoked');
  mark = exchanges.length;
  const asked = provider.authorizations;
  const dropped = provider.invalidated.length;
  let error = null;
  try {
    await client.callTool({ name: 'check_balance', arguments: { account_id: 'acc_123' } });
  } catch (e) {
    error = e instanceof UnauthorizedError ? 'UnauthorizedError' : `${e.name}: ${e.message}`;
  }
  print({
    step: 'revoked',
    error,
    askedAgain: provider.authorizations - asked,
    invalidated: provider.invalidated.slice(dropped),
    exchanges: since(mark),
  });
  await client.close();
  callbacks.server.close();
}

const [mcpURL, clientMetadataUrl] = process.argv.slice(2);
if (!mcpURL) {
  console.error('usage: node oauth.mjs MCP_URL [CLIENT_METADATA_URL]');
  process.exit(2);
}
main(mcpURL, clientMetadataUrl).then(
  () => process.exit(0),
  (e) => {
    console.error(e?.stack ?? String(e));
    process.exit(1);
  },
);
