package httpx_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
)

type sleepIn struct {
	Millis int `json:"millis" minimum:"0"`
}

type sleepOut struct {
	Slept int `json:"slept"`
}

type pingChunk struct {
	Ping int `json:"ping"`
}

var (
	sleeper = core.MustDefine("sleep", "Sleep a while.",
		func(ctx context.Context, _ string, in sleepIn) (sleepOut, error) {
			select {
			case <-time.After(time.Duration(in.Millis) * time.Millisecond):
				return sleepOut{Slept: in.Millis}, nil
			case <-ctx.Done():
				return sleepOut{}, ctx.Err()
			}
		})
	asyncSleeper = core.MustDefine("sleep_async", "Sleep a while, as a job.",
		func(ctx context.Context, _ string, in sleepIn) (sleepOut, error) {
			time.Sleep(time.Duration(in.Millis) * time.Millisecond)
			return sleepOut{Slept: in.Millis}, nil
		}, core.WithAsync())
	pinger = core.MustDefineStream("pings", "Ping twice.",
		func(_ context.Context, _ string, _ core.NoInput, emit *core.Emitter[pingChunk]) (sleepOut, error) {
			_ = emit.Emit(pingChunk{Ping: 1})
			_ = emit.Emit(pingChunk{Ping: 2})
			return sleepOut{}, nil
		})
)

func longExecutor(t testing.TB, defs ...core.Definer) *core.Executor[string, string] {
	t.Helper()
	return core.MustExecutor(core.MustRegistry(defs...), core.ExecutorConfig[string, string]{
		CreateContext: func(_ context.Context, p string, _ *core.Definition, _ any) (string, error) { return p, nil },
	})
}

func bearerName(_ context.Context, req *httpx.Request) (string, error) {
	name, ok := strings.CutPrefix(req.Header("Authorization"), "Bearer ")
	if !ok {
		return "", httpx.ErrNoCredentials
	}
	return name, nil
}

