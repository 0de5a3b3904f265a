// Package httpx serves a core executor over HTTP in the Agent Auth wire
// format, so that one client speaks to every transport.
//
// [New] takes a core.Source (a built *core.Executor, or a
// *core.LazyExecutor) and a [Config] whose Verifier (package auth) tells
// who calls. The security boundary is that Verifier: every request but
// an anonymous listing carries credentials it verified, and the
// *auth.Identity it returns reaches the executor, whose context function
// re-reads what the caller may do.
//
// A [Handler] answers four routes, relative to where it is mounted:
//
//	GET  capability/list                summaries the caller may see
//	GET  capability/describe?name=      one capability with its JSON Schemas
//	POST capability/execute             {capability, arguments} -> {data}
//	POST capability/batch-execute       {requests:[...]} -> {responses:[...]}
//
// and two more, the first when it runs jobs, the second when a capability
// has a preview:
//
//	GET, DELETE capability/status?id=   poll or cancel a job
//	POST capability/preview             {capability, arguments} -> {preview, confirmation?}
//
// List and describe entries carry the capability's risk,
// supports_preview and requires_confirmation, and its title
// (core.WithTitle) and "read_only": true (core.WithReadOnly) when it
// declares them; describe adds the
// preview's preview_schema (see docs/confirmation.md).
//
// A call that a person must confirm (core.WithHumanConfirmation) and
// carries no token answers 202 {"status":"confirmation_pending",
// "message","approval","status_url","preview"} with Retry-After: the
// approval's interval; the caller polls status_url for the token (see
// docs/confirmation.md). Its preview answers
// "requires_human_confirmation": true and no confirmation.
//
// Mount it with [http.StripPrefix] on a mux, or through the ginx, echox and
// fiberx packages on an existing router. Every transport goes through
// [Handler.Serve], a transport-neutral request/response pair, so status
// codes, headers and bodies are byte-identical whatever serves them.
//
// # Callers
//
// [Config.Verifier] verifies every request: agentauth's verifier for
// Agent Auth agents, auth/oidcauth's for OpenID Connect ID tokens, or the
// application's own (auth.VerifierFunc). It is told the Authorization
// header, the caller's address, any other header, and whether the
// request only lists or describes (auth.Request.Discovery). Its refusal
// is answered in its own words: auth.ErrNoCredentials is 401
// authentication_required, a bad, expired or otherwise unusable token is
// 401 invalid_jwt, and any *agentcap.Error its own code and status (403
// agent_revoked, 429 rate_limited, 503 temporarily_unavailable, ...);
// any other error is a 500 internal_error, its cause logged. Every 401
// carries the verifier's challenge as WWW-Authenticate, when it names one
// (auth.Challenger).
//
// A verifier that admits anonymous callers returns no identity, without
// an error, for a listing without credentials: list and describe then
// show the capabilities whose visibility (core.WithVisibility) admits a
// nil identity. Execution always needs an identity: an anonymous execute,
// preview or batch is 401 authentication_required.
//
// The identity's Authorizer (auth.Authorizer) decides each execute,
// preview and batch item, after the arguments are validated, and its
// GrantStatus adds "grant_status" to list and describe entries. A
// capability the caller may not see is left out of listings, is 404 on
// describe, and is refused by the executor exactly like an unknown one
// (404 capability_not_found), before its arguments are looked at.
//
// # Lazy executors
//
// Over a *core.LazyExecutor (core.Lazy), list and describe are answered
// from the registry alone and never start the build; the first execute
// or batch builds the executor, concurrent first calls share one build,
// and while the build fails executions are answered 503
// temporarily_unavailable with Retry-After (the cause logged, the failure
// not kept). The ginx, echox and fiberx mounts take the handler as it
// is, so every router gets the same.
//
// # Errors
//
// Failures use the Agent Auth error envelope
//
//	{"error": "<code>", "message": "<public text>", ...extra members}
//
// written by agentcap.AppendError from an *agentcap.Error, whose code
// gives the status (agentcap.Code.HTTPStatus). invalid_request carries an
// "errors" array of {path, message} with JSON Pointers into the
// arguments. The error's Fields follow in key order and never replace
// "error" or "message"; its RetryAfter becomes a Retry-After header.
// Internal failures are logged with their hidden cause on
// [Config.Logger] and answered with a generic message.
//
// # Request handling
//
// Checks run in a fixed order, so the same bad request fails the same way
// on every transport: route (404), method (405 with Allow), authentication
// (401/403), content type of a POST (415), body size (413), body syntax and
// shape (400), then the executor. Bodies are limited on the wire and again
// after gzip or deflate Content-Encoding is decoded.
//
// Every response is JSON with Content-Type application/json, ends in a
// newline, and carries Cache-Control: successful list and describe
// responses use [Config.ListCacheControl], everything else "no-store".
//
// # Streams, jobs and idempotency keys
//
// [Config.LongRunning] configures the answers of calls that do not fit
// one quick request/response:
//
//   - A streaming capability (core.DefineStream) answers 200
//     text/event-stream once its handler starts: one "data" event per
//     chunk (each validated against the chunk schema that describe
//     publishes as "chunk", with "streaming": true), then "done" with the
//     final result; or, on failure, "error" with the error envelope
//     followed by an empty "done". A call refused before its handler
//     starts (bad input, no grant) gets an ordinary JSON error. Every
//     event is flushed as it is written, under net/http, Gin, Echo and
//     Fiber alike. A stream ends when its client goes away (the
//     execution is cancelled), after StreamMaxDuration (error
//     stream_expired), and when the identity's Authorizer refuses a
//     Recheck (every RecheckInterval; for Agent Auth, a revoked agent or
//     host), with an error event rendering the refusal. A caller runs
//     at most MaxStreamsPerOwner streams at once (8); past it a stream is
//     refused 429 rate_limited with Retry-After before it starts.
//   - An async capability (core.WithAsync), and with AsyncAfter any call
//     still running after that long, answers 202
//     {"status":"pending","status_url":...,"retry_after":N} with
//     Retry-After: N, and runs on as a job (package jobs) with its own
//     deadline. GET status_url answers 200 with the same shape while
//     pending (with the latest "progress", if the handler reported any),
//     {"status":"completed","result":...} or
//     {"status":"failed","error":{"error":code,"message":...,"code":code}}.
//     DELETE status_url cancels a pending job (it fails with "cancelled").
//     A caller at the job manager's bounds (jobs.Manager.Admit: jobs
//     running, jobs kept) gets 429 rate_limited with Retry-After for an
//     async call, which does not run; a call past AsyncAfter then stays
//     an ordinary call. A result too long to keep fails the job.
//     Only the caller that started a job (the same identity Subject)
//     sees it; any other gets 404 job_not_found. The status URL is a
//     resource of the location that ran the job: when the identity's
//     Authorizer is an auth.JobAuthorizer, it must admit the credentials
//     for the job's capability first. For Agent Auth under a provider,
//     the poll's agent JWT must carry the aud an execution of that
//     capability carries (its location, else the default location): a
//     token made for the issuer or another location is 401 invalid_jwt.
//   - With Idempotency, an Idempotency-Key header on execute makes a
//     retried call run once: a repeat with the same key, caller (identity
//     Subject), capability and arguments (compared in canonical form) replays the
//     stored status and body with Idempotent-Replayed: true; a repeat while
//     the first still runs waits for it (up to the guard's Wait, then 409
//     idempotency_in_progress); the same key with other arguments is 422
//     idempotency_key_reused. Successes and definitive errors are stored;
//     5xx, 408, 409, 425, 429 and 499 answers are not, so a retry runs
//     again, and neither is any refusal of the confirmation stage (428
//     confirmation_required, 409 confirmation_*, 403
//     invalid_confirmation, 202 confirmation_pending), so the key may be
//     retried with a good token. A key that cannot be claimed because the
//     store does not answer is 503 temporarily_unavailable with
//     Retry-After, and the call does not run. A caller holding the
//     guard's bound of live keys (idempotency.Config.MaxKeysPerScope)
//     gets 429 rate_limited with Retry-After for a new key, and the call
//     does not run; an answer longer than the guard keeps
//     (MaxAnswerBytes) reaches the caller whole, and the key keeps 409
//     conflict for its repeats, saying that the call ran. Batch items have no place for a key in
//     the batch shape, so
//     batch-execute refuses the header (400 invalid_idempotency_key), and a
//     stream cannot be replayed, so a streaming capability refuses it too.
//
// Batch items that name a streaming or async capability fail, each on its
// own, with batch_unsupported_result_type.
//
// Their codes, from agentcap's one table: batch_unsupported_result_type
// (400), stream_expired (504), job_not_found (404), cancelled (499),
// instance_lost (503), invalid_idempotency_key (400),
// idempotency_in_progress (409), idempotency_key_reused (422).
//
// # Previews and confirmations
//
// capability/preview runs a capability's preview after the checks of
// execute and answers {"preview": ..., "confirmation": {"token",
// "expires_at"}} (the confirmation only when the capability needs one).
// An execute or batch item carries its token as "confirmation_token".
// The codes, documented together in docs/confirmation.md: preview_not_supported (400),
// confirmation_required (428, with "preview" and a fresh
// "confirmation"), confirmation_mismatch, confirmation_expired and
// confirmation_used (409), invalid_confirmation (403).
//
// # Memory
//
// Request bodies the handler reads and the answers it renders live in
// reused buffers, so a request costs few allocations. A body is sized
// from Content-Length when that is within the limit, and is handed back
// once the answer is rendered: nothing may hold it after the call, which
// is why an Authorizer must copy any argument (auth.Call.Arguments) it
// keeps. An answer
// from [Handler.Serve] is handed back by [Response.Release].
package httpx
