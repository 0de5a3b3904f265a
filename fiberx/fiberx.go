// Package fiberx mounts an httpx capability handler on a Fiber app or
// group, natively: requests go to [httpx.Handler.Serve] without a net/http
// adaptor.
//
// The mount only moves bytes: every status code, header and body comes
// from httpx, so a Fiber app answers exactly like net/http. Middleware of
// the group runs first, as for any Fiber route.
//
// Fiber reuses its request and context objects and buffers once a handler
// returns, so the mount copies what the capability may read: the body
// (decoded from gzip, deflate or br Content-Encoding, within the handler's
// body limit), the headers and the values middleware stored with
// c.Locals. The snapshot copies the Locals map, not the values: a string
// taken from the request (c.Get, c.Params) aliases a buffer Fiber reuses,
// so middleware must copy it (strings.Clone) before storing it, or the app
// must run with fiber.Config.Immutable. It never hands *fiber.Ctx or *fasthttp.RequestCtx out as a
// context.Context.
//
// Fiber (fasthttp) does not report a client that goes away mid-request,
// so unlike net/http, Gin and Echo, a disconnect does not cancel a running
// capability; the executor's timeout still bounds it.
package fiberx

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/gofiber/fiber/v2"

	"github.com/agentcap/agentcap/httpx"
)

// Mount registers h's routes on r (a *fiber.App or a group) for every
// method, so that httpx answers a wrong method with 405 as on any other
// transport.
//
// The capability context is c.UserContext() (values a middleware put
// there with c.SetUserContext) whose Value also sees a snapshot of the
// c.Locals values, taken when the request reaches the mount.
func Mount[C, P any](r fiber.Router, h *httpx.Handler[C, P]) {
	for _, route := range h.Routes() {
		r.All("/"+route, handler(h, route))
	}
}

func handler[C, P any](h *httpx.Handler[C, P], route string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		resp := h.Serve(newRequest(c, route, h.MaxBodyBytes()))
		for k, vs := range resp.Header {
			for _, v := range vs {
				c.Set(k, v)
			}
		}
		c.Status(resp.Status)
		return c.Send(resp.Body)
	}
}

// newRequest copies everything the core may read out of c.
func newRequest(c *fiber.Ctx, route string, limit int64) *httpx.Request {
	fr := c.Request()
	headers := make(http.Header)
	fr.Header.VisitAll(func(k, v []byte) { headers.Add(string(k), string(v)) })
	req := &httpx.Request{
		Method:   string(fr.Header.Method()),
		Path:     route,
		RawQuery: string(fr.URI().QueryString()),
		Header:   headers.Get,
		Context:  snapshotLocals(c),
	}
	if string(fr.Header.Method()) == fiber.MethodPost {
		req.Body, req.BodyTooLarge, req.BodyError = decodeBody(fr.Body(), headers.Get("Content-Encoding"), limit)
	}
	return req
}

// localsContext layers a snapshot of c.Locals over c.UserContext().
type localsContext struct {
	context.Context
	locals map[any]any
}

// Value implements context.Context.
func (l localsContext) Value(key any) any {
	if v, ok := l.locals[key]; ok {
		return v
	}
	return l.Context.Value(key)
}

func snapshotLocals(c *fiber.Ctx) context.Context {
	base := c.UserContext()
	var locals map[any]any
	c.Context().VisitUserValuesAll(func(k, v any) {
		if locals == nil {
			locals = make(map[any]any)
		}
		switch key := k.(type) {
		case []byte:
			locals[string(key)] = v
		case string:
			locals[strings.Clone(key)] = v
		default:
			locals[k] = v
		}
	})
	if locals == nil {
		return base
	}
	return localsContext{Context: base, locals: locals}
}

// errUnsupportedEncoding reports a Content-Encoding the mount cannot
// decode.
var errUnsupportedEncoding = errors.New("fiberx: unsupported Content-Encoding")

// decodeBody copies the raw body and decodes its Content-Encoding, never
// holding more than limit+1 decoded bytes, so a compressed body cannot
// expand past the limit in memory. fasthttp's own decoders have no such
// bound.
func decodeBody(raw []byte, encoding string, limit int64) ([]byte, bool, error) {
	if int64(len(raw)) > limit {
		return nil, true, nil
	}
	var src io.Reader
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return bytes.Clone(raw), false, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, false, err
		}
		defer zr.Close()
		src = zr
	case "deflate":
		zr, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, false, err
		}
		defer zr.Close()
		src = zr
	case "br":
		src = brotli.NewReader(bytes.NewReader(raw))
	default:
		return nil, false, errUnsupportedEncoding
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(src, limit+1))
	if err != nil {
		return nil, false, err
	}
	if n > limit {
		return nil, true, nil
	}
	return buf.Bytes(), false, nil
}
