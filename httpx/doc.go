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
// Mount it with [http.StripPrefix] on a mux, or through the ginx, echox and
// fiberx packages on an existing router. Every transport goes through
// [Handler.Serve], a transport-neutral request/response pair, so status
// codes, headers and bodies are byte-identical whatever serves them.
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
// # Memory
//
// Request bodies the handler reads and the answers it renders live in
// reused buffers, so a request costs few allocations. A body is sized
// from Content-Length when that is within the limit, and is handed back
// once the answer is rendered: nothing may hold it after the call, which
// is why [Config.Authorize] must copy any argument it keeps. An answer
// from [Handler.Serve] is handed back by [Response.Release].
package httpx
