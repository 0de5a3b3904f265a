package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/client"
)

const (
	testdata      = "../../testdata"
	aliceKey      = testdata + "/alice-agent.key.json"
	exampleDir    = testdata + "/directory.example.json"
	exampleIssuer = "http://127.0.0.1:8080"
)

// mint runs devtoken and returns its exit code, output and errors.
func mint(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestTokensVerify checks the tokens devtoken prints with the key the
// bank's example directory trusts, through the verifier the bank uses.
func TestTokensVerify(t *testing.T) {
	dir, err := agentauth.LoadDirectoryFile(exampleDir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: dir, Audiences: []string{defaultAudience, exampleIssuer}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		aud  string
		caps []string
	}{
		{"default audience, no capabilities claim", []string{"-key", aliceKey}, defaultAudience, nil},
		{"one capability", []string{"-key", aliceKey, "-aud", defaultAudience, "-capability", "check_balance"}, defaultAudience, []string{"check_balance"}},
		{"several capabilities", []string{"-key", aliceKey, "-capability", "list_accounts, check_balance,exchange_rate"}, defaultAudience,
			[]string{"list_accounts", "check_balance", "exchange_rate"}},
		{"issuer as audience", []string{"-aud", exampleIssuer, "-key", aliceKey}, exampleIssuer, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := mint(c.args...)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
				t.Fatalf("output %q is not one line", out)
			}
			sess, err := v.Session(context.Background(), strings.TrimSuffix(out, "\n"))
			if err != nil {
				t.Fatalf("the bank's verifier refuses the token: %v", err)
			}
			cl := sess.Claims
			if cl.Subject != "agt_alice" || !cmp.Equal(cl.Audience, []string{c.aud}) || !cmp.Equal(cl.Capabilities, c.caps) ||
				cl.ExpiresAt.Sub(cl.IssuedAt) != 60*time.Second || cl.ID == "" {
				t.Errorf("claims %+v", cl)
			}
		})
	}

	// Every run signs a new token id: a token is good for one request.
	_, a, _ := mint("-key", aliceKey)
	_, b, _ := mint("-key", aliceKey)
	if a == b {
		t.Error("two runs printed the same token")
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newKey := func() ed25519.PrivateKey {
		_, k, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k1, k2 := newKey(), newKey()
	jwk, err := client.MarshalPrivateJWK(k1)
	if err != nil {
		t.Fatal(err)
	}
	other := string(jwk)
	b64 := base64.RawURLEncoding.EncodeToString
	mismatched := `{"kty":"OKP","crv":"Ed25519","x":"` + b64(k2.Public().(ed25519.PublicKey)) + `","d":"` + b64(k1.Seed()) + `"}`
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no key", nil, 2, "-key is required"},
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined"},
		{"extra argument", []string{"-key", aliceKey, "more"}, 2, `unexpected argument "more"`},
		{"relative audience", []string{"-key", aliceKey, "-aud", "/capability/execute"}, 2, "-aud"},
		{"empty capability", []string{"-key", aliceKey, "-capability", "check_balance,,x"}, 2, "empty name"},
		{"missing file", []string{"-key", filepath.Join(dir, "absent.json")}, 1, "absent.json"},
		{"not JSON", []string{"-key", write("bad.json", `{"agent_id":`)}, 1, "not a key file"},
		{"trailing data", []string{"-key", write("trail.json", `{"agent_id":"a","jwk":`+other+`} {}`)}, 1, "data after the object"},
		{"unknown member", []string{"-key", write("extra.json", `{"agent_id":"a","jwk":`+other+`,"kid":"x"}`)}, 1, `unknown field "kid"`},
		{"host key", []string{"-key", testdata + "/alice-host.key.json"}, 1, `holds the key of host "hst_alice"`},
		{"both ids", []string{"-key", write("both.json", `{"agent_id":"a","host_id":"h","jwk":`+other+`}`)}, 1, "names both"},
		{"no agent id", []string{"-key", write("noid.json", `{"jwk":`+other+`}`)}, 1, `"agent_id" is missing`},
		{"no jwk", []string{"-key", write("nojwk.json", `{"agent_id":"a"}`)}, 1, `"jwk" is missing`},
		{"public key only", []string{"-key", write("pub.json", `{"agent_id":"a","jwk":{"kty":"OKP","crv":"Ed25519","x":"pklWO45dhjHWCzH34LbgQcd1EPpDK4PevCR2nAlZq5s"}}`)}, 1, "jwk: bad private key"},
		{"x and d disagree", []string{"-key", write("mismatch.json", `{"agent_id":"a","jwk":`+mismatched+`}`)}, 1, "jwk: public key x does not match"},
		{"too large", []string{"-key", write("large.json", `{"agent_id":"`+strings.Repeat("a", maxKeyFileBytes)+`"}`)}, 1, "not a key file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := mint(c.args...)
			if code != c.code || out != "" || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, output %q, errors %q; want exit %d and errors containing %q", code, out, errs, c.code, c.want)
			}
		})
	}
	if code, _, errs := mint("-h"); code != 0 || !strings.Contains(errs, "usage: devtoken") {
		t.Errorf("-h: exit %d: %s", code, errs)
	}
}

// TestCommittedKeys checks the demo keys next to the example directory:
// each is marked as a demo key, and is the private half of the public key
// the directory holds for the same id, so that every record of the
// directory can be signed for.
func TestCommittedKeys(t *testing.T) {
	dir, err := agentauth.LoadDirectoryFile(exampleDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(testdata, "*.key.json"))
	if err != nil {
		t.Fatal(err)
	}
	signed := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var kf keyFile
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&kf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.HasPrefix(kf.DemoOnly, "DEMO KEY, NOT A SECRET") {
			t.Errorf("%s: demo_only %q does not mark it as a demo key", f, kf.DemoOnly)
		}
		key, err := client.ParsePrivateJWK(kf.JWK)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var public json.RawMessage
		switch {
		case kf.AgentID != "":
			a, err := dir.Agent(context.Background(), kf.AgentID)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			public = a.PublicKey
			signed["agent "+kf.AgentID] = true
		case kf.HostID != "":
			h, err := dir.Host(context.Background(), kf.HostID)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			public = h.PublicKey
			signed["host "+kf.HostID] = true
		}
		var jwk struct{ X string }
		if err := json.Unmarshal(public, &jwk); err != nil {
			t.Fatalf("%s: the directory's key: %v", f, err)
		}
		if x := base64.RawURLEncoding.EncodeToString(key.Public().(ed25519.PublicKey)); x != jwk.X {
			t.Errorf("%s: public half %s, the directory holds %s", f, x, jwk.X)
		}
	}
	want := map[string]bool{"agent agt_alice": true, "host hst_alice": true}
	if diff := cmp.Diff(want, signed); diff != "" {
		t.Errorf("records with a committed key (-want +got):\n%s", diff)
	}
}
