package agentauthtest_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// exampleHost is a reproducible host: a seeded random source and a fixed
// clock make its keys and tokens the same on every run.
func exampleHost(h agentauthtest.Host) *agentauthtest.Host {
	h.Rand = rand.NewChaCha8([32]byte{})
	h.Clock = func() time.Time { return time.Unix(1767268800, 0) }
	return agentauthtest.NewHost(h)
}

// part decodes one segment (0 header, 1 claims) of a compact token.
func part(token string, i int) string {
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[i])
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// claim returns one decoded claim of a token as JSON.
func claim(token, name string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(part(token, 1)), &m); err != nil {
		return err.Error()
	}
	if v, ok := m[name]; ok {
		return string(v)
	}
	return "(absent)"
}

func header(token, name string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(part(token, 0)), &m); err != nil {
		return err.Error()
	}
	if v, ok := m[name]; ok {
		return string(v)
	}
	return "(absent)"
}

func ExampleNewHost() {
	h := agentauthtest.NewHost(agentauthtest.Host{
		ID:                  "hst_1",
		UserID:              "usr_1",
		DefaultCapabilities: []string{"read_balance"},
	})
	fmt.Println(h.ID, h.UserID, h.Status, h.DefaultCapabilities, len(h.Key))
	// Output: hst_1 usr_1 active [read_balance] 64
}

func ExampleNewHost_deterministic() {
	// A seeded random source gives the same keys, and a fixed clock the
	// same tokens, on every run.
	seed := [32]byte{42}
	now := func() time.Time { return time.Unix(1700000000, 0) }
	h1 := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Rand: rand.NewChaCha8(seed), Clock: now})
	h2 := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Rand: rand.NewChaCha8(seed), Clock: now})
	a1 := h1.NewAgent(agentauthtest.Agent{ID: "agt_1"})
	a2 := h2.NewAgent(agentauthtest.Agent{ID: "agt_1"})
	token := a1.Token(agentauthtest.Token{Audience: aud})
	fmt.Println(h1.Key.Equal(h2.Key), a1.Key.Equal(a2.Key), token == a2.Token(agentauthtest.Token{Audience: aud}))
	fmt.Println(claim(token, "iat"), claim(token, "exp"))
	// Output:
	// true true true
	// 1700000000 1700000060
}

func ExampleNewHost_status() {
	h := exampleHost(agentauthtest.Host{ID: "hst_1", Status: agentcap.StatusPending})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_1", Status: agentcap.StatusRevoked})
	fmt.Println(h.Record().Status, a.Record().Status)
	// Output: pending revoked
}

func ExampleHost_NewAgent() {
	h := exampleHost(agentauthtest.Host{ID: "hst_1", UserID: "usr_1"})
	delegated := h.NewAgent(agentauthtest.Agent{ID: "agt_1"})
	autonomous := h.NewAgent(agentauthtest.Agent{ID: "agt_2", Mode: agentcap.ModeAutonomous})
	own := h.NewAgent(agentauthtest.Agent{ID: "agt_3", UserID: "usr_2"})
	fmt.Println(delegated.Mode, delegated.UserID, delegated.Status)
	fmt.Printf("%s %q\n", autonomous.Mode, autonomous.UserID)
	fmt.Println(own.Mode, own.UserID)
	// Output:
	// delegated usr_1 active
	// autonomous ""
	// delegated usr_2
}

func ExampleHost_NewAgent_grants() {
	// Grants given as they are: pending, denied or expiring ones.
	expires := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := exampleHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{
		ID: "agt_1",
		Grants: []agentauth.Grant{
			{Capability: "transfer_money", Status: agentcap.StatusPending},
			{Capability: "read_balance", Status: agentcap.StatusActive, ExpiresAt: &expires},
		},
	})
	s := &agentauth.Session{Agent: a.Record()}
	fmt.Println(agentauth.GrantStatus(s, "transfer_money", expires.Add(-time.Hour)))
	fmt.Println(agentauth.GrantStatus(s, "read_balance", expires.Add(-time.Hour)))
	fmt.Println(agentauth.GrantStatus(s, "read_balance", expires))
	// Output:
	// not_granted
	// granted
	// not_granted
}

func ExampleHost_Record() {
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Key: rfc8037Key()})
	r := h.Record()
	fmt.Println(r.ID, r.Status)
	fmt.Println(string(r.PublicKey))
	// Output:
	// hst_1 active
	// {"crv":"Ed25519","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
}

// rfc8037Key is the example Ed25519 key of RFC 8037, Appendix A.1.
func rfc8037Key() ed25519.PrivateKey {
	seed, _ := base64.RawURLEncoding.DecodeString("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
	return ed25519.NewKeyFromSeed(seed)
}

func ExampleHost_Thumbprint() {
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Key: rfc8037Key()})
	fmt.Println(h.Thumbprint())
	// Output: kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k
}

