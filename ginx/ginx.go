// Package ginx mounts an httpx capability handler on a Gin router or
// route group.
//
// The mount only moves bytes: every status code, header and body comes
// from [httpx.Handler.Serve], so a Gin app answers exactly like net/http.
// Middleware of the group runs first, as for any Gin route.
//
// Who calls is the handler's business: its verifier
// (httpx.Config.Verifier) reads the headers and client address of each
// request as Gin received it, and the auth.Identity it returns
// reaches the executor's context function, whose context also sees
// the keys Gin middleware set with c.Set (see Mount).
package ginx

import (
	"context"
	"maps"

	"github.com/gin-gonic/gin"

	"github.com/agentcap/agentcap/httpx"
)

// Router is the part of a Gin router that Mount needs. *gin.Engine and
// *gin.RouterGroup satisfy it, so the handler can live under a group with
// its own middleware.
type Router interface {
	// Any registers handlers for relativePath under every method Gin
	// routes. Mount registers each of its routes this way so that httpx,
	// not Gin, answers a method the route does not take (405 with Allow).
	Any(relativePath string, handlers ...gin.HandlerFunc) gin.IRoutes
}

var (
	_ Router = (*gin.Engine)(nil)
	_ Router = (*gin.RouterGroup)(nil)
)

// Mount registers h's routes on r, for every method Gin's Any covers, so
// that httpx answers a wrong method with 405 as on any other transport.
//
// h may serve an executor built on first use (httpx.New over a core.Lazy): list and
// describe then answer from the registry before the executor exists, and
// the first execution builds it.
//
// The capability context is the request's context (deadline and client
// cancellation) whose Value also sees the keys Gin middleware set with
// c.Set. The keys are copied when the request reaches the mount: a
// *gin.Context is recycled after the handler returns, so nothing of it may
// stay reachable from a context the capability might keep.
func Mount(r Router, h *httpx.Handler) {
	for _, route := range h.Routes() {
		r.Any("/"+route, handler(h, route))
	}
}

func handler(h *httpx.Handler, route string) gin.HandlerFunc {
	return func(c *gin.Context) {
		req := httpx.NewRequest(c.Writer, c.Request, route)
		req.Context = withKeys(c.Request.Context(), c.Keys)
		httpx.WriteResponse(c.Writer, h.Serve(req))
	}
}

// keysContext layers a snapshot of Gin's per-request keys over the
// request context.
type keysContext struct {
	context.Context
	keys map[any]any
}

// withKeys snapshots keys. Gin guards Keys with a lock of its own that
// middleware on this goroutine has released by now, and the copy means
// later writes cannot race with readers of the snapshot.
func withKeys(ctx context.Context, keys map[any]any) context.Context {
	if len(keys) == 0 {
		return ctx
	}
	return keysContext{Context: ctx, keys: maps.Clone(keys)}
}

// Value implements context.Context.
func (k keysContext) Value(key any) any {
	if v, ok := k.keys[key]; ok {
		return v
	}
	return k.Context.Value(key)
}
