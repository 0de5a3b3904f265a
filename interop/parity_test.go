//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// get sends a GET with a bearer token and decodes the JSON answer.
func get(t *testing.T, u, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
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

// entries indexes a capability listing by name.
func entries(m map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	list, _ := m["capabilities"].([]any)
	for _, c := range list {
		e := c.(map[string]any)
		out[e["name"].(string)] = e
	}
	return out
}

// runParity checks the behaviours agentcap's provider gained for parity
// with the reference provider and the specification, against every
// provider: list entries with location (§5.2), list with a host JWT
// (§5.2), status of an active agent while a request waits (§5.5), and a
// capability request approved by CIBA (§7.2).
func runParity(t *testing.T, p providerUnderTest, d *client.Discovery) {
	ctx := context.Background()
	listURL, err := d.EndpointURL("capabilities")
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t)
	ap := &approver{t: t, p: p}
	a, _, err := cl.Connect(ctx, p.URL(), client.ConnectOptions{
		Name: "parity", Mode: agentcap.ModeDelegated, Capabilities: client.Capabilities("echo"), OnApproval: ap.approve,
	})
	ap.check()
	if err != nil {
		t.Fatalf("connect: %v", err)
	}

	t.Run("list entries carry location", func(t *testing.T) {
		tok, err := a.SignJWT(p.Issuer(), nil)
		if err != nil {
			t.Fatal(err)
		}
		status, m := get(t, listURL+"?limit=100", tok)
		e := entries(m)[locationCapability]
		if status != http.StatusOK || e == nil || e["location"] != p.Location() {
			t.Errorf("%d, entry %v, want location %s", status, e, p.Location())
		}
		if e := entries(m)["echo"]; e == nil || e["location"] != nil {
			t.Errorf("echo entry %v: no location of its own", e)
		}
	})

	t.Run("list with a host JWT", func(t *testing.T) {
		id, err := cl.HostIdentity(ctx, p.Issuer())
		if err != nil {
			t.Fatal(err)
		}
		host := agentauthtest.NewHost(agentauthtest.Host{ID: "host", Key: id.Key})
		status, m := get(t, listURL+"?limit=100", host.Token(agentauthtest.Token{Audience: p.Issuer()}))
		got := entries(m)
		if status != http.StatusOK || len(got) != 4 {
			t.Fatalf("%d %v", status, m)
		}
		// The specification gives grant_status to agent JWTs only; the
		// reference provider adds it for host JWTs, from the host's
		// default capabilities (see README.md).
		_, isReference := p.(*reference)
		for name, e := range got {
			if _, has := e["grant_status"]; has != isReference {
				t.Errorf("%s: grant_status %v", name, e["grant_status"])
			}
		}
		// An unknown host: agentcap answers 401 invalid_jwt, after which
		// the published client lists without credentials; the reference
		// provider answers as if no token had been sent.
		stranger := agentauthtest.NewHost(agentauthtest.Host{ID: "stranger"})
		want := http.StatusUnauthorized
		if isReference {
			want = http.StatusOK
		}
		if status, m := get(t, listURL, stranger.Token(agentauthtest.Token{Audience: p.Issuer()})); status != want {
			t.Errorf("an unknown host: %d %v", status, m)
		}
	})

	t.Run("status of an active agent while a request waits", func(t *testing.T) {
		reqURL, err := d.EndpointURL("request_capability")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := a.SignJWT(p.Issuer(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if status, m := post(t, reqURL, tok, map[string]any{"capabilities": []string{"add"}}); status != http.StatusOK {
			t.Fatalf("request: %d %v", status, m)
		}
		for i := range 3 {
			st, err := a.Status(ctx)
			if err != nil || st.Status != agentcap.StatusActive {
				t.Fatalf("status read %d: %+v %v", i, st, err)
			}
		}
	})

	t.Run("capability request approved by CIBA", func(t *testing.T) {
		// An agent of its own: the reference provider asks the approver
		// for the user code of any device request the agent still has.
		c, _, _ := connectDelegated(t, p, client.Capabilities("echo")...)
		ap := &approver{t: t, p: p}
		st, err := c.RequestCapabilities(ctx, client.RequestOptions{
			Capabilities: client.Capabilities("transfer"), PreferredMethod: "ciba", BindingMessage: "parity",
			OnApproval: ap.approve,
		})
		ap.check()
		if err != nil {
			t.Fatal(err)
		}
		if len(ap.seen) != 1 || ap.seen[0].Method != "ciba" || ap.seen[0].UserCode != "" {
			t.Errorf("approvals shown: %+v", ap.seen)
		}
		if g, ok := st.Grant("transfer"); !ok || g.Status != agentcap.StatusActive {
			t.Errorf("transfer after the CIBA approval: %+v", st.Grants)
		}
	})
}
