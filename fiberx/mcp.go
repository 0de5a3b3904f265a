package fiberx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// MCPEndpoint is an MCP endpoint with its protected resource metadata,
// as mcpx.Server provides them.
type MCPEndpoint interface {
	http.Handler
	// MetadataPaths are the paths, at the origin's root, of the metadata.
	MetadataPaths() []string
	// Metadata serves the protected resource metadata document.
	Metadata() http.Handler
}

// MountMCP registers the MCP endpoint e at path on r, for every method
// (the Streamable HTTP transport uses POST, GET and DELETE and answers
// the rest itself), and its metadata at e.MetadataPaths(). The metadata
// lives at the origin's root, so r must be the app (or a group without a
// prefix) and path the endpoint's full path.
//
// The endpoint is a net/http handler whose answers are event streams that
// stay open while a call runs, so the mount bridges to it rather than
// buffering as Fiber's adaptor does: it copies the request (method, URI,
// headers, the raw body, the addresses) into an *http.Request whose
// context is c.UserContext(), never the fasthttp context, runs the
// handler on a goroutine of its own, sends the status and headers once
// the handler commits them, and streams what it writes after that, each
// Flush reaching the client. A write that fails (the client went away)
// cancels the request's context, which ends the handler; as elsewhere
// with Fiber, a client that goes away while nothing is being written is
// only noticed at the next write.
func MountMCP(r fiber.Router, path string, e MCPEndpoint) {
	r.All(path, bridge(e))
	if m := e.Metadata(); m != nil {
		for _, p := range e.MetadataPaths() {
			r.All(p, bridge(m))
		}
	}
}

// bridge serves a Fiber request with a net/http handler, streaming.
func bridge(h http.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithCancel(c.UserContext())
		req, err := netRequest(ctx, c)
		if err != nil {
			cancel()
			return fiber.NewError(fiber.StatusBadRequest, "malformed request URI")
		}
		sw := newStreamWriter(cancel)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer cancel()
			defer sw.finish()
			h.ServeHTTP(sw, req)
		}()
		select {
		case <-sw.committed:
		case <-done:
		}
		status, header := sw.head()
		resp := c.Response()
		for k, vs := range header {
			for i, v := range vs {
				if i == 0 {
					resp.Header.Set(k, v)
				} else {
					resp.Header.Add(k, v)
				}
			}
		}
		resp.SetStatusCode(status)
		select {
		case <-done:
			// The handler is finished: its whole answer is in memory.
			resp.SetBody(sw.take())
			return nil
		default:
		}
		// The stream writer runs after this handler returns, on a
		// goroutine of fasthttp's, and touches nothing of c.
		c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
			sw.pump(w)
			<-done
		})
		return nil
	}
}

// netRequest copies what a net/http handler may read of c into a request
// with context ctx.
func netRequest(ctx context.Context, c *fiber.Ctx) (*http.Request, error) {
	fr := c.Request()
	uri := string(fr.RequestURI())
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, err
	}
	header := make(http.Header)
	fr.Header.VisitAll(func(k, v []byte) {
		header.Add(string(k), string(v))
	})
	body := bytes.Clone(fr.Body())
	fc := c.Context()
	// The SDK's DNS rebinding protection reads the local address from
	// the context, as net/http's server puts it there.
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, fc.LocalAddr())
	r := &http.Request{
		Method:        string(fr.Header.Method()),
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Host:          string(fr.Host()),
		RemoteAddr:    fc.RemoteAddr().String(),
		RequestURI:    uri,
	}
	if len(body) == 0 {
		r.Body = http.NoBody
	}
	return r.WithContext(ctx), nil
}

// errClientGone is what writes return once the client is gone.
var errClientGone = errors.New("fiberx: the client went away")

// streamWriter is the http.ResponseWriter of a bridged handler. Until the
// handler commits its head (WriteHeader, a first Write or Flush), the
// mount waits; after that, writes collect in pending, which pump hands to
// fasthttp's writer.
type streamWriter struct {
	header    http.Header
	committed chan struct{}
	cancel    context.CancelFunc

	mu       sync.Mutex
	wake     *sync.Cond
	status   int
	sent     http.Header // the header as committed
	pending  []byte
	flush    bool
	finished bool
	broken   bool
}

func newStreamWriter(cancel context.CancelFunc) *streamWriter {
	w := &streamWriter{header: make(http.Header), committed: make(chan struct{}), cancel: cancel}
	w.wake = sync.NewCond(&w.mu)
	return w
}

// Header implements http.ResponseWriter.
func (w *streamWriter) Header() http.Header { return w.header }

// commitLocked fixes the status and header, once.
func (w *streamWriter) commitLocked(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	w.sent = w.header.Clone()
	close(w.committed)
}

// WriteHeader implements http.ResponseWriter.
func (w *streamWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(status)
}

// Write implements http.ResponseWriter.
func (w *streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(http.StatusOK)
	if w.broken {
		return 0, errClientGone
	}
	w.pending = append(w.pending, p...)
	w.wake.Signal()
	return len(p), nil
}

// Flush implements http.Flusher: what was written so far goes out now.
func (w *streamWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(http.StatusOK)
	w.flush = true
	w.wake.Signal()
}

// finish records that the handler returned.
func (w *streamWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(http.StatusOK)
	w.finished = true
	w.wake.Signal()
}

// head returns the committed status and header.
func (w *streamWriter) head() (int, http.Header) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.sent
}

// take returns everything written, for a handler that has finished.
func (w *streamWriter) take() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.pending
	w.pending = nil
	return b
}

// pump writes what the handler writes to out, flushing when the handler
// flushes, until the handler finishes. A failed write marks the writer
// broken and cancels the request, so that the handler stops.
func (w *streamWriter) pump(out *bufio.Writer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for len(w.pending) == 0 && !w.flush && !w.finished {
			w.wake.Wait()
		}
		chunk, flush, finished := w.pending, w.flush, w.finished
		w.pending, w.flush = nil, false
		w.mu.Unlock()
		var err error
		if len(chunk) > 0 {
			_, err = out.Write(chunk)
		}
		if err == nil && (flush || finished) {
			err = out.Flush()
		}
		w.mu.Lock()
		if err != nil {
			w.broken = true
			w.cancel()
			return
		}
		if finished && len(w.pending) == 0 {
			return
		}
	}
}
