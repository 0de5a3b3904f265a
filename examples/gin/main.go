// Command gin is an existing Gin application that also exposes the issues
// capabilities to agents under /agent, inside a route group with its own
// middleware.
//
//	go run ./examples/gin -addr 127.0.0.1:8080
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

	"github.com/gin-gonic/gin"

	"github.com/agentcap/agentcap/examples/internal/issues"
	"github.com/agentcap/agentcap/ginx"
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
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery())
	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok\n") })
	r.GET("/", func(c *gin.Context) {
		c.String(http.StatusOK, fmt.Sprintln("issue tracker; agents use /agent/capability/..."))
	})
	group := r.Group("/agent", func(c *gin.Context) {
		// Framework middleware of the app keeps working for agent routes.
		c.Header("X-Served-By", "gin")
	})
	ginx.Mount(group, agent)
	var mux http.Handler = r

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
