// Package echox mounts an httpx capability handler on an Echo instance or
// group.
//
// The mount only moves bytes: every status code, header and body comes
// from [httpx.Handler.Serve], so an Echo app answers exactly like
// net/http. Middleware of the group runs first, as for any Echo route.
//
// Who calls is the handler's business: its verifier
// (httpx.Config.Verifier) reads the headers and client address of each
// request as Echo received it, and the auth.Identity it returns
// reaches the executor's context function, whose context also sees
// the values Echo middleware set with c.Set (see Mount).
package echox

import (
	"context"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/agentcap/agentcap/httpx"
)

// Router is the part of Echo that Mount needs. *echo.Echo and *echo.Group
// satisfy it, so the handler can live under a group with its own
// middleware.
type Router interface {
	// Any registers handler, behind middleware, for path under every
	// method Echo routes. Mount registers each of its routes this way so
	// that httpx, not Echo, answers a method the route does not take (405
	// with Allow).
	Any(path string, handler echo.HandlerFunc, middleware ...echo.MiddlewareFunc) []*echo.Route
}

var (
	_ Router = (*echo.Echo)(nil)
	_ Router = (*echo.Group)(nil)
)

// Mount registers h's routes on r, for every method Echo's Any covers, so
// that httpx answers a wrong method with 405 as on any other transport.
//
// h may serve an executor built on first use (httpx.New over a core.Lazy): list and
// describe then answer from the registry before the executor exists, and
// the first execution builds it.
//
// The capability context is the request's context (deadline and client
// cancellation) whose Value also sees the string keys Echo middleware set
// with c.Set. Echo offers no way to list those keys, so they cannot be
// copied; instead the context asks the echo.Context, under a lock, only
// while the mount is serving the request. Once the mount returns, the
// echo.Context goes back to Echo's pool and the lookups fall through to
// the request context alone: a goroutine that outlives the request never
// reads a recycled echo.Context.
func Mount(r Router, h *httpx.Handler) {
	for _, route := range h.Routes() {
		r.Any("/"+route, handler(h, route))
	}
}

func handler(h *httpx.Handler, route string) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := httpx.NewRequest(c.Response(), c.Request(), route)
		sc := &storeContext{Context: c.Request().Context(), ec: c}
		req.Context = sc
		// A stream is written here, before the context is detached, so
		// that its execution still sees Echo's store while it runs.
		httpx.WriteResponse(c.Response(), h.Serve(req))
		sc.detach()
		return nil
	}
}

// storeContext reads Echo's per-request store while the request is being
// served, and only then.
type storeContext struct {
	context.Context
	mu sync.RWMutex
	ec echo.Context
}

// detach cuts the link to the echo.Context. It waits for lookups in
// progress, so none can run into Echo's reset of the context.
func (s *storeContext) detach() {
	s.mu.Lock()
	s.ec = nil
	s.mu.Unlock()
}

// Value implements context.Context.
func (s *storeContext) Value(key any) any {
	if k, ok := key.(string); ok {
		s.mu.RLock()
		var v any
		if s.ec != nil {
			v = s.ec.Get(k)
		}
		s.mu.RUnlock()
		if v != nil {
			return v
		}
	}
	return s.Context.Value(key)
}
