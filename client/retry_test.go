package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/client"
)

// distinctTokens fails the test when two requests to l carried one agent
// JWT.
func distinctTokens(t *testing.T, l *customLocation) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]bool{}
	for _, tok := range l.tokens {
		jti := fmt.Sprint(tokenClaims(t, tok)["jti"])
		if seen[jti] {
			t.Errorf("token %s was sent twice", jti)
		}
		seen[jti] = true
	}
}

func TestExecuteRetries503TemporarilyUnavailable(t *testing.T) {
	p := newFakeProvider(t)
	var calls atomic.Int32
	loc := newCustomLocation(t, p, []string{"flaky", "audited"}, func(_ *customLocation, w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		switch {
		case n == 1 && string(body) == `{"capability":"flaky"}`:
			w.Header().Set("Retry-After", "2")
			writeError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the store did not answer; the call did not run")
		case string(body) == `{"capability":"flaky"}`:
			writeJSON(w, http.StatusOK, map[string]any{"data": "ok"})
		default:
			writeError(w, http.StatusServiceUnavailable, "audit_unavailable", "the audit trail is down")
		}
	})
	c, _, sl := newClient(t)
	a := connect(t, c, p)
	res, err := a.Execute(context.Background(), "flaky", nil)
	if err != nil || string(res.Data) != `"ok"` {
		t.Fatalf("flaky: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
	if diff := cmp.Diff([]time.Duration{2 * time.Second}, sl.waits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}

	// Any other 503 is the caller's, with its code and message.
	_, err = a.Execute(context.Background(), "audited", nil)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.Code != "audit_unavailable" || e.Message != "the audit trail is down" {
		t.Fatalf("audited: %v", err)
	}
	if n := calls.Load(); n != 3 || len(sl.waits()) != 1 {
		t.Errorf("%d calls, %d waits: another 503 was retried", n, len(sl.waits()))
	}
	distinctTokens(t, loc)
}

// TestExecuteDroppedConnection: a connection that dies after the request
// was sent, before its answer, on a connection net/http had used before
// (where net/http itself would resend a request with an Idempotency-Key).
func TestExecuteDroppedConnection(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotency key %v", keyed), func(t *testing.T) {
			p := newFakeProvider(t)
			var calls atomic.Int32
			var drop atomic.Bool
			loc := newCustomLocation(t, p, []string{"pay"}, func(_ *customLocation, w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				io.Copy(io.Discard, r.Body)
				if drop.CompareAndSwap(true, false) {
					conn, _, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					conn.Close()
					return
				}
				writeJSON(w, http.StatusOK, map[string]any{"data": "paid"})
			})
			c, _, sl := newClient(t)
			a := connect(t, c, p)
			var opts []client.ExecuteOption
			if keyed {
				opts = append(opts, client.WithIdempotencyKey("pay-1"))
			}
			// The first call leaves a kept-alive connection behind, which
			// the second one uses.
			if _, err := a.Execute(context.Background(), "pay", nil, opts...); err != nil {
				t.Fatal(err)
			}
			drop.Store(true)
			res, err := a.Execute(context.Background(), "pay", nil, opts...)
			if keyed {
				if err != nil || string(res.Data) != `"paid"` {
					t.Fatalf("keyed call after a dropped connection: %v", err)
				}
				if n := calls.Load(); n != 3 {
					t.Errorf("%d requests, want 3", n)
				}
				if diff := cmp.Diff([]time.Duration{time.Second}, sl.waits()); diff != "" {
					t.Errorf("waits (-want +got):\n%s", diff)
				}
				loc.mu.Lock()
				for i, h := range loc.headers {
					if got := h.Get("Idempotency-Key"); got != "pay-1" {
						t.Errorf("request %d: Idempotency-Key %q", i, got)
					}
				}
				loc.mu.Unlock()
			} else {
				// Without a key the call may have run: not retried.
				if err == nil {
					t.Fatal("a call whose connection died succeeded")
				}
				if n := calls.Load(); n != 2 || len(sl.waits()) != 0 {
					t.Errorf("%d requests, %d waits: a call without a key was sent again", n, len(sl.waits()))
				}
			}
			distinctTokens(t, loc)
		})
	}
}