func ExampleHost_PublicJWK() {
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Key: rfc8037Key()})
	fmt.Println(string(h.PublicJWK()))
	// Output: {"crv":"Ed25519","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
}

func ExampleHost_JWKS() {
	h := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", Key: rfc8037Key(), JWKSURL: "https://host.example/jwks"})
	fmt.Println(h.Record().JWKSURL)
	fmt.Println(string(h.JWKS()))
	// Output:
	// https://host.example/jwks
	// {"keys":[{"crv":"Ed25519","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}
}

func ExampleHost_Token() {
	h := exampleHost(agentauthtest.Host{ID: "hst_1"})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_1"})
	// A registration token carries the new agent's key.
	token := h.Token(agentauthtest.Token{Audience: "https://bank.example/api/auth", Agent: a})
	fmt.Println(header(token, "typ"))
	fmt.Println(claim(token, "iss") == `"`+h.Thumbprint()+`"`)
	fmt.Println(claim(token, "agent_public_key") == string(a.PublicJWK()))
	// Output:
	// "host+jwt"
	// true
	// true
}

func ExampleHost_Token_jwksURL() {
	h := exampleHost(agentauthtest.Host{ID: "hst_1"})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_1", JWKSURL: "https://agents.example/jwks"})
	token := h.Token(agentauthtest.Token{Audience: "https://bank.example/api/auth", Agent: a})
	fmt.Println(claim(token, "agent_jwks_url"), claim(token, "agent_kid") == `"`+a.Thumbprint()+`"`)
	// Output: "https://agents.example/jwks" true
}

func ExampleAgent_Record() {
	h := exampleHost(agentauthtest.Host{ID: "hst_1"})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_1", JWKSURL: "https://agents.example/jwks"})
	r := a.Record()
	fmt.Println(r.ID, r.HostID, r.Mode, r.Status, r.JWKSURL, r.KID == a.Thumbprint(), r.PublicKey == nil)
	// Output: agt_1 hst_1 delegated active https://agents.example/jwks true true
}

func ExampleAgent_Grant() {
	a := exampleHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"}).
		Grant("transfer_money", map[string]any{
			"amount":   map[string]any{"min": 0, "max": 1000},
			"currency": map[string]any{"in": []string{"USD", "EUR"}},
		}).
		Grant("read_balance", nil)
	for _, g := range a.Record().Grants {
		fmt.Println(g.Capability, g.Status, string(g.Constraints["amount"]), string(g.Constraints["currency"]))
	}
	// Output:
	// transfer_money active {"max":1000,"min":0} {"in":["USD","EUR"]}
	// read_balance active
}

func ExampleAgent_Token() {
	a := exampleHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"})
	token := a.Token(agentauthtest.Token{Audience: aud, Capabilities: []string{"transfer_money"}})
	fmt.Println(header(token, "alg"), header(token, "typ"), header(token, "kid") == `"`+a.Thumbprint()+`"`)
	fmt.Println(claim(token, "sub"), claim(token, "aud"), claim(token, "capabilities"))
	fmt.Println(claim(token, "iat"), claim(token, "exp"), claim(token, "iss"))
	// Output:
	// "EdDSA" "agent+jwt" true
	// "agt_1" "https://bank.example/capability/execute" ["transfer_money"]
	// 1767268800 1767268860 (absent)
}

func ExampleAgent_Thumbprint() {
	a := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1", Key: rfc8037Key()})
	fmt.Println(a.Thumbprint())
	// Output: kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k
}

func ExampleAgent_PublicJWK() {
	a := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1", Key: rfc8037Key()})
	fmt.Println(string(a.PublicJWK()))
	// Output: {"crv":"Ed25519","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
}

func ExampleAgent_JWKS() {
	a := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1", Key: rfc8037Key()})
	fmt.Println(string(a.JWKS()))
	// Output: {"keys":[{"crv":"Ed25519","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}
}

func ExampleThumbprint() {
	fmt.Println(agentauthtest.Thumbprint(rfc8037Key().Public().(ed25519.PublicKey)))
	// Output: kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k
}

func ExamplePublicJWK() {
	fmt.Println(string(agentauthtest.PublicJWK(rfc8037Key().Public().(ed25519.PublicKey))))
	// Output: {"crv":"Ed25519","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
}

