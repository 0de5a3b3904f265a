package mcpx_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/mcpx"
)

// openSession initializes a session as the user of token and returns its
// id.
func openSession(t *testing.T, resource, token string) string {
	t.Helper()
	resp := post(t, resource, "Bearer "+token, "", initialize)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s, session %q", resp.StatusCode, body, sid)
	}
	resp = post(t, resource, "Bearer "+token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return sid
}

// sessionStatus is the status of a tools/list on session sid.
func sessionStatus(t *testing.T, resource, token, sid string) int {
	t.Helper()
	resp := post(t, resource, "Bearer "+token, sid, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
	resp.Body.Close()
	return resp.StatusCode
}

// awaitStatus waits until a tools/list on sid answers want: a session
// closed by the server ends a moment after the request that closed it.
func awaitStatus(t *testing.T, resource, token, sid string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := sessionStatus(t, resource, token, sid)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s answers %d, want %d", sid, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionLimits opens sessions beyond the limits: one owner's oldest
// session makes way for its newest, and a full endpoint opens none until
// a session ends.
func TestSessionLimits(t *testing.T) {
	f := newOIDCFixture(t, routers[0], func(c *mcpx.Config) {
		c.MaxSessionsPerOwner = 2
		c.MaxSessions = 4
	})
	tok := func(name string) string { return f.iss.token(t, name, f.resource, time.Hour) }
	a1 := openSession(t, f.resource, tok("alice"))
	a2 := openSession(t, f.resource, tok("alice"))
	// a1 is used after a2, so a2 is the least recently used.
	if got := sessionStatus(t, f.resource, tok("alice"), a1); got != http.StatusOK {
		t.Fatalf("a1: %d", got)
	}
	a3 := openSession(t, f.resource, tok("alice"))
	awaitStatus(t, f.resource, tok("alice"), a2, http.StatusNotFound)
	for _, sid := range []string{a1, a3} {
		if got := sessionStatus(t, f.resource, tok("alice"), sid); got != http.StatusOK {
			t.Errorf("alice's session %s after the eviction: %d", sid, got)
		}
	}

	b1 := openSession(t, f.resource, tok("bob"))
	openSession(t, f.resource, tok("bob"))
	// Four sessions: nobody else opens one.
	resp := post(t, f.resource, "Bearer "+tok("carol"), "", initialize)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
		resp.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(string(body), `"error":"temporarily_unavailable"`) {
		t.Errorf("a fifth session: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// An owner at its own limit still opens one, in place of its oldest.
	a4 := openSession(t, f.resource, tok("alice"))
	awaitStatus(t, f.resource, tok("alice"), a1, http.StatusNotFound)
	if got := sessionStatus(t, f.resource, tok("alice"), a4); got != http.StatusOK {
		t.Errorf("a4: %d", got)
	}
	// A session ended by its client makes room.
	req, _ := http.NewRequest(http.MethodDelete, f.resource, nil)
	req.Header.Set("Authorization", "Bearer "+tok("bob"))
	req.Header.Set("Mcp-Session-Id", b1)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := post(t, f.resource, "Bearer "+tok("carol"), "", initialize)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a DELETE, a new session: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionsPerOwnerByDefault opens one session more than the default
// limit as one agent: its first session is closed.
func TestSessionsPerOwnerByDefault(t *testing.T) {
	f := newOIDCFixture(t, routers[0], nil)
	tok := f.iss.token(t, "alice", f.resource, time.Hour)
	var sids []string
	for range mcpx.DefaultMaxSessionsPerOwner + 1 {
		sids = append(sids, openSession(t, f.resource, tok))
	}
	awaitStatus(t, f.resource, tok, sids[0], http.StatusNotFound)
	for _, sid := range sids[1:] {
		if got := sessionStatus(t, f.resource, tok, sid); got != http.StatusOK {
			t.Errorf("session %s: %d", sid, got)
		}
	}
}

// TestStreamlessTimeout runs the endpoint in a bubble of fake time: a
// session with no request under way is closed after StreamlessTimeout,
// one in use or with an open stream is not.
func TestStreamlessTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exec := newExecutor(t, newProbe(), adminOnly)
		s, err := mcpx.New(exec, mcpx.Config{
			Verifier: auth.VerifierFunc(func(_ context.Context, req *auth.Request) (*auth.Identity, error) {
				return person(strings.TrimPrefix(req.Authorization, "Bearer ")), nil
			}),
			Resource: "http://mcp.test/mcp",
		})
		if err != nil {
			t.Fatal(err)
		}
		send := func(method, sid, body string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, "http://mcp.test/mcp", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer alice")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			return rec
		}
		open := func() string {
			rec := send(http.MethodPost, "", initialize)
			sid := rec.Header().Get("Mcp-Session-Id")
			if rec.Code != http.StatusOK || sid == "" {
				t.Fatalf("initialize: %d %s", rec.Code, rec.Body)
			}
			send(http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			return sid
		}
		list := func(sid string) int {
			return send(http.MethodPost, sid, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`).Code
		}
		idle, used, streaming := open(), open(), open()

		// A stream stays open on streaming until it is canceled.
		ctx, cancel := context.WithCancel(t.Context())
		streamEnded := make(chan struct{})
		go func() {
			defer close(streamEnded)
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://mcp.test/mcp", nil)
			req.Header.Set("Authorization", "Bearer alice")
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", streaming)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			s.ServeHTTP(httptest.NewRecorder(), req)
		}()
		synctest.Wait()

		half := mcpx.DefaultStreamlessTimeout / 2
		for range 3 {
			time.Sleep(half)
			if got := list(used); got != http.StatusOK {
				t.Fatalf("a session used every %v: %d", half, got)
			}
		}
		synctest.Wait()
		if got := list(idle); got != http.StatusNotFound {
			t.Errorf("a session idle for %v: %d, want 404", 3*half, got)
		}
		if got := list(streaming); got != http.StatusOK {
			t.Errorf("a session with an open stream, after %v: %d", 3*half, got)
		}
		cancel()
		<-streamEnded
		time.Sleep(mcpx.DefaultStreamlessTimeout + time.Second)
		synctest.Wait()
		if got := list(streaming); got != http.StatusNotFound {
			t.Errorf("the session, %v after its stream ended: %d, want 404", mcpx.DefaultStreamlessTimeout, got)
		}
	})
}
