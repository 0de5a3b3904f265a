//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// TestReference runs the suite against the reference provider started by
// run.sh, whose harness URL is in AGENTCAP_INTEROP_URL.
func TestReference(t *testing.T) {
	_, ref := referenceFromEnv(t)
	t.Run("discovery at the site root", func(t *testing.T) {
		d, err := newClient(t).Discover(context.Background(), ref.Root())
		if err != nil {
			t.Fatal(err)
		}
		if d.Issuer != ref.Issuer() || d.URL != ref.Root()+"/.well-known/agent-configuration" {
			t.Errorf("issuer %s from %s", d.Issuer, d.URL)
		}
	})
	runSuite(t, ref)
}

// referenceFromEnv returns the URL of the harness run.sh started, from
// AGENTCAP_INTEROP_URL, and its reference provider.
func referenceFromEnv(t *testing.T) (string, *reference) {
	t.Helper()
	harness := os.Getenv("AGENTCAP_INTEROP_URL")
	if harness == "" {
		t.Fatal("AGENTCAP_INTEROP_URL is not set: start the harness with interop/run.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref, err := newReference(ctx, harness)
	if err != nil {
		t.Fatal(err)
	}
	return harness, ref
}

// TestAgentcap runs the same suite against agentcap's own provider
// (package agentauth/provider), served by this process on loopback. It
// needs no harness.
func TestAgentcap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	location := "http://" + ln.Addr().String() + "/capability/execute"
	ln.Close()
	p, err := newAgentcapProvider(location)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	runSuite(t, p)
}

// locationMessage is the input and output of locationCapability.
type locationMessage struct {
	Message string `json:"message"`
}

var locationEcho = core.MustDefine(locationCapability, "Echo, executed by agentcap.",
	func(_ context.Context, _ struct{}, in locationMessage) (locationMessage, error) { return in, nil })

// startLocation serves an agentcap resource server at p.Location(): the
// agentauth introspection source verifies the provider's agent JWTs
// through the provider's introspection endpoint.
func startLocation(t *testing.T, p providerUnderTest, introspect string) {
	t.Helper()
	u, err := url.Parse(p.Location())
	if err != nil {
		t.Fatal(err)
	}
	src, err := agentauth.NewIntrospectionSource(agentauth.IntrospectionConfig{
		Endpoint:  introspect,
		Audiences: []string{p.Location()},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := core.NewRegistry(locationEcho)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(reg, noContext, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.New(agentauth.Config{Sessions: src, Issuer: p.Issuer()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpx.New(exec, httpx.Config{Verifier: v})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("listen on the location %s: %v", u.Host, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// newClient returns a client with its keys in memory, so that every test
// has hosts of its own, and polls that wait at most 100 ms.
func newClient(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{
		AllowInsecureLoopback: true,
		Keys:                  client.NewMemoryKeyStore(),
		HostName:              "interop",
		Sleep: func(ctx context.Context, d time.Duration) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(d, 100*time.Millisecond)):
				return nil
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// approver approves every approval the client is shown, as the
// provider's user, and records the approvals and any failure.
type approver struct {
	t  *testing.T
	p  providerUnderTest
	mu sync.Mutex
	// seen are the approvals shown.
	seen []client.Approval
	errs []error
	wg   sync.WaitGroup
}

func (a *approver) approve(ap client.Approval) {
	a.mu.Lock()
	a.seen = append(a.seen, ap)
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.p.Decide(ctx, decision{AgentID: ap.AgentID, UserCode: ap.UserCode}); err != nil {
			a.mu.Lock()
			a.errs = append(a.errs, err)
			a.mu.Unlock()
		}
	}()
}

func (a *approver) check() {
	a.t.Helper()
	a.wg.Wait()
	for _, err := range a.errs {
		a.t.Errorf("approving: %v", err)
	}
}

// connectDelegated connects a delegated agent and approves it.
func connectDelegated(t *testing.T, p providerUnderTest, caps ...client.CapabilityRequest) (*client.Agent, *client.AgentStatus, *approver) {
	t.Helper()
	ap := &approver{t: t, p: p}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, st, err := newClient(t).Connect(ctx, p.URL(), client.ConnectOptions{
		Name:         t.Name(),
		Mode:         agentcap.ModeDelegated,
		Capabilities: caps,
		Reason:       "interop test",
		OnApproval:   ap.approve,
	})
	ap.check()
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return a, st, ap
}

func errCode(err error) (int, agentcap.Code) {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Status, e.Code
	}
	return 0, agentcap.Code(fmt.Sprint(err))
}

func constraint(s string) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

// post sends a raw execute request with a token of the caller's making.
func post(t *testing.T, u, token string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return resp.StatusCode, m
}

// runSuite is the interop suite, the same for every provider.
func runSuite(t *testing.T, p providerUnderTest) {
	ctx := context.Background()
	d, err := newClient(t).Discover(ctx, p.URL())
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	introspect, err := d.EndpointURL("introspect")
	if err != nil {
		t.Fatal(err)
	}
	startLocation(t, p, introspect)

	t.Run("discovery", func(t *testing.T) {
		if d.Version != "1.0-draft" || d.Issuer != p.Issuer() {
			t.Errorf("version %q, issuer %q", d.Version, d.Issuer)
		}
		if want := p.Issuer() + "/capability/execute"; d.DefaultLocationURL() != want {
			t.Errorf("default location %s, want %s", d.DefaultLocationURL(), want)
		}
		for _, name := range []string{"register", "status", "revoke", "request_capability"} {
			u, _ := d.EndpointURL(name)
			if !strings.HasPrefix(u, p.Issuer()+"/") {
				t.Errorf("endpoint %s = %s, not under the issuer", name, u)
			}
		}
	})

	t.Run("delegated connect with approval", func(t *testing.T) {
		a, st, ap := connectDelegated(t, p, client.Capabilities("echo")...)
		if len(ap.seen) != 1 || ap.seen[0].Method != "device_authorization" || ap.seen[0].UserCode == "" || ap.seen[0].VerificationURI == "" || ap.seen[0].Interval <= 0 {
			t.Errorf("approvals shown: %+v", ap.seen)
		}
		if st.Status != agentcap.StatusActive || st.Mode != agentcap.ModeDelegated || st.AgentID != a.ID() {
			t.Errorf("status after approval: %+v", st)
		}
		g, ok := st.Grant("echo")
		if !ok || g.Status != agentcap.StatusActive {
			t.Errorf("echo grant %+v", g)
		}
		again, err := a.Status(ctx)
		if err != nil || again.Status != agentcap.StatusActive || again.HostID != a.Connection().HostID {
			t.Errorf("status: %+v, %v", again, err)
		}
	})

	t.Run("autonomous connect", func(t *testing.T) {
		a, st, err := newClient(t).Connect(ctx, p.URL(), client.ConnectOptions{
			Name: t.Name(), Mode: agentcap.ModeAutonomous, Capabilities: client.Capabilities("echo", "add"),
			OnApproval: func(client.Approval) { t.Error("an autonomous agent was sent for approval") },
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != agentcap.StatusActive || st.Mode != agentcap.ModeAutonomous {
			t.Errorf("status %+v", st)
		}
		res, err := a.Execute(ctx, "add", map[string]int{"a": 2, "b": 40})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Data) != `{"sum":42}` {
			t.Errorf("add: %s", res.Data)
		}
	})

	a, _, _ := connectDelegated(t, p,
		client.CapabilityRequest{Name: "echo"},
		client.CapabilityRequest{Name: "transfer", Constraints: constraint(`{"amount":{"max":100},"currency":{"in":["EUR","USD"]}}`)},
		client.CapabilityRequest{Name: locationCapability},
	)

	t.Run("list and describe", func(t *testing.T) {
		page, err := a.ListCapabilities(ctx, client.ListOptions{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Capabilities) != 2 || !page.HasMore || page.NextCursor == "" {
			t.Errorf("first page: %+v", page)
		}
		all, err := a.AllCapabilities(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, c := range all {
			got[c.Name] = c.GrantStatus
		}
		want := map[string]string{"echo": "granted", "add": "not_granted", "transfer": "granted", locationCapability: "granted"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("capabilities (-want +got):\n%s", diff)
		}
		c, err := a.Describe(ctx, locationCapability)
		if err != nil {
			t.Fatal(err)
		}
		if c.Location != p.Location() || !strings.Contains(string(c.Input), `"message"`) {
			t.Errorf("describe: %+v", c)
		}
		if _, err := a.Describe(ctx, "no_such_capability"); !client.IsCode(err, agentcap.CodeCapabilityNotFound) {
			t.Errorf("describe unknown: %v", err)
		}
	})

	t.Run("execute at the default location", func(t *testing.T) {
		res, err := a.Execute(ctx, "echo", map[string]string{"message": "hello"}, client.WithIdempotencyKey("interop-1"))
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Data) != `{"message":"hello"}` {
			t.Errorf("echo: %s", res.Data)
		}
		res, err = a.Execute(ctx, "transfer", map[string]any{"amount": 25, "currency": "EUR"})
		if err != nil {
			t.Fatal(err)
		}
		var tr struct {
			ID     string  `json:"transfer_id"`
			Amount float64 `json:"amount"`
		}
		if json.Unmarshal(res.Data, &tr) != nil || tr.ID == "" || tr.Amount != 25 {
			t.Errorf("transfer: %s", res.Data)
		}
		if _, err := a.Execute(ctx, "add", map[string]int{"a": 1, "b": 1}); !client.IsCode(err, agentcap.CodeCapabilityNotGranted) {
			t.Errorf("ungranted capability: %v", err)
		}
	})

	t.Run("execute at an agentcap location", func(t *testing.T) {
		res, err := a.Execute(ctx, locationCapability, map[string]string{"message": "via introspection"})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Data) != `{"message":"via introspection"}` {
			t.Errorf("data: %s", res.Data)
		}
		// A token meant for the provider's default location is refused
		// by the agentcap location before it asks the provider.
		tok, err := a.SignJWT(d.DefaultLocationURL(), []string{locationCapability})
		if err != nil {
			t.Fatal(err)
		}
		status, body := post(t, p.Location(), tok, map[string]any{"capability": locationCapability, "arguments": map[string]string{"message": "x"}})
		if status != http.StatusUnauthorized || body["error"] != string(agentcap.CodeInvalidJWT) {
			t.Errorf("token for another audience: %d %v", status, body)
		}
	})

	t.Run("batch", func(t *testing.T) {
		res, err := a.BatchExecute(ctx, []client.BatchCall{
			{ID: "e", Capability: "echo", Arguments: map[string]string{"message": "one"}},
			{ID: "l", Capability: locationCapability, Arguments: map[string]string{"message": "two"}},
			{ID: "t", Capability: "transfer", Arguments: map[string]any{"amount": 1000, "currency": "EUR"}},
			{ID: "x", Capability: "add", Arguments: map[string]int{"a": 1, "b": 2}},
		})
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			ID, Data string
			Code     agentcap.Code
		}
		var got []row
		for _, r := range res {
			_, code := errCode(r.Err)
			if r.Err == nil {
				code = ""
			}
			got = append(got, row{r.ID, string(r.Data), code})
		}
		want := []row{
			{"e", `{"message":"one"}`, ""},
			{"l", `{"message":"two"}`, ""},
			{"t", "", agentcap.CodeConstraintViolated},
			{"x", "", agentcap.CodeCapabilityNotGranted},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("batch results (-want +got):\n%s", diff)
		}
	})

	t.Run("constraint violation", func(t *testing.T) {
		_, err := a.Execute(ctx, "transfer", map[string]any{"amount": 500, "currency": "GBP"})
		var e *client.Error
		if !errors.As(err, &e) {
			t.Fatalf("err = %v", err)
		}
		if e.Status != http.StatusForbidden || e.Code != agentcap.CodeConstraintViolated {
			t.Errorf("error %d %s", e.Status, e.Code)
		}
		want := []agentcap.ConstraintViolation{
			{Field: "amount", Constraint: json.RawMessage(`{"max":100}`), Actual: json.RawMessage(`500`)},
			{Field: "currency", Constraint: json.RawMessage(`{"in":["EUR","USD"]}`), Actual: json.RawMessage(`"GBP"`)},
		}
		if diff := cmp.Diff(want, e.Violations, cmp.Comparer(jsonEqual)); diff != "" {
			t.Errorf("violations (-want +got):\n%s", diff)
		}
	})

	t.Run("request capability and approve", func(t *testing.T) {
		ap := &approver{t: t, p: p}
		st, err := a.RequestCapabilities(ctx, client.RequestOptions{
			Capabilities: []client.CapabilityRequest{{Name: "add", Constraints: constraint(`{"a":{"max":10}}`)}},
			Reason:       "needs to add",
			OnApproval:   ap.approve,
		})
		ap.check()
		if err != nil {
			t.Fatal(err)
		}
		if len(ap.seen) != 1 || ap.seen[0].AgentID != a.ID() {
			t.Errorf("approvals shown: %+v", ap.seen)
		}
		g, ok := st.Grant("add")
		if !ok || g.Status != agentcap.StatusActive {
			t.Fatalf("add grant after approval: %+v", st.Grants)
		}
		res, err := a.Execute(ctx, "add", map[string]int{"a": 3, "b": 4})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Data) != `{"sum":7}` {
			t.Errorf("add: %s", res.Data)
		}
		if _, err := a.Execute(ctx, "add", map[string]int{"a": 11, "b": 4}); !client.IsCode(err, agentcap.CodeConstraintViolated) {
			t.Errorf("add beyond the requested constraint: %v", err)
		}
	})

	t.Run("replayed token refused", func(t *testing.T) {
		body := map[string]any{"capability": "echo", "arguments": map[string]string{"message": "once"}}
		tok, err := a.SignJWT(d.DefaultLocationURL(), []string{"echo"})
		if err != nil {
			t.Fatal(err)
		}
		if status, _ := post(t, d.DefaultLocationURL(), tok, body); status != http.StatusOK {
			t.Fatalf("first use: %d", status)
		}
		status, m := post(t, d.DefaultLocationURL(), tok, body)
		replayCode := string(agentcap.CodeInvalidJWT)
		if rc, ok := p.(replayCoder); ok {
			replayCode = rc.ReplayCode()
		}
		if status != http.StatusUnauthorized || m["error"] != replayCode {
			t.Errorf("replay at the provider: %d %v", status, m)
		}

		body["capability"] = locationCapability
		tok, err = a.SignJWT(p.Location(), []string{locationCapability})
		if err != nil {
			t.Fatal(err)
		}
		if status, m := post(t, p.Location(), tok, body); status != http.StatusOK {
			t.Fatalf("first use at the agentcap location: %d %v", status, m)
		}
		status, m = post(t, p.Location(), tok, body)
		if status != http.StatusUnauthorized || m["error"] != string(agentcap.CodeInvalidJWT) {
			t.Errorf("replay at the agentcap location: %d %v", status, m)
		}
	})

	t.Run("revoke then execute fails", func(t *testing.T) {
		b, _, _ := connectDelegated(t, p, client.Capabilities("echo", locationCapability)...)
		if _, err := b.Execute(ctx, "echo", map[string]string{"message": "before"}); err != nil {
			t.Fatal(err)
		}
		if err := b.Revoke(ctx); err != nil {
			t.Fatal(err)
		}
		if status, code := errCode(mustFail(b.Execute(ctx, "echo", map[string]string{"message": "after"}))); status != http.StatusForbidden || code != agentcap.CodeAgentRevoked {
			t.Errorf("execute after revoke: %d %s", status, code)
		}
		// Introspection only says the token is inactive, so the agentcap
		// location answers invalid_jwt.
		if status, code := errCode(mustFail(b.Execute(ctx, locationCapability, map[string]string{"message": "after"}))); status != http.StatusUnauthorized || code != agentcap.CodeInvalidJWT {
			t.Errorf("execute at the agentcap location after revoke: %d %s", status, code)
		}
	})

	runParity(t, p, d)
}

func mustFail(_ *client.Result, err error) error { return err }

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
}
