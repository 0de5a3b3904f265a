// Command echo is an existing Echo application that also exposes the
// issues capabilities to agents under /agent, inside a group with its own
// middleware.
//
//	go run ./examples/echo -addr 127.0.0.1:8080
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentcap/agentcap/echox"
	"github.com/agentcap/agentcap/examples/internal/issues"
	"github.com/agentcap/agentcap/httpx"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, func(a string) { log.Printf("listening on http://%s", a) }); err != nil {
		log.Fatal(err)
	}
}

// run serves until ctx ends, then shuts down gracefully. ready receives
// the bound address.
func run(ctx context.Context, addr string, ready func(addr string)) error {
	agent, err := issues.NewHandler()
	if err != nil {
		return err
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/", func(c echo.Context) error {
		return c.String(http.StatusOK, fmt.Sprintln("issue tracker; agents use /agent/capability/..."))
	})
	group := e.Group("/agent", func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// Framework middleware of the app keeps working for agent routes.
			c.Response().Header().Set("X-Served-By", "echo")
			return next(c)
		}
	})
	echox.Mount(group, agent)
	var mux http.Handler = e

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := httpx.NewServer(mux)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	ready(ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
