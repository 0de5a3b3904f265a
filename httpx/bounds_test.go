package httpx_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
)

// withKey is longCall with an Idempotency-Key.
func withKey(t *testing.T, url, caller, key, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+caller)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

// TestIdempotencyKeysBoundedPerCaller: a caller holding
// MaxKeysPerScope live keys gets 429 rate_limited, with Retry-After, for
// a new key, and the call does not run; its held keys still replay, and
// other callers keep their own keys.
func TestIdempotencyKeysBoundedPerCaller(t *testing.T) {
	guard, err := idempotency.New(idempotency.Config{MaxKeysPerScope: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveLong(t, httpx.LongRunning{Idempotency: guard}, sleeper)
	url := srv.URL + "/capability/execute"
	const call = `{"capability":"sleep","arguments":{"millis":0}}`
	for _, key := range []string{"k1", "k2", "k3"} {
		if resp, body := withKey(t, url, "alice", key, call); resp.StatusCode != 200 {
			t.Fatalf("key %s: %d %s", key, resp.StatusCode, body)
		}
	}
	resp, body := withKey(t, url, "alice", "k4", call)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, `"error":"rate_limited"`) ||
		resp.Header.Get("Retry-After") != "60" || !strings.Contains(body, `"retry_after":60`) {
		t.Fatalf("a fourth key: %d %v %s; want 429 rate_limited with Retry-After", resp.StatusCode, resp.Header, body)
	}
	if resp, _ := withKey(t, url, "alice", "k1", call); resp.StatusCode != 200 || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a held key: %d %v; want its replay", resp.StatusCode, resp.Header)
	}
	if resp, body := withKey(t, url, "bob", "k4", call); resp.StatusCode != 200 {
		t.Fatalf("another caller: %d %s", resp.StatusCode, body)
	}
	// Without a key the call runs.
	if resp, body := longCall(t, http.MethodPost, url, "alice", call); resp.StatusCode != 200 {
		t.Fatalf("without a key: %d %s", resp.StatusCode, body)
	}
}

// TestIdempotentAnswerTooLargeToKeep: the first call gets its whole
// answer; a repeat with the key does not run the call again, and is told
// that its answer was not kept.
func TestIdempotentAnswerTooLargeToKeep(t *testing.T) {
	var runs atomic.Int32
	big := core.MustDefine("big", "A long answer.", func(context.Context, string, core.NoInput) (echoOut, error) {
		runs.Add(1)
		return echoOut{Text: strings.Repeat("x", 2000)}, nil
	})
	guard, err := idempotency.New(idempotency.Config{MaxAnswerBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveLong(t, httpx.LongRunning{Idempotency: guard}, big)
	url := srv.URL + "/capability/execute"
	if resp, body := withKey(t, url, "alice", "k", `{"capability":"big"}`); resp.StatusCode != 200 || len(body) < 2000 {
		t.Fatalf("first call: %d %s", resp.StatusCode, body)
	}
	resp, body := withKey(t, url, "alice", "k", `{"capability":"big"}`)
	if resp.StatusCode != http.StatusConflict || body != `{"error":"conflict","message":"the call with this Idempotency-Key ran, but its answer was too large to keep for a repeat"}`+"\n" ||
		resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if runs.Load() != 1 {
		t.Fatalf("the call ran %d times", runs.Load())
	}
}

// TestJobsBoundedPerCaller: a caller running MaxPendingPerOwner jobs gets
// 429 rate_limited for another async call, which does not run, while
// other callers start theirs; a call that would become a job after
// AsyncAfter runs to its end as an ordinary call instead.
func TestJobsBoundedPerCaller(t *testing.T) {
	release := make(chan struct{})
	var runs atomic.Int32
	hold := core.MustDefine("hold", "Hold until released, as a job.", func(ctx context.Context, _ string, _ core.NoInput) (sleepOut, error) {
		runs.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return sleepOut{}, nil
	}, core.WithAsync())
	m, err := jobs.New(jobs.Config{MaxPendingPerOwner: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer close(release)
	srv := serveLong(t, httpx.LongRunning{Jobs: m, BaseURL: "http://agent.test/", AsyncAfter: 20 * time.Millisecond}, hold, sleeper)
	url := srv.URL + "/capability/execute"
	for i := range 2 {
		if resp, body := longCall(t, http.MethodPost, url, "alice", `{"capability":"hold"}`); resp.StatusCode != 202 {
			t.Fatalf("job %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := longCall(t, http.MethodPost, url, "alice", `{"capability":"hold"}`)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, `"error":"rate_limited"`) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third job: %d %s; want 429 rate_limited", resp.StatusCode, body)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d calls ran, want 2", n)
	}
	if resp, body := longCall(t, http.MethodPost, url, "bob", `{"capability":"hold"}`); resp.StatusCode != 202 {
		t.Fatalf("another caller's job: %d %s", resp.StatusCode, body)
	}
	if resp, body := longCall(t, http.MethodPost, url, "alice", `{"capability":"sleep","arguments":{"millis":60}}`); resp.StatusCode != 200 || body != `{"data":{"slept":60}}`+"\n" {
		t.Fatalf("a call past AsyncAfter at the bound: %d %s; want its answer", resp.StatusCode, body)
	}
}

// TestStreamsBoundedPerCaller: a caller with MaxStreamsPerOwner streams
// running gets 429 rate_limited for another, which does not start, while
// other callers start theirs; a stream whose client went away frees its
// place.
func TestStreamsBoundedPerCaller(t *testing.T) {
	var started atomic.Int32
	hang := core.MustDefineStream("hang", "Emit once, then wait for the end.",
		func(ctx context.Context, _ string, _ core.NoInput, emit *core.Emitter[pingChunk]) (sleepOut, error) {
			started.Add(1)
			if err := emit.Emit(pingChunk{Ping: 1}); err != nil {
				return sleepOut{}, err
			}
			<-ctx.Done()
			return sleepOut{}, ctx.Err()
		})
	srv := serveLong(t, httpx.LongRunning{MaxStreamsPerOwner: 2}, hang)
	open := func(caller string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/capability/execute", strings.NewReader(`{"capability":"hang"}`))
		req.Header.Set("Authorization", "Bearer "+caller)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var streams []*http.Response
	for range 2 {
		resp := open("alice")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("a stream: %d %v", resp.StatusCode, resp.Header)
		}
		streams = append(streams, resp)
	}
	resp := open("alice")
	var b strings.Builder
	buf := make([]byte, 1024)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(b.String(), `"error":"rate_limited"`) || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("a third stream: %d %v %s; want 429 rate_limited", resp.StatusCode, resp.Header, b.String())
	}
	if n := started.Load(); n != 2 {
		t.Fatalf("%d streams started, want 2", n)
	}
	other := open("bob")
	if other.StatusCode != 200 {
		t.Fatalf("another caller's stream: %d", other.StatusCode)
	}
	other.Body.Close()
	// A client that goes away frees its place, once its execution ended.
	streams[0].Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp := open("alice")
		ok := resp.StatusCode == 200
		resp.Body.Close()
		if ok {
			break
		}
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after a stream ended: %d", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	streams[1].Body.Close()
}
