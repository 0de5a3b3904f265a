package fiberx_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/fiberx"
	"github.com/agentcap/agentcap/httpx"
)

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text  string `json:"text"`
	Local string `json:"local"`
	User  string `json:"user"`
}

type userKey struct{}

type app struct{ Local, User string }

// anyone verifies every request as the caller "p".
var anyone = auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
	return &auth.Identity{Subject: "p"}, nil
})

func newApp(t testing.TB, limit int64) *fiber.App {
	t.Helper()
	echo := core.MustDefine("echo", "Echo",
		func(_ context.Context, a app, in echoIn) (echoOut, error) {
			return echoOut{Text: in.Text, Local: a.Local, User: a.User}, nil
		})
	exec := core.MustExecutor(core.MustRegistry(echo),
		func(ctx context.Context, _ *auth.Identity, _ *core.Definition, _ any) (app, error) {
			local, _ := ctx.Value("local").(string)
			user, _ := ctx.Value(userKey{}).(string)
			return app{Local: local, User: user}, nil
		}, core.Config{})
	h, err := httpx.New(exec, httpx.Config{Verifier: anyone, MaxBodyBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	g := f.Group("/agent", func(c *fiber.Ctx) error {
		c.Locals("local", "from-locals")
		c.SetUserContext(context.WithValue(c.UserContext(), userKey{}, "from-user-context"))
		return c.Next()
	})
	fiberx.Mount(g, h)
	return f
}

func compress(t testing.TB, enc string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	switch enc {
	case "gzip":
		w = gzip.NewWriter(&b)
	case "deflate":
		w = zlib.NewWriter(&b)
	default:
		return data
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func TestFiberBodies(t *testing.T) {
	f := newApp(t, 256)
	small := []byte(`{"capability":"echo","arguments":{"text":"hi"}}`)
	big := []byte(`{"capability":"echo","arguments":{"text":"` + strings.Repeat("a", 400) + `"}}`)
	ok := `{"data":{"text":"hi","local":"from-locals","user":"from-user-context"}}` + "\n"
	tooLarge := `{"error":"request_too_large","message":"the body exceeds 256 bytes"}` + "\n"
	unreadable := `{"error":"invalid_request","message":"the request body cannot be read or decoded"}` + "\n"
	tests := []struct {
		name, encoding string
		body           []byte
		status         int
		want           string
	}{
		{"identity", "", small, 200, ok},
		{"gzip", "gzip", compress(t, "gzip", small), 200, ok},
		{"deflate", "deflate", compress(t, "deflate", small), 200, ok},
		// Refused as on net/http, Gin and Echo, which decode what httpx
		// decodes: gzip and deflate.
		{"brotli", "br", small, 400, unreadable},
		{"too large on the wire", "", big, 413, tooLarge},
		{"gzip expands past the limit", "gzip", compress(t, "gzip", big), 413, tooLarge},
		{"broken gzip", "gzip", []byte("not gzip at all"), 400, unreadable},
		{"unsupported encoding", "zstd", small, 400, unreadable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/agent/capability/execute", bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if tc.encoding != "" {
				req.Header.Set("Content-Encoding", tc.encoding)
			}
			resp, err := f.Test(req, 5000)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if diff := cmp.Diff(tc.want, string(body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func BenchmarkFiberExecute(b *testing.B) {
	f := newApp(b, 1<<20)
	h := f.Handler()
	body := []byte(`{"capability":"echo","arguments":{"text":"hi"}}`)
	b.ReportAllocs()
	for b.Loop() {
		var ctx fasthttpCtx
		ctx.init(body)
		h(ctx.RequestCtx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatal(ctx.Response.StatusCode())
		}
	}
}

// TestFiberHeaders checks what a verifier sees of the request
// headers: lookups ignore letter case, a repeated header gives its first
// value, and every header is there however many were sent. The lookup is
// a copy: kept past the request, it still answers with that request's
// values after Fiber has reused its buffers for the next one.
func TestFiberHeaders(t *testing.T) {
	type seen struct {
		lookup func(string) string
		values map[string]string
	}
	names := []string{"Authorization", "authorization", "X-API-KEY", "x-api-key", "X-Repeated", "Content-Type", "X-Extra-19", "Missing"}
	got := make(chan seen, 2)
	ping := core.MustDefine("ping", "Ping",
		func(context.Context, struct{}, core.NoInput) (echoIn, error) { return echoIn{Text: "pong"}, nil })
	exec := core.MustExecutor(core.MustRegistry(ping),
		func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{})
	h, err := httpx.New(exec, httpx.Config{
		Verifier: auth.VerifierFunc(func(_ context.Context, req *auth.Request) (*auth.Identity, error) {
			s := seen{lookup: req.Header, values: map[string]string{}}
			for _, n := range names {
				s.values[n] = req.Header(n)
			}
			got <- s
			return &auth.Identity{Subject: "p"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	fiberx.Mount(f, h)

	send := func(token string) {
		t.Helper()
		req := httptest.NewRequest("POST", "/capability/execute", strings.NewReader(`{"capability":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("x-api-key", "key-"+token)
		req.Header.Add("X-Repeated", "first-"+token)
		req.Header.Add("X-Repeated", "second-"+token)
		for i := range 20 {
			req.Header.Set(fmt.Sprintf("X-Extra-%d", i), fmt.Sprintf("extra-%d-%s", i, token))
		}
		resp, err := f.Test(req, 5000)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	want := func(token string) map[string]string {
		return map[string]string{
			"Authorization": "Bearer " + token, "authorization": "Bearer " + token,
			"X-API-KEY": "key-" + token, "x-api-key": "key-" + token,
			"X-Repeated": "first-" + token, "Content-Type": "application/json",
			"X-Extra-19": "extra-19-" + token, "Missing": "",
		}
	}
	send("one")
	first := <-got
	send("two")
	second := <-got
	for _, tc := range []struct {
		token string
		s     seen
	}{{"one", first}, {"two", second}} {
		if diff := cmp.Diff(want(tc.token), tc.s.values); diff != "" {
			t.Errorf("request %s, during the request (-want +got):\n%s", tc.token, diff)
		}
		later := map[string]string{}
		for _, n := range names {
			later[n] = tc.s.lookup(n)
		}
		if diff := cmp.Diff(want(tc.token), later); diff != "" {
			t.Errorf("request %s, after the request (-want +got):\n%s", tc.token, diff)
		}
	}
}
