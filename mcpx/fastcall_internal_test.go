package mcpx

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

type directIn struct {
	Message string `json:"message"`
	Count   int    `json:"count,omitempty"`
}

type directOut struct {
	Message string `json:"message"`
	Count   int    `json:"count"`
}

// directServer is an mcpx endpoint whose caller may run echo and fail
// and may not see hidden.
func directServer(t testing.TB) *Server {
	t.Helper()
	reg := core.MustRegistry(
		core.MustDefine("echo", "Echo.", func(_ context.Context, _ struct{}, in directIn) (directOut, error) {
			return directOut(in), nil
		}, core.WithReadOnly()),
		core.MustDefine("fail", "Fail.", func(context.Context, struct{}, directIn) (directOut, error) {
			return directOut{}, agentcap.NewError(agentcap.CodeConflict, "the account is frozen")
		}),
		core.MustDefine("broken", "Break.", func(context.Context, struct{}, directIn) (directOut, error) {
			return directOut{}, errors.New("disk on fire")
		}),
		core.MustDefine("hidden", "Hidden.", func(context.Context, struct{}, directIn) (directOut, error) {
			return directOut{}, nil
		}, core.WithVisibility(func(context.Context, *auth.Identity, bool) bool { return false })),
	)
	exec, err := core.NewExecutor(reg, func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) {
		return struct{}{}, nil
	}, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(exec, Config{
		Resource: "http://mcp.test/mcp",
		Verifier: auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
			return &auth.Identity{Subject: "usr_1", UserID: "usr_1"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func directRequest(body, version, accept string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://mcp.test/mcp", bytes.NewReader([]byte(body)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", accept)
	r.Header.Set("Authorization", "Bearer token")
	if version != "" {
		r.Header.Set("Mcp-Protocol-Version", version)
	}
	return r
}

// TestDirectCallAnswersAsTheSDK sends the same requests through the SDK
// and, where it applies, through directCall: status, headers and body
// are the same bytes.
func TestDirectCallAnswersAsTheSDK(t *testing.T) {
	s := directServer(t)
	const both = "application/json, text/event-stream"
	for _, tc := range []struct {
		name, body, version, accept string
	}{
		{"echo", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, "2025-06-18", both},
		{"echo 2025-11-25", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi","count":3}}}`, "2025-11-25", both},
		{"string id", `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{"message":"\u00e9t\u00e9 <b>&"}}}`, "2025-06-18", both},
		{"negative id", `{"id":-3,"params":{"arguments":{"message":"x"},"name":"echo"},"method":"tools/call","jsonrpc":"2.0"}`, "2025-06-18", both},
		{"no arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, "2025-06-18", both},
		{"invalid arguments", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":5}}}`, "2025-06-18", both},
		{"unknown member", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x","extra":1}}}`, "2025-06-18", both},
		{"refused", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail","arguments":{"message":"x"}}}`, "2025-06-18", both},
		{"internal", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"broken","arguments":{"message":"x"}}}`, "2025-06-18", both},
		{"accept order", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`, "2025-06-18", "text/event-stream;q=0.9, application/json"},
		// These go to the SDK either way.
		{"hidden", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"hidden","arguments":{}}}`, "2025-06-18", both},
		{"unknown", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, "2025-06-18", both},
		{"meta", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},"_meta":{"progressToken":1}}}`, "2025-06-18", both},
		{"arguments not an object", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`, "2025-06-18", both},
		{"older version", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`, "2025-03-26", both},
		{"no version", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`, "", both},
		{"json only", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`, "2025-06-18", "application/json"},
		{"no bearer token", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`, "2025-06-18", "no-bearer"},
		{"list", `{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{}}`, "2025-06-18", both},
		{"notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`, "2025-06-18", both},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := func(direct bool) *httptest.ResponseRecorder {
				s.noDirectCall = !direct
				w := httptest.NewRecorder()
				r := directRequest(tc.body, tc.version, tc.accept)
				if tc.accept == "no-bearer" {
					r.Header.Set("Accept", both)
					r.Header.Del("Authorization")
				}
				s.ServeHTTP(w, r)
				return w
			}
			sdk, direct := answer(false), answer(true)
			if sdk.Code != direct.Code || !bytes.Equal(sdk.Body.Bytes(), direct.Body.Bytes()) {
				t.Fatalf("SDK: %d %q\ndirect: %d %q", sdk.Code, sdk.Body, direct.Code, direct.Body)
			}
			for _, h := range []string{"Content-Type", "Cache-Control", "Connection", "Mcp-Session-Id"} {
				if sdk.Header().Get(h) != direct.Header().Get(h) {
					t.Errorf("%s: SDK %q, direct %q", h, sdk.Header().Get(h), direct.Header().Get(h))
				}
			}
		})
	}
	s.noDirectCall = false
}

// TestDirectCallTaken shows the plain call does not go through the SDK:
// it allocates a small part of the memory the SDK's session costs.
func TestDirectCallTaken(t *testing.T) {
	s := directServer(t)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	allocated := func(direct bool) uint64 {
		s.noDirectCall = !direct
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 20 {
			w := httptest.NewRecorder()
			s.ServeHTTP(w, directRequest(body, "2025-06-18", "application/json, text/event-stream"))
			if w.Code != http.StatusOK {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	sdk, direct := allocated(false), allocated(true)
	if direct*4 > sdk {
		t.Fatalf("direct call: %d bytes allocated, through the SDK %d: the plain call did not skip the SDK", direct, sdk)
	}
}
