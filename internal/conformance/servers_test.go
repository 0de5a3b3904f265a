package conformance_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"

	"github.com/agentcap/agentcap/echox"
	"github.com/agentcap/agentcap/fiberx"
	"github.com/agentcap/agentcap/ginx"
	"github.com/agentcap/agentcap/httpx"
)

// prefix is where every framework mounts the surface, inside a group
// whose middleware sets the tenant from the X-Tenant header.
const prefix = "/api/agent"

type server struct {
	name string
	url  string // base URL including prefix
}

// startServers serves one handler through all four transports on loopback
// and stops them when the test ends.
func startServers(t *testing.T, h *httpx.Handler) []server {
	t.Helper()
	return []server{
		{"net/http", startNetHTTP(t, h)},
		{"gin", startGin(t, h)},
		{"echo", startEcho(t, h)},
		{"fiber", startFiber(t, h)},
	}
}

func serveHTTP(t *testing.T, handler http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv.URL + prefix
}

func startNetHTTP(t *testing.T, h *httpx.Handler) string {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	tenant := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := context.WithValue(r.Context(), tenantKey{}, r.Header.Get("X-Tenant"))
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	mux.Handle(prefix+"/", tenant(http.StripPrefix(prefix, h)))
	return serveHTTP(t, mux)
}

func startGin(t *testing.T, h *httpx.Handler) string {
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.GET("/healthz", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	g := r.Group(prefix, func(c *gin.Context) { c.Set("tenant", c.GetHeader("X-Tenant")) })
	ginx.Mount(g, h)
	return serveHTTP(t, r)
}

func startEcho(t *testing.T, h *httpx.Handler) string {
	e := echo.New()
	e.HideBanner = true
	e.GET("/healthz", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	g := e.Group(prefix, func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set("tenant", c.Request().Header.Get("X-Tenant"))
			return next(c)
		}
	})
	echox.Mount(g, h)
	return serveHTTP(t, e)
}

func startFiber(t *testing.T, h *httpx.Handler) string {
	t.Helper()
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	f.Get("/healthz", func(c *fiber.Ctx) error { return c.SendStatus(http.StatusNoContent) })
	g := f.Group(prefix, func(c *fiber.Ctx) error {
		// Fiber's strings alias buffers it reuses after the request; a value
		// that outlives the handler must be copied.
		c.Locals("tenant", strings.Clone(c.Get("X-Tenant")))
		return c.Next()
	})
	fiberx.Mount(g, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Listener(ln)
	}()
	t.Cleanup(func() {
		_ = f.ShutdownWithTimeout(5 * time.Second)
		<-done
	})
	return "http://" + ln.Addr().String() + prefix
}
