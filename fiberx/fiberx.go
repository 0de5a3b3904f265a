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
// (decoded from gzip or deflate Content-Encoding, the encodings httpx
// decodes for every other router, within the handler's
// body limit, into memory the mount reuses once the answer is rendered),
// the headers (in one piece, read without allocating) and the values
// middleware stored with c.Locals. The snapshot copies the Locals map, not the values: a string
// taken from the request (c.Get, c.Params) aliases a buffer Fiber reuses,
// so middleware must copy it (strings.Clone) before storing it, or the app
// must run with fiber.Config.Immutable. It never hands *fiber.Ctx or *fasthttp.RequestCtx out as a
// context.Context.
//
// Who calls is the handler's business: its verifier
// (httpx.Config.Verifier) reads the copied headers and the client's
// address, and may keep them past the request; the auth.Identity it
// returns reaches the executor's context function along with the Locals.
//
// Fiber (fasthttp) does not report a client that goes away mid-request,
// so unlike net/http, Gin and Echo, a disconnect does not cancel a running
// capability; the executor's timeout still bounds it. Event streams are
// the exception: they are written through fasthttp's body stream writer,
// flushed event by event, and a write or flush that fails (the client is
// gone; idle streams write a keep-alive comment every
// httpx.LongRunning.KeepAlive) ends the stream and cancels its execution.
package fiberx

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/agentcap/agentcap/httpx"
)

// Mount registers h's routes on r (a *fiber.App or a group) for every
// method, so that httpx answers a wrong method with 405 as on any other
// transport.
//
// h may serve an executor built on first use (httpx.New over a core.Lazy): list and
// describe then answer from the registry before the executor exists, and
// the first execution builds it.
//
// The capability context is c.UserContext() (values a middleware put
// there with c.SetUserContext) whose Value also sees a snapshot of the
// c.Locals values, taken when the request reaches the mount.
//
// fasthttp reads a whole request body, up to fiber.Config.BodyLimit (4 MiB
// by default), before any handler runs, and answers a larger one itself in
// plain text. Set BodyLimit to h.MaxBodyBytes() so that Fiber buffers no
// more than httpx accepts; httpx then answers every oversize body with its
// own 413 envelope, as on the other routers.
func Mount(r fiber.Router, h *httpx.Handler) {
	for _, route := range h.Routes() {
		r.All("/"+route, handler(h, route))
	}
}

func handler(h *httpx.Handler, route string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		body := getBody()
		resp := h.Serve(newRequest(c, route, h.MaxBodyBytes(), body))
		// The answer never aliases the request body: it is rendered into
		// memory of its own, so the body can go back before the write.
		putBody(body)
		for k, vs := range resp.Header {
			for _, v := range vs {
				c.Set(k, v)
			}
		}
		c.Status(resp.Status)
		if resp.Streaming() {
			// fasthttp sends the headers, then runs the writer; a flush
			// that fails means the client went away, which ends the
			// stream and cancels its execution.
			c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
				resp.WriteStream(w, w.Flush)
				resp.Release()
			})
			return nil
		}
		// SetBody copies into fasthttp's own response buffer, so the
		// answer's memory can be reused as soon as this returns; Send
		// would keep a reference until fasthttp writes it.
		c.Response().SetBody(resp.Body)
		resp.Release()
		return nil
	}
}

// request is everything the core may read of one Fiber request, in one
// allocation.
type request struct {
	httpx.Request
	headers headerSnapshot
}

// newRequest copies everything the core may read out of c. The body is
// decoded into body's memory, which the caller reuses once Serve returns.
func newRequest(c *fiber.Ctx, route string, limit int64, body *bodyBuffer) *httpx.Request {
	fr := c.Request()
	r := &request{}
	r.headers.copyFrom(&fr.Header)
	r.Method = methodName(fr.Header.Method())
	r.Path = route
	r.RawQuery = string(fr.URI().QueryString())
	r.Header = r.headers.get
	r.Context = snapshotLocals(c)
	r.RemoteAddr = c.Context().RemoteAddr().String()
	if r.Method == fiber.MethodPost {
		body.b, r.BodyTooLarge, r.BodyError = decodeBody(body.b[:0], fr.Body(), r.headers.get("Content-Encoding"), limit)
		if !r.BodyTooLarge && r.BodyError == nil {
			r.Body = body.b
		}
	}
	return &r.Request
}

