package conformance_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
)

// The long-running surface: streams, jobs and idempotency keys, through
// all four routers, checked alike.

const longBase = "http://agentcap.test" + prefix + "/"

type ticksIn struct {
	N    int  `json:"n" minimum:"1" maximum:"20"`
	Hold bool `json:"hold,omitempty"`
}

type tickChunk struct {
	Seq int `json:"seq" minimum:"1"`
}

var (
	// gate holds "ticks" (hold) after its first chunk and "export" until
	// the test lets them go.
	gate = make(chan struct{})
	// streamEnded receives the cause that ended "forever".
	streamEnded = make(chan error, 4)
	// exportEnded receives how "export" ended.
	exportEnded = make(chan error, 4)
	revoked     atomic.Bool
	counted     atomic.Int32
)

// codeBusy is a transient refusal of "counter".
var codeBusy = agentcap.NewCode("busy", agentcap.CodeTemporarilyUnavailable)

// revocable is the Authorizer of the long-running surface's callers: it
// allows every call, and alice may no longer act once revoked is set.
type revocable struct{ subject string }

func (revocable) Authorize(context.Context, *auth.Call) error { return nil }

func (revocable) GrantStatus(string) string { return "" }

func (r revocable) Recheck(context.Context) error {
	if revoked.Load() && r.subject == "alice" {
		return agentcap.NewError(agentcap.CodeAgentRevoked, "the agent was revoked")
	}
	return nil
}

func longCapabilities() []core.Definer {
	return []core.Definer{
		core.MustDefineStream("ticks", "Emit n ticks",
			func(ctx context.Context, _ app, in ticksIn, emit *core.Emitter[tickChunk]) (countOut, error) {
				for i := 1; i <= in.N; i++ {
					if err := emit.Emit(tickChunk{Seq: i}); err != nil {
						return countOut{}, err
					}
					if i == 1 && in.Hold {
						select {
						case <-gate:
						case <-ctx.Done():
							return countOut{}, ctx.Err()
						}
					}
				}
				return countOut{N: in.N}, nil
			}),
		core.MustDefineStream("forever", "Emit once, then wait for the end",
			func(ctx context.Context, _ app, _ core.NoInput, emit *core.Emitter[tickChunk]) (countOut, error) {
				if err := emit.Emit(tickChunk{Seq: 1}); err != nil {
					return countOut{}, err
				}
				<-ctx.Done()
				streamEnded <- context.Cause(ctx)
				return countOut{}, ctx.Err()
			}),
		core.MustDefine("export", "Build an export, slowly",
			func(ctx context.Context, _ app, in echoIn) (countOut, error) {
				core.ReportProgress(ctx, core.Progress{Progress: 1, Total: 3, Message: "started " + in.Text})
				select {
				case <-gate:
					exportEnded <- nil
					return countOut{N: 3}, nil
				case <-ctx.Done():
					exportEnded <- ctx.Err()
					return countOut{}, ctx.Err()
				}
			}, core.WithAsync()),
		core.MustDefine("counter", "Count calls",
			func(_ context.Context, _ app, in payIn) (countOut, error) {
				if in.Currency == "ERR" {
					return countOut{}, agentcap.NewError(codeBusy, "try again")
				}
				return countOut{N: int(counted.Add(1))}, nil
			}),
		core.MustDefine("echo", "Echo text", func(_ context.Context, a app, in echoIn) (echoOut, error) {
			return echoOut{Text: in.Text, User: a.User}, nil
		}),
	}
}

