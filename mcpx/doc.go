// Package mcpx serves a core executor's capabilities as Model Context
// Protocol tools, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): the same registry, the same
// executor and the same authentication (one auth.Verifier) as httpx, for
// every MCP client.
//
// [New] builds a [Server] over a core.Source: a built *core.Executor or
// a *core.LazyExecutor. A Server is an [http.Handler] for the Streamable
// HTTP transport, to mount like httpx (net/http with [Server.Handle], Gin,
// Echo and Fiber with the MountMCP function of ginx, echox and fiberx),
// and serves stdio and the SDK's other transports with [Server.Run]: for
// stdio, s.Run(ctx, &mcp.StdioTransport{}, id). No credentials travel over
// those transports, so Run takes the caller's *auth.Identity from the
// process that starts the server (nil: the anonymous caller).
//
// # Tools
//
// tools/list answers, page by page (Config.PageSize, opaque cursors), the
// capabilities the caller may see: the executor's visibility rules, as in
// httpx's listing (and, for a caller whose scopes are its grants, only
// those granted: see Step-up authorization). The caller's Authorizer (auth.Identity.Authorizer)
// gives each tool's grant status, under _meta "agentcap/grant_status"
// ([MetaGrantStatus]) when it reports one. Each tool has the capability's name, title (set with
// core.WithTitle, else made from the name), description, input schema and
// output schema, and annotations derived from the definition: readOnlyHint
// for a low-risk capability declared with core.WithReadOnly,
// destructiveHint for high and critical risk. MCP wants objects in
// schemas and structured content, so a capability whose output is not an
// object (a list) has its schema and structured content wrapped as
// {"result": ...}; the text content is always the result itself.
//
// tools/call runs the executor on the raw arguments, parsed once and
// strictly, through the caller's Authorizer (auth.Identity), the context
// function, the handler and output validation, exactly as httpx's
// execute. A result is structuredContent plus its JSON text. An
// application error, a refusal (unauthorized, capability_not_granted,
// constraint_violated), invalid arguments or an internal failure is a
// result with isError set, whose text (and _meta MetaError) is the kit's
// error envelope (agentcap.AppendError), the one httpx answers with:
// {"error": code, "message": ..., ...}. Only a malformed request
// (arguments that are not an object, a bad cursor, a confirmation token
// that is not a string) and an unknown tool, or one the caller may not
// see, are protocol errors (invalid params).
// A canceled call is stopped and answered with nothing: over HTTP the
// client cancels by closing the call's response stream (see "Stateless
// HTTP"), over stdio and the SDK's other stream transports by
// notifications/cancelled, after which the server sends no result for
// the call. Progress a capability reports with core.ReportProgress
// reaches a client that sent a progress token as notifications/progress,
// on the call's own response stream over HTTP.
//
// # Confirmations
//
// A capability whose calls must be confirmed (core.WithConfirmation, or
// the executor's confirmation rule: see core.Source.NeedsConfirmation) is
// listed with _meta {"agentcap/requires_confirmation": true}
// ([agentcap.MCPMetaRequiresConfirmation]). A call of it that carries no
// token is refused by the executor with confirmation_required, a preview
// and a fresh token, and then:
//
//   - When the client declared the elicitation capability (form mode)
//     and the question can reach it, the server asks the client's user:
//     one form elicitation, under the input request id
//     [agentcap.MCPElicitationID], whose message names the tool and
//     shows the arguments and the preview (also under its _meta as
//     "agentcap/capability", "agentcap/arguments" and
//     "agentcap/preview") and whose form is empty. On protocol versions
//     since 2026-07-28 the tool result asks for that input and the client
//     calls again with the answer, over HTTP and stdio alike. On older
//     versions the server sends elicitation/create during the call, which
//     only a connection that carries requests both ways can do: over
//     stdio, not over the stateless HTTP endpoint, whose older clients get
//     the preview and token below. The token travels as the request
//     state, so nothing is kept between the two: accept consumes it and
//     runs the call; decline or cancel is an error result with the code
//     confirmation_declined (agentcap.CodeConfirmationDeclined) and
//     "action".
//     Elicitation trusts the client to show the request to its user, as
//     any MCP client is trusted with its user's tools.
//   - Otherwise the error result carries the confirmation_required
//     envelope (text and _meta MetaError, with "preview" and
//     "confirmation": {"token", "expires_at"}), and the caller confirms by
//     calling the tool again with the same arguments and the token in the
//     request's _meta: {"agentcap/confirmation_token": "cfm_..."}
//     ([MetaConfirmationToken]). Arguments stay exactly the capability's:
//     the token is metadata of the call, not an argument. A token that is
//     not a string is invalid params; refusals of the token (used,
//     expired, another call's, invalid) are error results with the same
//     codes as over HTTP.
//
// A token belongs to the caller that was given it (auth.Identity.Subject):
// another caller cannot use it, and an anonymous caller cannot confirm.
//
// docs/confirmation.md in the module documents tokens and codes in full.
//
// # Lazy executors
//
// New over a core.LazyExecutor (core.Lazy) serves an executor built on
// first use: tools/list answers from the registry alone, the first
// tools/call builds the executor (concurrent first calls share the build),
// and while the build fails a call is an error result with the envelope
// an HTTP execute gets then (temporarily_unavailable). An httpx handler
// over the same LazyExecutor shares its one build.
//
// # Authentication
//
// Over HTTP every request is verified by Config.Verifier, the one seam of
// package auth: OAuth 2.1 bearer tokens through auth/oidcauth (whose
// verifier checks issuer, audience and expiry: give it the endpoint's own
// URL as audience), or Agent Auth agent JWTs through agentauth.New (or an
// agentauth/provider's EndpointVerifier), a fresh one per request. As the
// MCP authorization specification asks, the endpoint publishes OAuth
// Protected Resource Metadata (RFC 9728) at
// /.well-known/oauth-protected-resource and its path-suffixed form
// ([Server.Metadata], [Server.MetadataPaths]), and answers a missing or
// bad token with 401 and WWW-Authenticate: Bearer resource_metadata="..."
// (with error="invalid_token" for a token that does not verify, and
// scope="..." naming Config.ScopesSupported, space-separated, when there
// are any), followed by the verifier's own challenge when it names one
// (auth.Challenger: agentauth's AgentAuth discovery challenge). Every
// request acts, so a verifier that admits no credentials (no identity and
// no error) is answered as a request without them. The verifier's other refusals are
// answered in its own words, in the kit's error envelope with their status
// (and Retry-After); a failure of its own is a redacted internal_error.
//
// An identity without a Subject is refused (403 unauthorized): a
// confirmation token belongs to a Subject. Requests whose Origin is
// neither the endpoint's own nor trusted are refused, and the SDK refuses
// requests that reach a loopback listener under another host name (DNS
// rebinding). Bodies are limited to Config.MaxBodyBytes and read, before
// the SDK decodes them, by the strict JSON reader httpx reads execute
// bodies with: a body that names a member twice in one object, at any
// depth (two "name" or "arguments" members of a tools/call, two
// "method"s), or holds invalid UTF-8 is refused with 400 and a JSON-RPC
// parse error, since the SDK would run the last of two members while a
// gateway or an audit tap reading the first would see another call.
//
// # Step-up authorization
//
// An OAuth access token whose scopes are the caller's grants (an
// identity with auth.Identity.ScopeChallenge, as agentauth/provider's
// OAuth access tokens verify to) is served so that a client asks its
// user for what it lacks, as the MCP authorization specification's
// step-up flow wants. tools/list lists only the tools whose capability
// the identity's Authorizer reports as granted (GrantStatus "granted";
// without an Authorizer, every tool it may see). Over HTTP, a POST whose
// message is one tools/call request of a tool the caller may see (as a
// call sees it) but is not granted (GrantStatus "not_granted") is
// answered before the SDK with 403 Forbidden and
//
//	WWW-Authenticate: Bearer error="insufficient_scope", scope="<tool>", resource_metadata="<metadata URL>", error_description="the access token does not grant this tool"
//
// and, in JSON, a JSON-RPC error response to the call's id with the code
// invalid params (-32602, as for a tool the caller may not see) and, as
// its data, the kit's capability_not_granted envelope. The client gets a
// token for the named scope (a grant of the capability) and calls again.
// An unknown tool, one the caller may not see, a granted one, and any
// other message (a notification, a batch, another method) are served as
// for any caller, and so is such a call over stdio (an error result with
// capability_not_granted, as for every caller without ScopeChallenge).
//
// # Stateless HTTP
//
// The HTTP endpoint keeps no sessions: each POST is served on its own,
// by the SDK's stateless Streamable HTTP handler, and answered on its
// own response (server-sent events, so that progress reaches the client
// before the result). That serves every protocol version of the SDK:
// 2026-07-28, which has no sessions (server/discover, then every request
// carrying its version, client information and capabilities), and the
// older ones, whose initialize is answered without an Mcp-Session-Id,
// after which each request stands alone. So several instances behind a
// round-robin balancer need no sticky routing, and nothing is kept in
// memory between requests. What a stateless server cannot do:
//
//   - Send a request to the client during a call (elicitation/create):
//     a client older than 2026-07-28 confirms by preview and token (see
//     Confirmations).
//   - Keep a stream open for notifications outside a call: GET, and
//     DELETE to end a session, are answered 405. The tools of a server
//     never change (they come from an immutable registry), so there is
//     no tools/list_changed to miss.
//   - Find a call from a notifications/cancelled sent in another POST.
//     Instead the end of the call's own request cancels it, whatever the
//     protocol version: a client that gives up closes the response
//     stream (which is how 2026-07-28 cancels), and nobody could receive
//     the result then. Fiber notices a closed connection only when
//     something is written (see fiberx.MountMCP), so there a call that
//     writes nothing runs to its end.
package mcpx