// methodName returns the method as a constant string for the methods
// httpx routes, so naming it allocates nothing.
func methodName(m []byte) string {
	switch string(m) {
	case fiber.MethodGet:
		return fiber.MethodGet
	case fiber.MethodPost:
		return fiber.MethodPost
	}
	return string(m)
}

// headerSnapshot is a copy of the request headers: every name and value
// back to back in one string, and where each ends. Lookups compare names
// without regard to letter case, as http.Header.Get does with its
// canonical keys, and return substrings of the copy, so they allocate
// nothing.
type headerSnapshot struct {
	text   string
	ends   []uint32 // name end, value end, for each header in turn
	inline [24]uint32
}

// copyFrom copies the headers of h. fasthttp owns h's bytes only until the
// handler returns, so nothing of h may stay referenced.
func (s *headerSnapshot) copyFrom(h *fasthttp.RequestHeader) {
	var scratch [512]byte
	text := scratch[:0]
	s.ends = s.inline[:0]
	h.VisitAll(func(k, v []byte) {
		text = append(text, k...)
		nameEnd := len(text)
		text = append(text, v...)
		s.ends = append(s.ends, uint32(nameEnd), uint32(len(text)))
	})
	s.text = string(text)
}

// get returns the first value of the named header, or "".
func (s *headerSnapshot) get(name string) string {
	start := 0
	for i := 0; i+1 < len(s.ends); i += 2 {
		nameEnd, valueEnd := int(s.ends[i]), int(s.ends[i+1])
		if nameEnd-start == len(name) && strings.EqualFold(s.text[start:nameEnd], name) {
			return s.text[nameEnd:valueEnd]
		}
		start = valueEnd
	}
	return ""
}

// bodyBuffer is reusable memory for request bodies.
type bodyBuffer struct{ b []byte }

// maxPooledBody keeps one unusually large body from pinning its memory in
// the pool for the life of the process.
const maxPooledBody = 64 << 10

var bodyPool = sync.Pool{New: func() any { return &bodyBuffer{b: make([]byte, 0, 1024)} }}

func getBody() *bodyBuffer { return bodyPool.Get().(*bodyBuffer) }

func putBody(b *bodyBuffer) {
	if cap(b.b) > maxPooledBody {
		return
	}
	b.b = b.b[:0]
	bodyPool.Put(b)
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

// fiberUserContext is the user value under which Fiber keeps
// c.UserContext(). It is Fiber's own entry, not a Local, and the snapshot
// layers over that context anyway; skipping it means a request without
// Locals costs no map.
const fiberUserContext = "__local_user_context__"

func snapshotLocals(c *fiber.Ctx) context.Context {
	base := c.UserContext()
	var locals map[any]any
	c.Context().VisitUserValuesAll(func(k, v any) {
		if key, ok := k.(string); ok && key == fiberUserContext {
			return
		}
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

// decodeBody appends the raw body to dst, decoding its Content-Encoding,
// never holding more than limit+1 decoded bytes, so a compressed body
// cannot expand past the limit in memory. fasthttp's own decoders have no
// such bound. On tooLarge or an error the returned slice is dst's memory,
// holding nothing meaningful.
func decodeBody(dst, raw []byte, encoding string, limit int64) ([]byte, bool, error) {
	if int64(len(raw)) > limit {
		return dst, true, nil
	}
	var src io.Reader
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "identity":
		return append(dst, raw...), false, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return dst, false, err
		}
		defer zr.Close()
		src = zr
	case "deflate":
		zr, err := zlib.NewReader(bytes.NewReader(raw))
		if err != nil {
			return dst, false, err
		}
		defer zr.Close()
		src = zr
	default:
		return dst, false, errUnsupportedEncoding
	}
	buf := bytes.NewBuffer(dst)
	n, err := buf.ReadFrom(io.LimitReader(src, limit+1))
	if err != nil {
		return buf.Bytes()[:0], false, err
	}
	if n > limit {
		return buf.Bytes()[:0], true, nil
	}
	return buf.Bytes(), false, nil
}
