package agentauth_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

type lrIn struct {
	Text string `json:"text"`
}

type lrOut struct {
	Text string `json:"text"`
}

type lrWorld struct {
	srv      *httptest.Server
	dir      *agentauth.MemoryDirectory
	one, two *agentauthtest.Agent
	runs     chan string
}

func newLRWorld(t *testing.T) *lrWorld {
	t.Helper()
	w := &lrWorld{runs: make(chan string, 16)}
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "user_1"})
	w.one = host.NewAgent(agentauthtest.Agent{ID: "agt_one"}).Grant("report", nil).Grant("feed", nil).Grant("note", nil)
	w.two = host.NewAgent(agentauthtest.Agent{ID: "agt_two"}).Grant("report", nil).Grant("note", nil)
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{host}, []*agentauthtest.Agent{w.one, w.two})
	if err != nil {
		t.Fatal(err)
	}
	w.dir = dir
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{htAudience}})
	if err != nil {
		t.Fatal(err)
	}
	defs := []core.Definer{
		core.MustDefine("report", "A report, as a job.",
			func(_ context.Context, _ htApp, in lrIn) (lrOut, error) {
				time.Sleep(20 * time.Millisecond)
				return lrOut(in), nil
			}, core.WithAsync()),
		core.MustDefineStream("feed", "A feed until the end.",
			func(ctx context.Context, _ htApp, _ core.NoInput, emit *core.Emitter[lrOut]) (lrOut, error) {
				if err := emit.Emit(lrOut{Text: "first"}); err != nil {
					return lrOut{}, err
				}
				<-ctx.Done()
				return lrOut{}, ctx.Err()
			}),
		core.MustDefine("note", "Take a note.",
			func(_ context.Context, a htApp, in lrIn) (lrOut, error) {
				w.runs <- a.user
				return lrOut(in), nil
			}),
	}
	// The context names the agent, so that the tests see whose call ran.
	exec := core.MustExecutor(core.MustRegistry(defs...), func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (htApp, error) {
		return htApp{user: id.AgentID}, nil
	}, core.Config{})
	location, err := agentauth.New(agentauth.Config{Sessions: v, Issuer: htIssuer})
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.New(jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	guard, err := idempotency.New(idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config{Verifier: location, LongRunning: httpx.LongRunning{
		Jobs:            m,
		BaseURL:         htIssuer + "/",
		Idempotency:     guard,
		RecheckInterval: 20 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer(h)
	t.Cleanup(w.srv.Close)
	return w
}

func (w *lrWorld) do(t *testing.T, method, target string, a *agentauthtest.Agent, body string, hdr map[string]string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, target, r)
	req.Header.Set("Authorization", "Bearer "+a.Token(agentauthtest.Token{Audience: htAudience}))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func bodyOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A job is polled by its own agent with a fresh token each time; any
// other agent is told it does not exist.
func TestJobBelongsToItsAgent(t *testing.T) {
	w := newLRWorld(t)
	resp := w.do(t, "POST", w.srv.URL+"/capability/execute", w.one, `{"capability":"report","arguments":{"text":"q3"}}`, nil)
	body := bodyOf(t, resp)
	var ans struct {
		StatusURL string `json:"status_url"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil || resp.StatusCode != 202 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	target := w.srv.URL + strings.TrimPrefix(ans.StatusURL, htIssuer)
	if b := bodyOf(t, w.do(t, "GET", target, w.two, "", nil)); b != `{"error":"job_not_found","message":"no such job"}`+"\n" {
		t.Errorf("another agent: %s", b)
	}
	if b := bodyOf(t, w.do(t, "DELETE", target, w.two, "", nil)); !strings.Contains(b, "job_not_found") {
		t.Errorf("another agent cancelling: %s", b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b := bodyOf(t, w.do(t, "GET", target, w.one, "", nil))
		if b == `{"status":"completed","result":{"text":"q3"}}`+"\n" {
			break
		}
		if !strings.Contains(b, `"status":"pending"`) || time.Now().After(deadline) {
			t.Fatalf("poll: %s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Tokens are single-use: a poll that reuses one is refused.
	tok := w.one.Token(agentauthtest.Token{Audience: htAudience})
	for i, want := range []int{200, 401} {
		req, _ := http.NewRequest("GET", target, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if b := bodyOf(t, resp); resp.StatusCode != want {
			t.Errorf("use %d of one token: %d %s", i+1, resp.StatusCode, b)
		}
	}
}

// A stream ends with an error event once its agent is revoked.
func TestStreamEndsWhenTheAgentIsRevoked(t *testing.T) {
	w := newLRWorld(t)
	resp := w.do(t, "POST", w.srv.URL+"/capability/execute", w.one, `{"capability":"feed"}`, nil)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	r := bufio.NewReader(resp.Body)
	first, _ := r.ReadString('\n')
	if first != "event: data\n" {
		t.Fatalf("first line %q", first)
	}
	rec := w.one.Record()
	rec.Status = agentcap.StatusRevoked
	if err := w.dir.PutAgent(rec); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := "data: {\"text\":\"first\"}\n\nevent: error\ndata: {\"error\":\"agent_revoked\",\"message\":\"agent revoked\"}\n\nevent: done\ndata: \n\n"
	if got := strings.ReplaceAll(string(rest), ": keep-alive\n\n", ""); got != want {
		t.Errorf("rest of the stream:\n%q\nwant\n%q", got, want)
	}
}

// Idempotency keys are per agent: the same key of two agents runs twice;
// a repeat by one agent runs once.
func TestIdempotencyKeysPerAgent(t *testing.T) {
	w := newLRWorld(t)
	key := map[string]string{"Idempotency-Key": "note-1"}
	for _, a := range []*agentauthtest.Agent{w.one, w.one, w.two} {
		resp := w.do(t, "POST", w.srv.URL+"/capability/execute", a, `{"capability":"note","arguments":{"text":"hi"}}`, key)
		if b := bodyOf(t, resp); resp.StatusCode != 200 || b != `{"data":{"text":"hi"}}`+"\n" {
			t.Errorf("%s: %d %s", a.ID, resp.StatusCode, b)
		}
	}
	close(w.runs)
	var ran []string
	for u := range w.runs {
		ran = append(ran, u)
	}
	if strings.Join(ran, ",") != "agt_one,agt_two" {
		t.Errorf("runs %v", ran)
	}
}