func newLongHandler(t *testing.T) *httpx.Handler {
	t.Helper()
	exec, err := core.NewExecutor(core.MustRegistry(longCapabilities()...), newContext, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.New(jobs.Config{PollInterval: 2 * time.Second, ProgressInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	guard, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config{
		Verifier: tokens{authorizer: func(subject string) auth.Authorizer { return revocable{subject} }},
		LongRunning: httpx.LongRunning{
			Jobs:              m,
			BaseURL:           longBase,
			Idempotency:       guard,
			StreamMaxDuration: 400 * time.Millisecond,
			RecheckInterval:   20 * time.Millisecond,
			KeepAlive:         20 * time.Millisecond,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type sseEvent struct{ typ, data string }

// readEvent reads one event, skipping comment lines.
func readEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v (event so far %+v)", err, ev)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.typ != "" {
				return ev
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			ev.typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		case line == "data:":
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
}

func longPost(t *testing.T, ctx context.Context, base, auth, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/capability/execute", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+auth)
	req.Header.Set("Content-Type", ctJSON)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStreams(t *testing.T) {
	h := newLongHandler(t)
	for _, s := range startServers(t, h) {
		t.Run(s.name, func(t *testing.T) {
			t.Run("events arrive before the handler returns", func(t *testing.T) {
				resp := longPost(t, context.Background(), s.url, "alice", `{"capability":"ticks","arguments":{"n":3,"hold":true}}`, nil)
				defer resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
					t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
				}
				r := bufio.NewReader(resp.Body)
				// The handler is held until this first event has arrived: a
				// router that buffered the stream would never deliver it.
				first := make(chan sseEvent, 1)
				go func() { first <- readEvent(t, r) }()
				select {
				case ev := <-first:
					if ev != (sseEvent{"data", `{"seq":1}`}) {
						t.Errorf("first event %+v", ev)
					}
				case <-time.After(5 * time.Second):
					gate <- struct{}{}
					t.Fatal("the first event did not arrive while the handler was running")
				}
				gate <- struct{}{}
				want := []sseEvent{{"data", `{"seq":2}`}, {"data", `{"seq":3}`}, {"done", `{"n":3}`}}
				for _, w := range want {
					if ev := readEvent(t, r); ev != w {
						t.Errorf("event %+v, want %+v", ev, w)
					}
				}
			})
			t.Run("a refused stream is an ordinary error", func(t *testing.T) {
				resp := longPost(t, context.Background(), s.url, "alice", `{"capability":"ticks","arguments":{"n":99}}`, nil)
				body := readAll(t, resp)
				if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"error":"invalid_request"`) {
					t.Errorf("%d %s", resp.StatusCode, body)
				}
			})
			t.Run("maximum duration", func(t *testing.T) {
				resp := longPost(t, context.Background(), s.url, "alice", `{"capability":"forever"}`, nil)
				defer resp.Body.Close()
				r := bufio.NewReader(resp.Body)
				readEvent(t, r)
				ev := readEvent(t, r)
				if ev.typ != "error" || !strings.Contains(ev.data, `"error":"stream_expired"`) {
					t.Errorf("event %+v", ev)
				}
				if ev := readEvent(t, r); ev.typ != "done" || ev.data != "" {
					t.Errorf("last event %+v", ev)
				}
				if cause := <-streamEnded; cause == nil || !strings.Contains(cause.Error(), "maximum duration") {
					t.Errorf("handler's context ended with %v", cause)
				}
			})
			t.Run("revocation", func(t *testing.T) {
				resp := longPost(t, context.Background(), s.url, "alice", `{"capability":"forever"}`, nil)
				defer resp.Body.Close()
				r := bufio.NewReader(resp.Body)
				readEvent(t, r)
				revoked.Store(true)
				defer revoked.Store(false)
				ev := readEvent(t, r)
				if ev.typ != "error" || ev.data != `{"error":"agent_revoked","message":"the agent was revoked"}` {
					t.Errorf("event %+v", ev)
				}
				<-streamEnded
			})
			t.Run("client disconnect", func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				resp := longPost(t, ctx, s.url, "alice", `{"capability":"forever"}`, nil)
				readEvent(t, bufio.NewReader(resp.Body))
				cancel()
				resp.Body.Close()
				select {
				case cause := <-streamEnded:
					if strings.Contains(cause.Error(), "maximum duration") {
						t.Errorf("ended by the maximum duration, not the disconnect: %v", cause)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the stream went on after its client left")
				}
			})
		})
	}
}

func TestBatchRefusesLongItems(t *testing.T) {
	h := newLongHandler(t)
	for _, s := range startServers(t, h) {
		req, _ := http.NewRequest("POST", s.url+"/capability/batch-execute", strings.NewReader(
			`{"requests":[{"id":"s","capability":"ticks","arguments":{"n":1}},{"id":"j","capability":"export","arguments":{"text":"x"}},{"id":"e","capability":"echo","arguments":{"text":"x"}}]}`))
		req.Header.Set("Authorization", "Bearer alice")
		req.Header.Set("Content-Type", ctJSON)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		const msg = "this capability streams or runs as a job, which a batch cannot carry: execute it on its own"
		want := `{"responses":[{"id":"s","status":"failed","error":{"code":"batch_unsupported_result_type","message":"` + msg +
			`"}},{"id":"j","status":"failed","error":{"code":"batch_unsupported_result_type","message":"` + msg +
			`"}},{"id":"e","status":"completed","data":{"text":"x","user":"alice","tenant":""}}]}` + "\n"
		if resp.StatusCode != 200 || body != want {
			t.Errorf("%s: %d %s", s.name, resp.StatusCode, body)
		}
	}
}

// statusURL moves a status_url built on longBase to the server under test.
func statusURL(base, raw string) string {
	return base + strings.TrimPrefix(raw, strings.TrimSuffix(longBase, "/"))
}

func statusCall(t *testing.T, method, target, auth string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, target, nil)
	req.Header.Set("Authorization", "Bearer "+auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, readAll(t, resp)
}

func TestJobs(t *testing.T) {
	h := newLongHandler(t)
	for _, s := range startServers(t, h) {
		t.Run(s.name, func(t *testing.T) {
			start := func() (string, http.Header, string) {
				resp := longPost(t, context.Background(), s.url, "alice", `{"capability":"export","arguments":{"text":"q1"}}`, nil)
				body := readAll(t, resp)
				if resp.StatusCode != 202 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				var ans struct {
					Status     string `json:"status"`
					StatusURL  string `json:"status_url"`
					RetryAfter int    `json:"retry_after"`
				}
				if err := json.Unmarshal([]byte(body), &ans); err != nil || ans.Status != "pending" || ans.RetryAfter != 2 ||
					!strings.HasPrefix(ans.StatusURL, longBase+"capability/status?id=job_") {
					t.Fatalf("202 body %s (%v)", body, err)
				}
				return statusURL(s.url, ans.StatusURL), resp.Header, body
			}
			target, hdr, _ := start()
			if hdr.Get("Retry-After") != "2" {
				t.Errorf("Retry-After %q", hdr.Get("Retry-After"))
			}
			// The handler reports its progress as it starts, which may
			// be just after the 202.
			var (
				code int
				body string
			)
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
				if code, hdr, body = statusCall(t, "GET", target, "alice"); strings.Contains(body, "progress") {
					break
				}
			}
			if code != 200 || hdr.Get("Retry-After") != "2" || !strings.Contains(body, `"status":"pending"`) ||
				!strings.Contains(body, `"progress":{"progress":1,"total":3,"message":"started q1"}`) {
				t.Errorf("poll: %d %v %s", code, hdr, body)
			}
			code, _, body = statusCall(t, "GET", target, "admin")
			if code != 404 || body != `{"error":"job_not_found","message":"no such job"}`+"\n" {
				t.Errorf("another caller: %d %s", code, body)
			}
			gate <- struct{}{}
			<-exportEnded
			deadline := time.Now().Add(5 * time.Second)
			for {
				code, _, body = statusCall(t, "GET", target, "alice")
				if !strings.Contains(body, "pending") || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if code != 200 || body != `{"status":"completed","result":{"n":3}}`+"\n" {
				t.Errorf("completed: %d %s", code, body)
			}

			// DELETE cancels a running job: its handler's context ends.
			target, _, _ = start()
			code, _, body = statusCall(t, "DELETE", target, "admin")
			if code != 404 {
				t.Errorf("cancel by another caller: %d %s", code, body)
			}
			code, _, body = statusCall(t, "DELETE", target, "alice")
			want := `{"status":"failed","error":{"error":"cancelled","message":"the job was cancelled","code":"cancelled"}}` + "\n"
			if code != 200 || body != want {
				t.Errorf("cancel: %d %s", code, body)
			}
			if err := <-exportEnded; !errors.Is(err, context.Canceled) {
				t.Errorf("the handler ended with %v", err)
			}
			if code, _, body = statusCall(t, "GET", target, "alice"); body != want {
				t.Errorf("after cancel: %d %s", code, body)
			}
			if code, _, body = statusCall(t, "PUT", target, "alice"); code != 405 {
				t.Errorf("PUT: %d %s", code, body)
			}
			if code, _, _ = statusCall(t, "GET", s.url+"/capability/status?id=job_nope", "alice"); code != 404 {
				t.Errorf("unknown job: %d", code)
			}
		})
	}
}

func TestIdempotencyKeys(t *testing.T) {
	h := newLongHandler(t)
	counted.Store(0)
	for i, s := range startServers(t, h) {
		t.Run(s.name, func(t *testing.T) {
			key := map[string]string{"Idempotency-Key": "k-" + s.name}
			body := `{"capability":"counter","arguments":{"amount":5,"currency":"EUR"}}`
			first := longPost(t, context.Background(), s.url, "alice", body, key)
			firstBody := readAll(t, first)
			again := longPost(t, context.Background(), s.url, "alice", `{"arguments":{"currency":"EUR","amount":5.0},"capability":"counter"}`, key)
			againBody := readAll(t, again)
			if first.StatusCode != 200 || first.Header.Get("Idempotent-Replayed") != "" {
				t.Errorf("first: %d %v", first.StatusCode, first.Header)
			}
			if again.StatusCode != 200 || againBody != firstBody || again.Header.Get("Idempotent-Replayed") != "true" ||
				again.Header.Get("Content-Type") != "application/json" {
				t.Errorf("replay: %d %v %s (first %s)", again.StatusCode, again.Header, againBody, firstBody)
			}
			// Each router's turn runs the handler twice: once for the key,
			// once for another caller's key of the same name.
			if want := fmt.Sprintf(`{"data":{"n":%d}}`+"\n", 1+2*i); firstBody != want {
				t.Errorf("first body %s, want %s", firstBody, want)
			}
			reused := longPost(t, context.Background(), s.url, "alice", `{"capability":"counter","arguments":{"amount":6,"currency":"EUR"}}`, key)
			if b := readAll(t, reused); reused.StatusCode != 422 || !strings.Contains(b, `"error":"idempotency_key_reused"`) {
				t.Errorf("other arguments: %d %s", reused.StatusCode, b)
			}
			// Another caller's key of the same name runs on its own.
			other := longPost(t, context.Background(), s.url, "admin", body, key)
			if b := readAll(t, other); other.StatusCode != 200 || other.Header.Get("Idempotent-Replayed") != "" || b == firstBody {
				t.Errorf("another caller: %d %s", other.StatusCode, b)
			}
			// A transient failure is not kept: the retry runs again.
			errKey := map[string]string{"Idempotency-Key": "err-" + s.name}
			for range 2 {
				resp := longPost(t, context.Background(), s.url, "alice", `{"capability":"counter","arguments":{"amount":1,"currency":"ERR"}}`, errKey)
				if b := readAll(t, resp); resp.StatusCode != 503 || resp.Header.Get("Idempotent-Replayed") != "" {
					t.Errorf("transient failure: %d %v %s", resp.StatusCode, resp.Header, b)
				}
			}
			bad := longPost(t, context.Background(), s.url, "alice", body, map[string]string{"Idempotency-Key": strings.Repeat("x", 300)})
			if b := readAll(t, bad); bad.StatusCode != 400 || !strings.Contains(b, "invalid_idempotency_key") {
				t.Errorf("bad key: %d %s", bad.StatusCode, b)
			}
			stream := longPost(t, context.Background(), s.url, "alice", `{"capability":"ticks","arguments":{"n":1}}`, key)
			if b := readAll(t, stream); stream.StatusCode != 400 || !strings.Contains(b, "invalid_idempotency_key") {
				t.Errorf("key on a stream: %d %s", stream.StatusCode, b)
			}
		})
	}
}
