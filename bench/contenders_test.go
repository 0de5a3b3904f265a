package bench_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/gin-gonic/gin"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"
	"github.com/valyala/fasthttp"

	"github.com/agentcap/agentcap/echox"
	"github.com/agentcap/agentcap/fiberx"
	"github.com/agentcap/agentcap/ginx"
)

// A contender is one way of serving the transfer operation. Requests are
// driven in process, without a network: net/http-style handlers through
// ServeHTTP with a reused writer, Fiber through app.Handler() with a reused
// fasthttp.RequestCtx. A listener would add a syscall-bound cost that is the
// same for every contender of one framework and would hide the differences
// being measured.

// contender names one way of serving the operation and builds a driver for
// a fixed request.
type contender struct {
	framework string // net_http, gin, echo, fiber
	kind      string // mount, by_hand, huma
	newDriver func(tb testing.TB, req request) driver
}

// request is the part of an execute request the tests vary.
type request struct {
	contentType   string
	authorization string
	body          []byte
}

// driver sends its one request again on every call and returns the answer.
// The body it returns is only valid until the next call.
type driver interface {
	do() (status int, body []byte)
}

func contenders() []contender {
	return []contender{
		{"net_http", "by_hand", newHTTPDriverFunc(netHTTPByHand)},
		{"net_http", "mount", newHTTPDriverFunc(netHTTPMount)},
		{"net_http", "huma", newHTTPDriverFunc(netHTTPHuma)},
		{"gin", "by_hand", newHTTPDriverFunc(ginByHand)},
		{"gin", "mount", newHTTPDriverFunc(ginMount)},
		{"echo", "by_hand", newHTTPDriverFunc(echoByHand)},
		{"echo", "mount", newHTTPDriverFunc(echoMount)},
		{"fiber", "by_hand", newFiberDriverFunc(fiberByHand)},
		{"fiber", "mount", newFiberDriverFunc(fiberMount)},
	}
}

// --- net/http ---

// netHTTPMount serves the httpx handler on a standard mux, the way an
// application mounts it next to its own routes.
func netHTTPMount(tb testing.TB) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/capability/", newMountHandler(tb))
	return mux
}

func netHTTPByHand(tb testing.TB) http.Handler {
	h := newByHand(tb)
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+routeExec, func(w http.ResponseWriter, r *http.Request) {
		status, body := serveByHand(h, r, w)
		setJSONHeaders(w.Header())
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
	return mux
}

// serveByHand does the net/http part of the hand-written handler that
// net/http, Gin and Echo share: authentication, content type, a bounded
// body read.
func serveByHand(h *byHand, r *http.Request, w http.ResponseWriter) (int, []byte) {
	principal, ok := authorized(r.Header.Get("Authorization"))
	if !ok {
		return http.StatusUnauthorized, handUnauthorized
	}
	if !jsonContent(r.Header.Get("Content-Type")) {
		return http.StatusUnsupportedMediaType, handBadType
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return http.StatusBadRequest, handBadRequest
	}
	return h.execute(r.Context(), principal, body)
}

// humaRequest and humaResponse describe the operation to huma: the same
// envelope and the same Go types, validated by huma's own validator from
// the same struct tags.
type humaRequest struct {
	Body humaEnvelope
}

type humaEnvelope struct {
	Capability string     `json:"capability" enum:"transfer"`
	Arguments  transferIn `json:"arguments"`
}

type humaResponse struct {
	ContentTypeOptions string `header:"X-Content-Type-Options"`
	CacheControl       string `header:"Cache-Control"`
	Body               humaData
}

type humaData struct {
	Data transferOut `json:"data"`
}

type principalKey struct{}

func netHTTPHuma(tb testing.TB) http.Handler {
	// Match the other contenders' strictness: huma's default accepts a key
	// that differs from a field only in letter case. This is a package
	// variable, set before any request and never changed afterwards.
	huma.ValidateStrictCasing = true
	mux := http.NewServeMux()
	cfg := huma.DefaultConfig("bench", "1.0.0")
	// No $schema member and Link header in answers: the other contenders
	// send neither.
	cfg.CreateHooks = nil
	api := humago.New(mux, cfg)
	api.UseMiddleware(func(ctx huma.Context, next func(huma.Context)) {
		principal, ok := authorized(ctx.Header("Authorization"))
		if !ok {
			_ = huma.WriteErr(api, ctx, http.StatusUnauthorized, "authentication is required")
			return
		}
		next(huma.WithValue(ctx, principalKey{}, principal))
	})
	huma.Register(api, huma.Operation{
		OperationID:   "execute",
		Method:        http.MethodPost,
		Path:          routeExec,
		MaxBodyBytes:  maxBody,
		DefaultStatus: http.StatusOK,
	}, func(ctx context.Context, in *humaRequest) (*humaResponse, error) {
		principal, _ := ctx.Value(principalKey{}).(string)
		out, err := transfer(ctx, account{Owner: principal}, in.Body.Arguments)
		if err != nil {
			return nil, huma.Error500InternalServerError("internal error")
		}
		return &humaResponse{ContentTypeOptions: "nosniff", CacheControl: "no-store", Body: humaData{Data: out}}, nil
	})
	return mux
}

// --- Gin ---

func newGin() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	return gin.New()
}

