// Package client is an Agent Auth client: it discovers providers, keeps a
// host identity, connects agents (delegated or autonomous, waiting for
// approval when the provider asks for it), lists, describes, requests and
// executes capabilities, and revokes agents.
//
// # Providers and identities
//
// Client.Discover fetches a provider's discovery document and caches it as
// its Cache-Control allows, for at most 24 hours. Every URL the
// client talks to must use https; plain http is allowed only to loopback
// hosts, and only with Config.AllowInsecureLoopback.
//
// The host is the client's persistent identity towards one provider: an
// Ed25519 key kept in a KeyStore (FileKeyStore by default, files with mode
// 0600) and named by its RFC 7638 thumbprint. Every connection gets a fresh
// agent key, kept in the same store under its own thumbprint.
//
// # Agents
//
// Client.Connect registers an agent and, while the provider's answer is
// pending, hands the approval details (verification URI, user code) to
// ConnectOptions.OnApproval and polls the agent's status with backoff,
// honouring the provider's interval and slow_down. The resulting Agent
// signs a fresh agent JWT for every request: for execution its aud is the
// capability's location (or the provider's default location) and its
// capabilities claim names exactly the capabilities of that request.
// Connection holds what must be saved to act as the agent later, without
// any private key; Client.Resume turns it back into an Agent.
//
// Agent.Execute runs one capability: synchronous answers return their
// data, 202 answers are polled at their status_url, and event streams
// arrive as an iterator of Events. Agent.BatchExecute groups calls by
// location and falls back to single calls where a location has no batch
// endpoint. Failures are *Error values carrying the error code (one of
// package agentcap's codes, or the server's own), the HTTP status, the
// message, the input and constraint violations, the answer's other
// members and Retry-After; 429 and 503 temporarily_unavailable answers
// (the call did not run) are retried a bounded number of times with a
// fresh agent JWT, as are requests with an Idempotency-Key whose
// connection failed; net/http is kept from resending those with the same
// single-use token.
//
// # Previews and confirmations
//
// Agent.Preview runs a capability's dry run and returns what the call
// would do with, for a capability that needs a confirmation, a token bound
// to exactly that call. Executing such a capability without a token
// (WithConfirmationToken, or BatchCall.ConfirmationToken) fails with a
// *ConfirmationRequired carrying the preview and a fresh token, so that a
// caller shows the preview and, once the user agrees, confirms in one
// more call. Refused tokens are *Error values with the codes
// agentcap.CodeConfirmationMismatch, CodeConfirmationExpired,
// CodeConfirmationUsed and CodeInvalidConfirmation (see
// IsConfirmationRefused).
//
// A location may also ask a person to confirm a call (202
// confirmation_pending, with an approval in the shape of a registration's
// and a status URL). Execute then fails with a *ConfirmationPending,
// which Agent.AwaitConfirmation turns into a confirmation token once the
// person approved; with WithConfirmationWait, Execute hands the approval
// to the same kind of callback as ConnectOptions.OnApproval, waits, and
// runs the call with the token.
//
// # Capability sets and tools
//
// A Set gathers the capabilities of several connected agents under
// namespaced names (provider__name by default), with include and exclude
// filters and collision reports. It converts them into tool definitions
// for model APIs (OpenAI-style functions, Anthropic-style tools, MCP
// tools); Set.Call dispatches a tool call back to the agent and the
// capability it came from.
package client
