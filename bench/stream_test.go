package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/echox"
	"github.com/agentcap/agentcap/fiberx"
	"github.com/agentcap/agentcap/ginx"
	"github.com/agentcap/agentcap/httpx"
)

// The stream benchmark: one execute of a streaming capability that emits
// b.N chunks, served over a loopback connection by each router and read
// by a client as it arrives. Each op is one event (validated chunk,
// rendered, written and flushed by the server, parsed by the client), so
// ns/op is the time per event and events/s its inverse.

type burstIn struct {
	N int `json:"n" minimum:"1"`
}

type burstChunk struct {
	Seq  int    `json:"seq"`
	Text string `json:"text"`
}

type burstOut struct {
	Sent int `json:"sent"`
}

func streamHandler(b *testing.B) *httpx.Handler {
	burst := core.MustDefineStream("burst", "Emit n chunks.",
		func(_ context.Context, _ struct{}, in burstIn, emit *core.Emitter[burstChunk]) (burstOut, error) {
			for i := 1; i <= in.N; i++ {
				if err := emit.Emit(burstChunk{Seq: i, Text: "account acc_123 changed"}); err != nil {
					return burstOut{}, err
				}
			}
			return burstOut{Sent: in.N}, nil
		})
	exec := core.MustExecutor(core.MustRegistry(burst),
		func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{})
	// Every request is the same caller, whatever it sends: the benchmark
	// measures the stream, not the credentials.
	h, err := httpx.New(exec, httpx.Config{
		Verifier: auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) { return streamCaller, nil }),
	})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// streamCaller is the one caller of the stream benchmark.
var streamCaller = &auth.Identity{Subject: "bench"}

func streamServer(b *testing.B, router string, h *httpx.Handler) string {
	b.Helper()
	var handler http.Handler
	switch router {
	case "nethttp":
		handler = h
	case "gin":
		gin.SetMode(gin.ReleaseMode)
		r := gin.New()
		ginx.Mount(r, h)
		handler = r
	case "echo":
		e := echo.New()
		echox.Mount(e, h)
		handler = e
	case "fiber":
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		fiberx.Mount(app, h)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = app.Listener(ln) }()
		b.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
		return "http://" + ln.Addr().String()
	}
	srv := httptest.NewServer(handler)
	b.Cleanup(srv.Close)
	return srv.URL
}

func BenchmarkStreamEvents(b *testing.B) {
	for _, router := range []string{"nethttp", "gin", "echo", "fiber"} {
		b.Run(router, func(b *testing.B) {
			base := streamServer(b, router, streamHandler(b))
			body := `{"capability":"burst","arguments":{"n":` + strconv.Itoa(b.N) + `}}`
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			req, _ := http.NewRequest("POST", base+"/capability/execute", strings.NewReader(body))
			req.Header.Set("Content-Type", jsonType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			r := bufio.NewReaderSize(resp.Body, 64<<10)
			events, done := 0, false
			for !done {
				line, err := r.ReadSlice('\n')
				if err != nil {
					b.Fatalf("after %d events: %v", events, err)
				}
				switch {
				case bytes.Equal(line, []byte("event: data\n")):
					events++
				case bytes.Equal(line, []byte("event: done\n")):
					done = true
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			if events != b.N {
				b.Fatalf("%d events, want %d", events, b.N)
			}
			b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
		})
	}
}
