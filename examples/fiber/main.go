// Command fiber is an existing Fiber application that also exposes the
// issues capabilities to agents under /agent, inside a group with its own
// middleware.
//
//	go run ./examples/fiber -addr 127.0.0.1:8080
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentcap/agentcap/examples/internal/issues"
	"github.com/agentcap/agentcap/fiberx"
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
	// Fiber buffers no more than the capability handler accepts.
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ReadTimeout: httpx.ServerReadTimeout, IdleTimeout: httpx.ServerIdleTimeout, BodyLimit: int(agent.MaxBodyBytes())})
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok\n") })
	app.Get("/", func(c *fiber.Ctx) error {
		return c.SendString("issue tracker; agents use /agent/capability/...\n")
	})
	group := app.Group("/agent", func(c *fiber.Ctx) error {
		// Framework middleware of the app keeps working for agent routes.
		c.Set("X-Served-By", "fiber")
		return c.Next()
	})
	fiberx.Mount(group, agent)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- app.Listener(ln) }()
	ready(ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := app.ShutdownWithTimeout(10 * time.Second); err != nil {
		return err
	}
	return <-errc
}
