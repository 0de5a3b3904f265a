// Command nethttp is an existing net/http application that also exposes
// the issues capabilities to agents under /agent.
//
//	go run ./examples/nethttp -addr 127.0.0.1:8080
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
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "issue tracker; agents use /agent/capability/...")
	})
	mux.Handle("/agent/", http.StripPrefix("/agent", agent))

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
