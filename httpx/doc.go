// Package httpx serves a core executor over HTTP in the Agent Auth wire
// format, so that one client speaks to every transport.
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
// supports_preview and requires_confirmation; describe adds the
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
// # Lazy executors
//
// [NewLazy] (or [NewSource] with any core.ExecutorSource) serves an
// executor built on first use by a core.LazyExecutor made with
// core.LazyFor: list and describe are answered from the registry alone
// and never start the build; the first execute or batch builds it,
// concurrent first calls share one build, and while the build fails
// executions are answered 503 temporarily_unavailable with Retry-After
// (the cause logged, the failure not kept). The ginx, echox and fiberx
// mounts take the handler as it is, so every router gets the same.
//
// # Errors
//
// Failures use the Agent Auth error envelope
//
//	{"error": "<wire code>", "message": "<public text>", ...extra members}
//
// rendered from core's code table. invalid_request carries an "errors"
// array of {path, message} with JSON Pointers into the arguments. Extra
// members of a [core.AppError] follow in key order and never replace
// "error" or "message". Internal failures are logged with their hidden
// cause on [Config.Logger] and answered with a generic message.
//
// Authentication failures map as follows: [ErrNoCredentials] is 401
// authentication_required, [ErrBadCredentials] is 401 invalid_jwt (the
// Agent Auth code for a bad, expired or otherwise unusable bearer token),
// [ErrNotAllowed] is 403 unauthorized. Every 401 carries the configured
// WWW-Authenticate challenge.
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
//     stream_expired), and when Recheck fails (every RecheckInterval; for
//     Agent Auth, a revoked agent or host).
//   - An async capability (core.WithAsync), and with AsyncAfter any call
//     still running after that long, answers 202
//     {"status":"pending","status_url":...,"retry_after":N} with
//     Retry-After: N, and runs on as a job (package jobs) with its own
//     deadline. GET status_url answers 200 with the same shape while
//     pending (with the latest "progress", if the handler reported any),
//     {"status":"completed","result":...} or
//     {"status":"failed","error":{"error":code,"message":...,"code":code}}.
//     DELETE status_url cancels a pending job (it fails with "cancelled").
//     Only the caller that started a job (LongRunning.Owner) sees it; any
//     other gets 404 job_not_found.
//   - With Idempotency, an Idempotency-Key header on execute makes a
//     retried call run once: a repeat with the same key, caller,
//     capability and arguments (compared in canonical form) replays the
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
//     Retry-After, and the call does not run. Batch items have no place for a key in
//     the batch shape, so
//     batch-execute refuses the header (400 invalid_idempotency_key), and a
//     stream cannot be replayed, so a streaming capability refuses it too.
//
// Batch items that name a streaming or async capability fail, each on its
// own, with batch_unsupported_result_type.
//
// The codes these add to core's table: batch_unsupported_result_type
// (400), stream_expired (504), job_not_found (404), cancelled (409),
// instance_lost (503), invalid_idempotency_key (400),
// idempotency_in_progress (409), idempotency_key_reused (422).
//
// # Previews and confirmations
//
// capability/preview runs a capability's preview after the checks of
// execute and answers {"preview": ..., "confirmation": {"token",
// "expires_at"}} (the confirmation only when the capability needs one).
// An execute or batch item carries its token as "confirmation_token".
// The codes, all from core's table and documented together in
// docs/confirmation.md: preview_not_supported (400),
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
// is why [Config.Authorize] must copy any argument it keeps. An answer
// from [Handler.Serve] is handed back by [Response.Release].
package httpx