func ginMount(tb testing.TB) http.Handler {
	r := newGin()
	ginx.Mount(r, newMountHandler(tb))
	return r
}

func ginByHand(tb testing.TB) http.Handler {
	h := newByHand(tb)
	r := newGin()
	r.POST(routeExec, func(c *gin.Context) {
		status, body := serveByHand(h, c.Request, c.Writer)
		setJSONHeaders(c.Writer.Header())
		c.Writer.WriteHeader(status)
		_, _ = c.Writer.Write(body)
	})
	return r
}

// --- Echo ---

func echoMount(tb testing.TB) http.Handler {
	e := echo.New()
	echox.Mount(e, newMountHandler(tb))
	return e
}

func echoByHand(tb testing.TB) http.Handler {
	h := newByHand(tb)
	e := echo.New()
	e.POST(routeExec, func(c echo.Context) error {
		status, body := serveByHand(h, c.Request(), c.Response())
		setJSONHeaders(c.Response().Header())
		c.Response().WriteHeader(status)
		_, err := c.Response().Write(body)
		return err
	})
	return e
}

// --- Fiber ---

func fiberMount(tb testing.TB) *fiber.App {
	app := fiber.New()
	fiberx.Mount(app, newMountHandler(tb))
	return app
}

func fiberByHand(tb testing.TB) *fiber.App {
	h := newByHand(tb)
	app := fiber.New(fiber.Config{BodyLimit: maxBody})
	app.Post(routeExec, func(c *fiber.Ctx) error {
		status, body := func() (int, []byte) {
			principal, ok := authorized(c.Get("Authorization"))
			if !ok {
				return http.StatusUnauthorized, handUnauthorized
			}
			if !jsonContent(c.Get("Content-Type")) {
				return http.StatusUnsupportedMediaType, handBadType
			}
			// The body stays in Fiber's buffer: nothing here outlives the
			// handler, so there is nothing to copy.
			return h.execute(c.UserContext(), principal, c.Body())
		}()
		c.Set("Content-Type", "application/json")
		c.Set("X-Content-Type-Options", "nosniff")
		c.Set("Cache-Control", "no-store")
		return c.Status(status).Send(body)
	})
	return app
}

// --- drivers ---

// recorder is a ResponseWriter that keeps the status and body and is
// reset before each request, so a benchmark measures the handler and not
// the allocation of a recorder.
type recorder struct {
	hdr    http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.hdr }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

func (w *recorder) reset() {
	clear(w.hdr)
	w.status = 0
	w.body.Reset()
}

// bodyReader is a request body that can be rewound without allocating.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

type httpDriver struct {
	h    http.Handler
	r    *http.Request
	body []byte
	rd   *bodyReader
	w    *recorder
}

func newHTTPDriverFunc(build func(testing.TB) http.Handler) func(testing.TB, request) driver {
	return func(tb testing.TB, req request) driver {
		tb.Helper()
		return newHTTPDriver(tb, build(tb), req)
	}
}

func newHTTPDriver(tb testing.TB, h http.Handler, req request) *httpDriver {
	tb.Helper()
	r, err := http.NewRequest(http.MethodPost, "http://bench.test"+routeExec, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if req.contentType != "" {
		r.Header.Set("Content-Type", req.contentType)
	}
	if req.authorization != "" {
		r.Header.Set("Authorization", req.authorization)
	}
	r.ContentLength = int64(len(req.body))
	return &httpDriver{h: h, r: r, body: req.body, rd: &bodyReader{}, w: &recorder{hdr: http.Header{}}}
}

func (d *httpDriver) do() (int, []byte) {
	d.rd.Reset(d.body)
	d.r.Body = d.rd
	d.w.reset()
	d.h.ServeHTTP(d.w, d.r)
	return d.w.status, d.w.body.Bytes()
}

type fiberDriver struct {
	h    fasthttp.RequestHandler
	tmpl *fasthttp.Request
	ctx  *fasthttp.RequestCtx
}

func newFiberDriverFunc(build func(testing.TB) *fiber.App) func(testing.TB, request) driver {
	return func(tb testing.TB, req request) driver {
		tb.Helper()
		tmpl := &fasthttp.Request{}
		tmpl.Header.SetMethod(fiber.MethodPost)
		tmpl.SetRequestURI(routeExec)
		tmpl.Header.SetHost("bench.test")
		if req.contentType != "" {
			tmpl.Header.SetContentType(req.contentType)
		}
		if req.authorization != "" {
			tmpl.Header.Set("Authorization", req.authorization)
		}
		tmpl.SetBody(req.body)
		ctx := &fasthttp.RequestCtx{}
		ctx.Init(tmpl, nil, nil)
		return &fiberDriver{h: build(tb).Handler(), tmpl: tmpl, ctx: ctx}
	}
}

// do rebuilds the request from the template the way fasthttp's server
// recycles a RequestCtx between requests on one connection.
func (d *fiberDriver) do() (int, []byte) {
	d.tmpl.CopyTo(&d.ctx.Request)
	d.ctx.Response.Reset()
	d.ctx.ResetUserValues()
	d.h(d.ctx)
	return d.ctx.Response.StatusCode(), d.ctx.Response.Body()
}
