// Package mcpx serves a core executor's capabilities as Model Context
// Protocol tools, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): the same registry, the same
// executor and the same authentication as httpx, for every MCP client.
//
// A [Server] is an [http.Handler] for the Streamable HTTP transport, to
// mount like httpx (net/http with [Server.Handle], Gin, Echo and Fiber
// with the MountMCP function of ginx, echox and fiberx), and serves stdio
// and the SDK's other transports with [Server.Run] and
// [Server.ServeStdio].
//
// # Tools
//
// tools/list answers, page by page (Config.PageSize, opaque cursors), the
// capabilities the caller may see: the executor's visibility rules, as in
// httpx's listing. Each tool has the capability's name, title (set with
// core.WithTitle, else made from the name), description, input schema and
// output schema, and annotations derived from the definition: readOnlyHint
// for a low-risk capability declared with core.WithReadOnly,
// destructiveHint for high and critical risk. MCP wants objects in
// schemas and structured content, so a capability whose output is not an
// object (a list) has its schema and structured content wrapped as
// {"result": ...}; the text content is always the result itself.
//
// tools/call runs the executor on the raw arguments, parsed once and
// strictly, through Config.Authorize, the context resolver, the handler
// and output validation, exactly as httpx's execute. A result is
// structuredContent plus its JSON text. An application error, a refusal
// (forbidden, not granted, constraint violated), invalid arguments or an
// internal failure is a result with isError set, whose text (and _meta
// MetaError) is the error envelope httpx would answer with:
// {"error": code, "message": ..., ...}. Only a malformed request
// (arguments that are not an object, a bad cursor) and an unknown tool,
// or one the caller may not see, are protocol errors (invalid params).
// notifications/cancelled cancels the call's context; progress a
// capability reports with core.ReportProgress reaches a client that sent
// a progress token as notifications/progress.
//
// # Lazy executors
//
// NewLazy (or NewSource with any core.ExecutorSource) serves an executor
// built on first use by a core.LazyExecutor made with core.LazyFor:
// tools/list answers from the registry alone, the first tools/call builds
// the executor (concurrent first calls share the build), and while the
// build fails a call is an error result with the envelope httpx answers
// then (temporarily_unavailable). An httpx handler from httpx.NewLazy over
// the same LazyExecutor shares its one build.
//
// # Authentication
//
// Over HTTP every request is authenticated by Config.Authenticate, the
// httpx authenticator contract: OAuth 2.1 bearer tokens through
// httpx/oidcauth (whose verifier checks issuer, audience and expiry: give
// it the endpoint's own URL as audience), or Agent Auth agent JWTs through
// agentauth's wiring ([AgentAuth]), a fresh one per request. As the MCP
// authorization specification asks, the endpoint publishes OAuth
// Protected Resource Metadata (RFC 9728) at
// /.well-known/oauth-protected-resource and its path-suffixed form
// ([Server.Metadata], [Server.MetadataPaths]), and answers a missing or
// bad token with 401 and WWW-Authenticate: Bearer resource_metadata="...".
//
// Sessions belong to who opened them (Config.SessionOwner): another
// principal presenting the session id is refused. Requests whose Origin is
// neither the endpoint's own nor trusted are refused, and the SDK refuses
// requests that reach a loopback listener under another host name (DNS
// rebinding). Bodies are limited to Config.MaxBodyBytes. Sessions live in
// the process: several instances behind a load balancer need sticky
// routing by the Mcp-Session-Id header.
package mcpx
