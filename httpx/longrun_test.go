package httpx_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
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

// codeLedgerLocked refuses a call while the ledger is locked.
var codeLedgerLocked = agentcap.NewCode("ledger_locked", agentcap.CodeConflict)

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

// longExecutor runs defs with the caller's subject as their context.
func longExecutor(t testing.TB, defs ...core.Definer) *core.Executor {
	t.Helper()
	return core.MustExecutor(core.MustRegistry(defs...), subjectOf, core.Config{})
}

func subjectOf(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (string, error) {
	return id.Subject, nil
}

// bearerName verifies any bearer token as the caller of that name.
var bearerName = auth.VerifierFunc(func(_ context.Context, req *auth.Request) (*auth.Identity, error) {
	name, ok := strings.CutPrefix(req.Authorization, "Bearer ")
	if !ok {
		return nil, auth.ErrNoCredentials
	}
	return &auth.Identity{Subject: name}, nil
})

func TestLongRunningConfiguration(t *testing.T) {
	m, err := jobs.New(jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tc := range []struct {
		name string
		defs []core.Definer
		long httpx.LongRunning
		ok   bool
	}{
		{"async without jobs", []core.Definer{asyncSleeper}, httpx.LongRunning{}, false},
		{"jobs without base URL", []core.Definer{asyncSleeper}, httpx.LongRunning{Jobs: m}, false},
		{"relative base URL", []core.Definer{asyncSleeper}, httpx.LongRunning{Jobs: m, BaseURL: "/agent/"}, false},
		{"base URL without slash", []core.Definer{asyncSleeper}, httpx.LongRunning{Jobs: m, BaseURL: "https://x.test/agent"}, false},
		{"negative AsyncAfter", []core.Definer{sleeper}, httpx.LongRunning{AsyncAfter: -1}, false},
		{"complete", []core.Definer{asyncSleeper, sleeper, pinger}, httpx.LongRunning{Jobs: m, BaseURL: "https://x.test/agent/"}, true},
		{"streams need nothing", []core.Definer{pinger}, httpx.LongRunning{}, true},
	} {
		_, err := httpx.New(longExecutor(t, tc.defs...), httpx.Config{Verifier: bearerName, LongRunning: tc.long})
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

func serveLong(t *testing.T, long httpx.LongRunning, defs ...core.Definer) *httptest.Server {
	t.Helper()
	h, err := httpx.New(longExecutor(t, defs...), httpx.Config{Verifier: bearerName, LongRunning: long})
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
	srv := serveLong(t, httpx.LongRunning{Jobs: m, BaseURL: "http://agent.test/", AsyncAfter: 50 * time.Millisecond}, sleeper)
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
	srv := serveLong(t, httpx.LongRunning{Jobs: m, BaseURL: "http://agent.test/"},
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
	srv := serveLong(t, httpx.LongRunning{}, pinger)
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
			return sleepOut{}, agentcap.NewError(codeLedgerLocked, "the ledger is locked")
		}, core.WithAsync())
	srv := serveLong(t, httpx.LongRunning{Jobs: m, BaseURL: "http://agent.test/"},
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

// TestExecutionAsksVisibility serves capabilities whose visibility
// admits every caller to listings but none to execution (the predicate
// is called with executing true when a call runs): they are listed and
// described, and executing one, synchronously, as a stream or in a batch,
// is answered exactly like executing an unknown capability; neither runs.
func TestExecutionAsksVisibility(t *testing.T) {
	var asked sync.Map // executing -> true
	listedOnly := core.WithVisibility(func(_ context.Context, _ *auth.Identity, executing bool) bool {
		asked.Store(executing, true)
		return !executing
	})
	shown := core.MustDefine("shown", "Listed, never run",
		func(context.Context, string, core.NoInput) (sleepOut, error) {
			t.Error("a capability hidden from execution ran")
			return sleepOut{}, nil
		}, listedOnly)
	shownStream := core.MustDefineStream("shown_stream", "Listed, never streamed",
		func(context.Context, string, core.NoInput, *core.Emitter[pingChunk]) (sleepOut, error) {
			t.Error("a stream hidden from execution ran")
			return sleepOut{}, nil
		}, listedOnly)
	srv := serveLong(t, httpx.LongRunning{}, shown, shownStream)

	_, list := longCall(t, "GET", srv.URL+"/capability/list", "alice", "")
	if !strings.Contains(list, `"name":"shown"`) || !strings.Contains(list, `"name":"shown_stream"`) {
		t.Errorf("list: %s", list)
	}
	if resp, body := longCall(t, "GET", srv.URL+"/capability/describe?name=shown", "alice", ""); resp.StatusCode != 200 {
		t.Errorf("describe: %d %s", resp.StatusCode, body)
	}
	const unknown = `{"error":"capability_not_found","message":"unknown capability"}` + "\n"
	for _, name := range []string{"shown", "shown_stream", "never_defined"} {
		resp, body := longCall(t, "POST", srv.URL+"/capability/execute", "alice", `{"capability":"`+name+`"}`)
		if resp.StatusCode != 404 || body != unknown || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("execute %s: %d %q", name, resp.StatusCode, body)
		}
	}
	_, batch := longCall(t, "POST", srv.URL+"/capability/batch-execute", "alice",
		`{"requests":[{"capability":"shown"},{"capability":"shown_stream"}]}`)
	want := `{"responses":[{"id":"0","status":"failed","error":{"code":"capability_not_found","message":"unknown capability"}},` +
		`{"id":"1","status":"failed","error":{"code":"capability_not_found","message":"unknown capability"}}]}` + "\n"
	if batch != want {
		t.Errorf("batch: %s", batch)
	}
	for _, executing := range []bool{false, true} {
		if _, ok := asked.Load(executing); !ok {
			t.Errorf("the visibility predicate was never asked with executing %v", executing)
		}
	}
}

// TestStreamRecheck: an open stream asks the caller's Authorizer every
// RecheckInterval whether it may still act; once it refuses, the stream
// ends with an error event rendering the refusal, and the execution is
// cancelled.
func TestStreamRecheck(t *testing.T) {
	var revoked atomic.Bool
	ended := make(chan error, 1)
	forever := core.MustDefineStream("forever", "Emit once, then wait for the end",
		func(ctx context.Context, _ string, _ core.NoInput, emit *core.Emitter[pingChunk]) (sleepOut, error) {
			if err := emit.Emit(pingChunk{Ping: 1}); err != nil {
				return sleepOut{}, err
			}
			<-ctx.Done()
			ended <- ctx.Err()
			return sleepOut{}, ctx.Err()
		})
	passed := make(chan struct{}, 1)
	az := &authorizer{recheck: func(context.Context) error {
		if revoked.Load() {
			return agentcap.NewError(agentcap.CodeAgentRevoked, "the agent was revoked")
		}
		select {
		case passed <- struct{}{}:
		default:
		}
		return nil
	}}
	verifier := auth.VerifierFunc(func(context.Context, *auth.Request) (*auth.Identity, error) {
		return &auth.Identity{Subject: "alice", Authorizer: az}, nil
	})
	h, err := httpx.New(longExecutor(t, forever), httpx.Config{Verifier: verifier,
		LongRunning: httpx.LongRunning{RecheckInterval: 10 * time.Millisecond, KeepAlive: -1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/capability/execute", strings.NewReader(`{"capability":"forever"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	first := "event: data\ndata: {\"ping\":1}\n\n"
	got := make([]byte, len(first))
	if _, err := io.ReadFull(r, got); err != nil || string(got) != first {
		t.Fatalf("first event %q, %v", got, err)
	}
	// A recheck passes, and the stream goes on, until the caller is
	// revoked.
	select {
	case <-passed:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream was never rechecked")
	}
	revoked.Store(true)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := "event: error\ndata: {\"error\":\"agent_revoked\",\"message\":\"the agent was revoked\"}\n\nevent: done\ndata: \n\n"
	if string(rest) != want {
		t.Errorf("after the revocation: %q, want %q", rest, want)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the execution ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the execution went on after the revocation")
	}
}
