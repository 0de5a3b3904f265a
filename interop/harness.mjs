// The Agent Auth reference provider (better-auth with the agent-auth
// plugin) on a loopback port, for agentcap's interop tests.
//
//   node harness.mjs --port 4100 --location http://127.0.0.1:4101/capability/execute
//
// The provider's base URL (its issuer) is http://127.0.0.1:PORT/api/auth;
// its discovery document is also served at /.well-known/agent-configuration.
// The location is where the capability "agentcap_echo" executes: an
// agentcap resource server that the Go tests start.
//
// For the tests to act as the approving user, /test/* offers:
//   GET  /test/info      the issuer, the location and the test user's id
//   POST /test/approve   {agent_id, user_code?, action?, capabilities?}:
//                        signs the test user in and calls the provider's
//                        own approve-capability endpoint with that session
//
// When it listens, it prints one line: "ready <base URL>".
import http from "node:http";
import { parseArgs } from "node:util";
import { betterAuth } from "better-auth";
import { memoryAdapter } from "better-auth/adapters/memory";
import { toNodeHandler } from "better-auth/node";
import { agentAuth } from "@better-auth/agent-auth";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: process.env.HARNESS_PORT ?? "4100" },
    location: { type: "string", default: process.env.AGENTCAP_INTEROP_LOCATION ?? "" },
  },
});
const port = Number.parseInt(values.port, 10);
if (!Number.isInteger(port) || port <= 0) {
  console.error(`harness: bad port ${values.port}`);
  process.exit(2);
}
const origin = `http://127.0.0.1:${port}`;
const baseURL = `${origin}/api/auth`;
const location = values.location || `http://127.0.0.1:${port + 1}/capability/execute`;

const user = { email: "approver@interop.test", password: "interop-password-1", name: "Interop Approver" };

// The memory adapter needs every model's array to exist before use.
const db = {
  user: [],
  session: [],
  account: [],
  verification: [],
  agent: [],
  agentHost: [],
  agentCapabilityGrant: [],
  approvalRequest: [],
};

const objectOf = (properties, required) => ({ type: "object", properties, required });

const capabilities = [
  {
    name: "echo",
    description: "Return the message it was given.",
    input: objectOf({ message: { type: "string" } }, ["message"]),
    output: objectOf({ message: { type: "string" } }),
  },
  {
    name: "add",
    description: "Add two numbers.",
    input: objectOf({ a: { type: "number" }, b: { type: "number" } }, ["a", "b"]),
    output: objectOf({ sum: { type: "number" } }),
  },
  {
    name: "transfer",
    description: "Move money between accounts.",
    input: objectOf({ amount: { type: "number" }, currency: { type: "string" } }, ["amount", "currency"]),
    output: objectOf({ transfer_id: { type: "string" }, amount: { type: "number" }, currency: { type: "string" } }),
  },
  {
    name: "agentcap_echo",
    description: "Echo, executed by an agentcap resource server.",
    location,
    input: objectOf({ message: { type: "string" } }, ["message"]),
    output: objectOf({ message: { type: "string" } }),
  },
];

let transfers = 0;
let testUser = null;

const auth = betterAuth({
  baseURL,
  secret: "agentcap-interop-secret-not-for-production-0123456789",
  database: memoryAdapter(db),
  emailAndPassword: { enabled: true },
  trustedOrigins: [origin],
  logger: { level: "error" },
  plugins: [
    agentAuth({
      providerName: "agentcap-interop",
      providerDescription: "The reference provider under agentcap's interop tests",
      allowDynamicHostRegistration: true,
      capabilities,
      // Autonomous hosts get echo and add without approval; delegated
      // agents always ask the user.
      defaultHostCapabilities: ({ mode }) => (mode === "autonomous" ? ["echo", "add"] : []),
      // Autonomous agents act for no user; the provider still needs one
      // to build their session, so they run as the test user.
      resolveAutonomousUser: async () => testUser,
      onExecute: async ({ capability, arguments: args }) => {
        switch (capability) {
          case "echo":
            return { message: args?.message };
          case "add":
            return { sum: Number(args?.a) + Number(args?.b) };
          case "transfer":
            transfers += 1;
            return { transfer_id: `tr_${transfers}`, amount: args?.amount, currency: args?.currency };
          default:
            throw new Error(`capability ${capability} does not execute here`);
        }
      },
    }),
  ],
});

const authHandler = toNodeHandler(auth);

async function readJSON(req) {
  const chunks = [];
  let size = 0;
  for await (const c of req) {
    size += c.length;
    if (size > 1 << 20) throw new Error("body too large");
    chunks.push(c);
  }
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : {};
}

function send(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

// approve signs the test user in and approves (or denies) through the
// provider's own endpoint, the way the user's browser would.
async function approve(body) {
  const signIn = await auth.api.signInEmail({
    body: { email: user.email, password: user.password },
    asResponse: true,
  });
  if (!signIn.ok) {
    return { status: signIn.status, body: await signIn.json().catch(() => ({})) };
  }
  const cookie = (signIn.headers.getSetCookie?.() ?? [signIn.headers.get("set-cookie")])
    .filter(Boolean)
    .map((c) => c.split(";")[0])
    .join("; ");
  const res = await auth.api.approveCapability({
    body: {
      agent_id: body.agent_id,
      ...(body.user_code ? { user_code: body.user_code } : {}),
      action: body.action ?? "approve",
      ...(body.capabilities ? { capabilities: body.capabilities } : {}),
    },
    headers: new Headers({ cookie, origin }),
    asResponse: true,
  });
  return { status: res.status, body: await res.json().catch(() => ({})) };
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, origin);
    if (url.pathname === "/.well-known/agent-configuration") {
      req.url = "/api/auth/agent-configuration";
      return authHandler(req, res);
    }
    if (url.pathname.startsWith("/api/auth/")) {
      return authHandler(req, res);
    }
    if (url.pathname === "/test/info" && req.method === "GET") {
      return send(res, 200, { base_url: baseURL, issuer: baseURL, location, user_id: testUser?.id ?? null });
    }
    if (url.pathname === "/test/approve" && req.method === "POST") {
      const { status, body } = await approve(await readJSON(req));
      return send(res, status, body);
    }
    return send(res, 404, { error: "not_found", message: `no route ${url.pathname}` });
  } catch (err) {
    console.error("harness:", err);
    return send(res, 500, { error: "internal_error", message: String(err?.message ?? err) });
  }
});

const created = await auth.api.signUpEmail({ body: user });
testUser = created.user;

server.listen(port, "127.0.0.1", () => {
  console.log(`ready ${baseURL}`);
});

for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => server.close(() => process.exit(0)));
}