func ExampleNewDirectory() {
	now := time.Unix(1767268800, 0)
	h := exampleHost(agentauthtest.Host{ID: "hst_1"})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("transfer_money", map[string]any{"amount": map[string]any{"max": 1000}})
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{h}, []*agentauthtest.Agent{a})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: dir,
		Audiences: []string{aud},
		Now:       func() time.Time { return now },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := v.Session(context.Background(), a.Token(agentauthtest.Token{Audience: aud}))
	if err != nil {
		fmt.Println(err)
		return
	}
	call := &auth.Call{Capability: "transfer_money", Arguments: map[string]json.RawMessage{"amount": json.RawMessage("5000")}}
	fmt.Println(s.Agent.ID, agentauth.AuthorizeCall(s, call, now))
	// Output: agt_1 constraint_violated: the arguments violate the grant's constraints
}

func ExampleWriteDirectoryFile() {
	h := exampleHost(agentauthtest.Host{ID: "hst_1"})
	a := h.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Grant("read_balance", nil)
	dir, err := os.MkdirTemp("", "agentauthtest")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "directory.json")
	if err := agentauthtest.WriteDirectoryFile(path, []*agentauthtest.Host{h}, []*agentauthtest.Agent{a}); err != nil {
		fmt.Println(err)
		return
	}
	d, err := agentauth.LoadDirectoryFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	rec, err := d.Agent(context.Background(), "agt_1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.ID, rec.HostID, rec.Grants[0].Capability)
	// Output: agt_1 hst_1 read_balance
}

const aud = "https://bank.example/capability/execute"

func ExampleToken() {
	a := exampleHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"})
	token := a.Token(agentauthtest.Token{
		Audience:     aud,
		Capabilities: []string{}, // an empty array: allows nothing
		Lifetime:     time.Hour,
		JTI:          "jti-1",
	})
	fmt.Println(claim(token, "capabilities"), claim(token, "iat"), claim(token, "exp"), claim(token, "jti"))
	// Output: [] 1767268800 1767272400 "jti-1"
}

func ExampleToken_times() {
	a := exampleHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"})
	// Issued in the future: a verifier must refuse it beyond its skew.
	future := a.Token(agentauthtest.Token{Audience: aud, IssuedAt: time.Unix(1767268800+3600, 0)})
	fmt.Println(claim(future, "iat"), claim(future, "exp"))
	// Expired a second before it was issued.
	expired := a.Token(agentauthtest.Token{Audience: aud, Expiry: time.Unix(1767268800-1, 0)})
	fmt.Println(claim(expired, "iat"), claim(expired, "exp"))
	// Output:
	// 1767272400 1767272460
	// 1767268800 1767268799
}

func ExampleToken_issuer() {
	h := exampleHost(agentauthtest.Host{ID: "hst_1"})
	token := h.NewAgent(agentauthtest.Agent{ID: "agt_1"}).Token(agentauthtest.Token{Audience: aud, Issuer: h.ID})
	fmt.Println(claim(token, "iss"))
	// Output: "hst_1"
}

func ExampleToken_algorithm() {
	a := exampleHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"})
	unsigned := a.Token(agentauthtest.Token{Audience: aud, Algorithm: "none"})
	confused := a.Token(agentauthtest.Token{Audience: aud, Algorithm: "HS256"})
	mistyped := a.Token(agentauthtest.Token{Audience: aud, Type: "host+jwt"})
	fmt.Println(header(unsigned, "alg"), strings.HasSuffix(unsigned, "."))
	fmt.Println(header(confused, "alg"))
	fmt.Println(header(mistyped, "typ"))
	// Output:
	// "none" true
	// "HS256"
	// "host+jwt"
}

func ExampleToken_signingKey() {
	a := exampleHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"})
	intruder := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_x", Rand: rand.NewChaCha8([32]byte{1})}).NewAgent(agentauthtest.Agent{ID: "agt_x"})
	token := a.Token(agentauthtest.Token{Audience: aud, SigningKey: intruder.Key})
	// The header still names the agent's key, which will not verify.
	fmt.Println(header(token, "kid") == `"`+a.Thumbprint()+`"`)
	// Output: true
}

func ExampleToken_header() {
	a := exampleHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"})
	token := a.Token(agentauthtest.Token{Audience: aud, Header: map[string]any{
		"jku":  "https://attacker.example/jwks",
		"crit": []string{"exp"},
		"kid":  nil, // removed
	}})
	fmt.Println(header(token, "jku"), header(token, "crit"), header(token, "kid"))
	// Output: "https://attacker.example/jwks" ["exp"] (absent)
}

func ExampleToken_claims() {
	a := exampleHost(agentauthtest.Host{ID: "hst_1"}).NewAgent(agentauthtest.Agent{ID: "agt_1"})
	token := a.Token(agentauthtest.Token{Audience: aud, Claims: map[string]any{
		"aud": []string{"https://other.example", aud},
		"iss": json.RawMessage("null"),
		"jti": nil, // removed
	}})
	fmt.Println(claim(token, "aud"), claim(token, "iss"), claim(token, "jti"))
	// Output: ["https://other.example","https://bank.example/capability/execute"] null (absent)
}
