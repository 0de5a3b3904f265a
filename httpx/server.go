package httpx

import (
	"net/http"
	"time"
)

// Time-outs of the servers NewServer returns. They bound what a slow or
// idle client can hold: the request's headers, its body (at most the
// handler's body limit), and a kept-alive connection between requests.
const (
	serverReadHeaderTimeout = 10 * time.Second
	ServerReadTimeout       = 30 * time.Second
	ServerIdleTimeout       = 120 * time.Second
	serverMaxHeaderBytes    = 64 << 10
)

// NewServer returns an http.Server for h with time-outs suited to the
// capability surface: 10 s for the headers, ServerReadTimeout for the
// whole request, ServerIdleTimeout between the requests of a kept-alive
// connection, and headers of at most 64 KiB.
//
// It sets no WriteTimeout: a write deadline would also end event streams
// (core.DefineStream) and waits for long-running answers, which are
// bounded by the StreamMaxDuration of [LongRunning] and by the capability's own
// deadline instead, and which stop when the client goes away. An
// application without streams may add one, longer than its slowest
// capability. The zero http.Server, by contrast, waits for ever on every
// one of these, which lets a few slow clients hold every connection.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: serverReadHeaderTimeout,
		ReadTimeout:       ServerReadTimeout,
		IdleTimeout:       ServerIdleTimeout,
		MaxHeaderBytes:    serverMaxHeaderBytes,
	}
}