func TestLongRunningConfiguration(t *testing.T) {
	m, err := jobs.New(jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	owner := func(p string) string { return p }
	for _, tc := range []struct {
		name string
		defs []core.Definer
		long httpx.LongRunning[string]
		ok   bool
	}{
		{"async without jobs", []core.Definer{asyncSleeper}, httpx.LongRunning[string]{}, false},
		{"jobs without owner", []core.Definer{asyncSleeper}, httpx.LongRunning[string]{Jobs: m, BaseURL: "https://x.test/"}, false},
		{"jobs without base URL", []core.Definer{asyncSleeper}, httpx.LongRunning[string]{Jobs: m, Owner: owner}, false},
		{"relative base URL", []core.Definer{asyncSleeper}, httpx.LongRunning[string]{Jobs: m, Owner: owner, BaseURL: "/agent/"}, false},
		{"base URL without slash", []core.Definer{asyncSleeper}, httpx.LongRunning[string]{Jobs: m, Owner: owner, BaseURL: "https://x.test/agent"}, false},
		{"idempotency without owner", []core.Definer{sleeper}, httpx.LongRunning[string]{Idempotency: &idempotency.Guard{}}, false},
		{"negative AsyncAfter", []core.Definer{sleeper}, httpx.LongRunning[string]{AsyncAfter: -1}, false},
		{"complete", []core.Definer{asyncSleeper, sleeper, pinger}, httpx.LongRunning[string]{Jobs: m, Owner: owner, BaseURL: "https://x.test/agent/"}, true},
		{"streams need nothing", []core.Definer{pinger}, httpx.LongRunning[string]{}, true},
	} {
		_, err := httpx.New(longExecutor(t, tc.defs...), httpx.Config[string]{Authenticate: bearerName, LongRunning: tc.long})
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

func serveLong(t *testing.T, long httpx.LongRunning[string], defs ...core.Definer) *httptest.Server {
	t.Helper()
	h, err := httpx.New(longExecutor(t, defs...), httpx.Config[string]{Authenticate: bearerName, LongRunning: long})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func longCall(t *testing.T, method, url, auth, body string) (*http.Response, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, r)
	req.Header.Set("Authorization", "Bearer "+auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A call that runs past AsyncAfter becomes a job; a quicker one answers
// as usual.
func TestAsyncAfter(t *testing.T) {
	m, err := jobs.New(jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv := serveLong(t, httpx.LongRunning[string]{Jobs: m, Owner: func(p string) string { return p },
		BaseURL: "http://agent.test/", AsyncAfter: 50 * time.Millisecond}, sleeper)
	resp, body := longCall(t, "POST", srv.URL+"/capability/execute", "alice", `{"capability":"sleep","arguments":{"millis":0}}`)
	if resp.StatusCode != 200 || body != `{"data":{"slept":0}}`+"\n" {
		t.Errorf("quick call: %d %s", resp.StatusCode, body)
	}
	resp, body = longCall(t, "POST", srv.URL+"/capability/execute", "alice", `{"capability":"sleep","arguments":{"millis":300}}`)
	var ans struct {
		Status    string `json:"status"`
		StatusURL string `json:"status_url"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil || resp.StatusCode != 202 || ans.Status != "pending" {
		t.Fatalf("slow call: %d %s", resp.StatusCode, body)
	}
	target := srv.URL + strings.TrimPrefix(ans.StatusURL, "http://agent.test")
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		_, body = longCall(t, "GET", target, "alice", "")
		if !strings.Contains(body, "pending") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if body != `{"status":"completed","result":{"slept":300}}`+"\n" {
		t.Errorf("polled: %s", body)
	}
	// Refusals before the handler are never jobs.
	resp, body = longCall(t, "POST", srv.URL+"/capability/execute", "alice", `{"capability":"sleep","arguments":{"millis":-1}}`)
	if resp.StatusCode != 400 {
		t.Errorf("invalid call: %d %s", resp.StatusCode, body)
	}
}

func TestDescribeShowsStreamsAndJobs(t *testing.T) {
	m, err := jobs.New(jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv := serveLong(t, httpx.LongRunning[string]{Jobs: m, Owner: func(p string) string { return p }, BaseURL: "http://agent.test/"},
		pinger, asyncSleeper)
	_, body := longCall(t, "GET", srv.URL+"/capability/describe?name=pings", "alice", "")
	if !strings.Contains(body, `"streaming":true,"chunk":{`) || !strings.Contains(body, `"ping"`) {
		t.Errorf("stream: %s", body)
	}
	_, body = longCall(t, "GET", srv.URL+"/capability/describe?name=sleep_async", "alice", "")
	if !strings.Contains(body, `"async":true`) || strings.Contains(body, "streaming") {
		t.Errorf("async: %s", body)
	}
}

// Without jobs there is no status route.
func TestNoStatusRouteWithoutJobs(t *testing.T) {
	srv := serveLong(t, httpx.LongRunning[string]{}, pinger)
	resp, _ := longCall(t, "GET", srv.URL+"/capability/status?id=x", "alice", "")
	if resp.StatusCode != 404 {
		t.Errorf("status %d", resp.StatusCode)
	}
	resp, body := longCall(t, "POST", srv.URL+"/capability/execute", "alice", `{"capability":"pings"}`)
	if resp.StatusCode != 200 || body != "event: data\ndata: {\"ping\":1}\n\nevent: data\ndata: {\"ping\":2}\n\nevent: done\ndata: {\"slept\":0}\n\n" {
		t.Errorf("stream: %d %q", resp.StatusCode, body)
	}
}

// sdkAnswer is the async answer as the reference TypeScript SDK reads it
// (its ExecuteCapabilityResponse): status, status_url, result, and an
// error with code and message.
type sdkAnswer struct {
	Data      json.RawMessage `json:"data"`
	Status    string          `json:"status"`
	StatusURL string          `json:"status_url"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// The reference SDK's poller: execute; on {status:"pending", status_url}
// poll status_url with GET (any non-2xx is an error), waiting
// parseInt(Retry-After) seconds, until status is completed or failed.
// Everything it reads must be there, in the types it expects.
func TestAsyncShapeTheReferenceSDKReads(t *testing.T) {
	m, err := jobs.New(jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	failing := core.MustDefine("fail_async", "Fail, as a job.",
		func(context.Context, string, core.NoInput) (sleepOut, error) {
			return sleepOut{}, core.Conflict("ledger_locked", "the ledger is locked")
		}, core.WithAsync())
	srv := serveLong(t, httpx.LongRunning[string]{Jobs: m, Owner: func(p string) string { return p }, BaseURL: "http://agent.test/"},
		asyncSleeper, failing)
	for _, tc := range []struct {
		body      string
		completed bool
	}{
		{`{"capability":"sleep_async","arguments":{"millis":5}}`, true},
		{`{"capability":"fail_async"}`, false},
	} {
		resp, body := longCall(t, "POST", srv.URL+"/capability/execute", "alice", tc.body)
		var first sdkAnswer
		if err := json.Unmarshal([]byte(body), &first); err != nil || resp.StatusCode/100 != 2 || first.Status != "pending" || first.StatusURL == "" {
			t.Fatalf("execute: %d %s", resp.StatusCode, body)
		}
		if _, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil {
			t.Errorf("Retry-After %q is not whole seconds", resp.Header.Get("Retry-After"))
		}
		target := srv.URL + strings.TrimPrefix(first.StatusURL, "http://agent.test")
		var last sdkAnswer
		for range 100 {
			resp, body = longCall(t, "GET", target, "alice", "")
			if resp.StatusCode/100 != 2 {
				t.Fatalf("poll: %d %s", resp.StatusCode, body)
			}
			last = sdkAnswer{}
			if err := json.Unmarshal([]byte(body), &last); err != nil {
				t.Fatal(err)
			}
			if last.Status == "completed" || last.Status == "failed" {
				break
			}
			if _, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil {
				t.Errorf("pending poll: Retry-After %q", resp.Header.Get("Retry-After"))
			}
			time.Sleep(5 * time.Millisecond)
		}
		switch {
		case tc.completed && (last.Status != "completed" || string(last.Result) != `{"slept":5}` || last.Data != nil || last.Error != nil):
			t.Errorf("completed: %s", body)
		case !tc.completed && (last.Status != "failed" || last.Error == nil || last.Error.Code != "ledger_locked" || last.Error.Message != "the ledger is locked" || last.Result != nil):
			t.Errorf("failed: %s", body)
		}
	}
}
