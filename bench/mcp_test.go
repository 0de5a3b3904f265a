package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap/internal/benchcpu"
	"github.com/agentcap/agentcap/mcpx"
)

// A tools/call of the transfer through mcpx, the same call as an execute
// through httpx, and the go-sdk's own typed-tool path (mcp.AddTool with a
// Go handler calling the same use case, with the same input and output
// schemas, behind the SDK's bearer middleware), each through its
// http.Handler: in process (a ResponseRecorder) and over loopback TCP with
// a keep-alive net/http client.

const mcpProtocol = "2025-06-18"

var mcpCallBody = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"transfer","arguments":{"from_account":"acc_alice","to_account":"acc_bob","amount":125.5,"currency":"EUR"}}}`)

// newMCPXHandler is mcpx over the same executor and verifier as the
// httpx mount. Its endpoint is stateless: every request stands alone.
func newMCPXHandler(tb testing.TB, resource string) http.Handler {
	tb.Helper()
	exec := newMountHandlerExecutor(tb)
	s, err := mcpx.New(exec, mcpx.Config{
		Verifier: verifier,
		Resource: resource,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// newSDKTypedHandler is the go-sdk's typed path: the SDK derives nothing,
// validates the arguments and the result against the schemas agentcap
// derived for the same types, unmarshals into transferIn and marshals the
// result.
func newSDKTypedHandler(tb testing.TB) http.Handler {
	tb.Helper()
	def := transferCap.Definition()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{
		Name:         "transfer",
		Description:  def.Description(),
		InputSchema:  json.RawMessage(def.InputSchema()),
		OutputSchema: json.RawMessage(def.OutputSchema()),
	}, func(ctx context.Context, req *mcp.CallToolRequest, in transferIn) (*mcp.CallToolResult, transferOut, error) {
		out, err := transfer(ctx, account{Owner: req.Extra.TokenInfo.UserID}, in)
		return nil, out, err
	})
	return sdkHandler(srv)
}

// newSDKFloorHandler is the SDK's transport alone: the same bearer
// middleware and Streamable HTTP handler, and a tool that answers a
// prepared result without looking at its arguments. What mcpx or the
// typed path cost beyond it is their own work.
func newSDKFloorHandler(tb testing.TB) http.Handler {
	tb.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	data := json.RawMessage(`{"transfer_id":"tr_bob","status":"accepted","amount":125.5,"currency":"EUR"}`)
	srv.AddTool(&mcp.Tool{Name: "transfer", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}, StructuredContent: data}, nil
		})
	return sdkHandler(srv)
}

// sdkHandler serves srv over the SDK's Streamable HTTP handler, stateless
// as mcpx's is, behind its bearer middleware, which accepts the bench
// token.
func sdkHandler(srv *mcp.Server) http.Handler {
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if tok != token {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: tok, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	return auth.RequireBearerToken(verify, nil)(h)
}

// mcpRequest is one message to a stateless endpoint: no initialize
// before it, the protocol version in its header.
func mcpRequest(body []byte) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "http://bench.test/mcp", bytes.NewReader(body))
	setMCPHeaders(req.Header)
	return req
}

func setMCPHeaders(h http.Header) {
	h.Set("Authorization", authHeader)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", mcpProtocol)
}

// structured extracts the structured content of a tools/call answer (an
// SSE event or a JSON body).
func structured(tb testing.TB, body []byte) any {
	tb.Helper()
	data := body
	if i := bytes.Index(body, []byte("data: ")); i >= 0 {
		data = body[i+len("data: "):]
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			data = data[:j]
		}
	}
	var msg struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent any  `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &msg); err != nil || msg.Result.IsError {
		tb.Fatalf("tools/call answered %s (%v)", body, err)
	}
	return msg.Result.StructuredContent
}

// TestMCPContendersAgree checks that the three paths give the same
// result, so that the benchmark compares like with like.
func TestMCPContendersAgree(t *testing.T) {
	want := decode(t, []byte(validData)).(map[string]any)["data"]
	mx := newMCPXHandler(t, "http://bench.test/mcp")
	sdk := newSDKTypedHandler(t)
	for name, h := range map[string]http.Handler{"mcpx": mx, "sdk": sdk, "floor": newSDKFloorHandler(t)} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, mcpRequest(mcpCallBody))
		if got := structured(t, rec.Body.Bytes()); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

// loop runs op b.N times, reporting allocations and the process CPU time
// per operation (cpu-ns/op), which other processes on a busy machine
// disturb much less than wall-clock time.
func loop(b *testing.B, op func()) {
	b.ReportAllocs()
	cpu0, cpuOK := benchcpu.Process()
	for b.Loop() {
		op()
	}
	if cpu1, ok := benchcpu.Process(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkToolsCall is one tools/call (an execute, for httpx) per
// operation.
func BenchmarkToolsCall(b *testing.B) {
	b.Run("inprocess", func(b *testing.B) {
		httpxH := newMountHandler(b)
		b.Run("httpx", func(b *testing.B) {
			loop(b, func() {
				req := httptest.NewRequest(http.MethodPost, "http://bench.test"+routeExec, bytes.NewReader(validBody))
				req.Header.Set("Authorization", authHeader)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				httpxH.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			})
		})
		for _, c := range []struct {
			name string
			h    http.Handler
		}{{"mcpx", newMCPXHandler(b, "http://bench.test/mcp")}, {"sdk-typed", newSDKTypedHandler(b)}, {"sdk-floor", newSDKFloorHandler(b)}} {
			b.Run(c.name, func(b *testing.B) {
				loop(b, func() {
					rec := httptest.NewRecorder()
					c.h.ServeHTTP(rec, mcpRequest(mcpCallBody))
					if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"structuredContent"`)) {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
				})
			})
		}
	})
	b.Run("loopback", func(b *testing.B) {
		serve := func(b *testing.B, build func(base string) http.Handler) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			base := "http://" + ln.Addr().String()
			srv := &http.Server{Handler: build(base)}
			go func() { _ = srv.Serve(ln) }()
			b.Cleanup(func() { _ = srv.Close() })
			return base
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		post := func(b *testing.B, url string, hdr func(http.Header), body []byte) []byte {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			hdr(req.Header)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			out, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode/100 != 2 {
				b.Fatalf("%d %s %v", resp.StatusCode, out, err)
			}
			return out
		}
		b.Run("httpx", func(b *testing.B) {
			base := serve(b, func(string) http.Handler { return newMountHandler(b) })
			hdr := func(h http.Header) {
				h.Set("Authorization", authHeader)
				h.Set("Content-Type", "application/json")
			}
			loop(b, func() { post(b, base+routeExec, hdr, validBody) })
		})
		for _, c := range []struct {
			name  string
			build func(base string) http.Handler
		}{
			{"mcpx", func(base string) http.Handler { return newMCPXHandler(b, base+"/mcp") }},
			{"sdk-typed", func(string) http.Handler { return newSDKTypedHandler(b) }},
			{"sdk-floor", func(string) http.Handler { return newSDKFloorHandler(b) }},
		} {
			b.Run(c.name, func(b *testing.B) {
				base := serve(b, c.build)
				loop(b, func() { post(b, base+"/mcp", setMCPHeaders, mcpCallBody) })
			})
		}
	})
}
