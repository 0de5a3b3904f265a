package httpx_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
)

// downKeys is an idempotency store that cannot be reached.
type downKeys struct{}

var errKeysDown = errors.New("dial tcp: connection refused")

func (downKeys) Claim(context.Context, string, string, string, string, time.Duration, int) (bool, *idempotency.Record, error) {
	return false, nil, errKeysDown
}

func (downKeys) Complete(context.Context, string, string, string, idempotency.Record, time.Duration) error {
	return errKeysDown
}

func (downKeys) Release(context.Context, string, string, string) error { return errKeysDown }

// TestIdempotencyStoreDown answers an execute whose Idempotency-Key
// cannot be claimed, because the store does not answer, with 503
// temporarily_unavailable and Retry-After, without running the call; the
// same call without a key runs.
func TestIdempotencyStoreDown(t *testing.T) {
	var runs atomic.Int32
	pay := core.MustDefine("pay", "Pay",
		func(context.Context, struct{}, sendIn) (sendOut, error) { runs.Add(1); return sendOut{Sent: 1}, nil })
	exec := core.MustExecutor(core.MustRegistry(pay), noContext, core.Config{})
	guard, err := idempotency.New(idempotency.Config{Store: downKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config{
		Verifier: auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
			return &auth.Identity{Subject: "alice"}, nil
		}),
		LongRunning: httpx.LongRunning{Idempotency: guard},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(key string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/capability/execute", strings.NewReader(`{"capability":"pay","arguments":{"amount":1}}`))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	resp, body := post("k1")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
		!strings.Contains(body, `"error":"temporarily_unavailable"`) || runs.Load() != 0 {
		t.Errorf("with a key: %d %s, Retry-After %q, %d runs", resp.StatusCode, body, resp.Header.Get("Retry-After"), runs.Load())
	}
	if resp, body := post(""); resp.StatusCode != http.StatusOK || runs.Load() != 1 {
		t.Errorf("without a key: %d %s, %d runs", resp.StatusCode, body, runs.Load())
	}
}
