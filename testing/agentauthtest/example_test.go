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

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// exampleHost is a reproducible host: a seeded random source and a fixed
// clock make its keys and tokens the same on every run.
func exampleHost(id string, opts ...agentauthtest.HostOption) *agentauthtest.Host {
	opts = append([]agentauthtest.HostOption{
		agentauthtest.WithRandom(rand.NewChaCha8([32]byte{})),
		agentauthtest.WithClock(func() time.Time { return time.Unix(1767268800, 0) }),
	}, opts...)
	return agentauthtest.NewHost(id, opts...)
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
	h := agentauthtest.NewHost("hst_1",
		agentauthtest.WithUser("usr_1"),
		agentauthtest.WithDefaultCapabilities("read_balance"))
	fmt.Println(h.ID, h.UserID, h.Status, h.DefaultCapabilities, len(h.Key))
	// Output: hst_1 usr_1 active [read_balance] 64
}

func ExampleHost_NewAgent() {
	h := exampleHost("hst_1", agentauthtest.WithUser("usr_1"))
	delegated := h.NewAgent("agt_1")
	autonomous := h.NewAgent("agt_2", agentauthtest.WithMode(agentauth.ModeAutonomous))
	fmt.Println(delegated.Mode, delegated.UserID, delegated.Status)
	fmt.Printf("%s %q\n", autonomous.Mode, autonomous.UserID)
	// Output:
	// delegated usr_1 active
	// autonomous ""
}

func ExampleHost_Record() {
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithKey(rfc8037Key()))
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
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithKey(rfc8037Key()))
	fmt.Println(h.Thumbprint())
	// Output: kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k
}

func ExampleHost_PublicJWK() {
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithKey(rfc8037Key()))
	fmt.Println(string(h.PublicJWK()))
	// Output: {"crv":"Ed25519","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
}

func ExampleHost_JWKS() {
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithKey(rfc8037Key()), agentauthtest.WithJWKSURL("https://host.example/jwks"))
	fmt.Println(string(h.JWKS()))
	// Output: {"keys":[{"crv":"Ed25519","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}
}

func ExampleHost_Token() {
	h := exampleHost("hst_1")
	a := h.NewAgent("agt_1")
	token := h.Token("https://bank.example/api/auth", agentauthtest.WithAgentPublicKey(a))
	fmt.Println(header(token, "typ"))
	fmt.Println(claim(token, "iss") == `"`+h.Thumbprint()+`"`)
	fmt.Println(claim(token, "agent_public_key") == string(a.PublicJWK()))
	// Output:
	// "host+jwt"
	// true
	// true
}

func ExampleAgent_Record() {
	h := exampleHost("hst_1")
	a := h.NewAgent("agt_1", agentauthtest.WithJWKSURL("https://agents.example/jwks"))
	r := a.Record()
	fmt.Println(r.ID, r.HostID, r.Mode, r.Status, r.JWKSURL, r.KID == a.Thumbprint(), r.PublicKey == nil)
	// Output: agt_1 hst_1 delegated active https://agents.example/jwks true true
}

func ExampleAgent_Grant() {
	a := exampleHost("hst_1").NewAgent("agt_1").
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

func ExampleAgent_AddGrant() {
	expired := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := exampleHost("hst_1").NewAgent("agt_1").
		AddGrant(agentauth.Grant{Capability: "transfer_money", Status: agentauth.StatusPending}).
		AddGrant(agentauth.Grant{Capability: "read_balance", Status: agentauth.StatusActive, ExpiresAt: &expired})
	s := &agentauth.Session{Agent: a.Record()}
	fmt.Println(agentauth.GrantStatus(s, "transfer_money", expired.Add(-time.Hour)))
	fmt.Println(agentauth.GrantStatus(s, "read_balance", expired.Add(-time.Hour)))
	fmt.Println(agentauth.GrantStatus(s, "read_balance", expired))
	// Output:
	// not_granted
	// granted
	// not_granted
}

func ExampleAgent_Token() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	token := a.Token("https://bank.example/capability/execute", agentauthtest.WithCapabilities("transfer_money"))
	fmt.Println(header(token, "alg"), header(token, "typ"), header(token, "kid") == `"`+a.Thumbprint()+`"`)
	fmt.Println(claim(token, "sub"), claim(token, "aud"), claim(token, "capabilities"))
	fmt.Println(claim(token, "iat"), claim(token, "exp"), claim(token, "iss"))
	// Output:
	// "EdDSA" "agent+jwt" true
	// "agt_1" "https://bank.example/capability/execute" ["transfer_money"]
	// 1767268800 1767268860 (absent)
}

func ExampleAgent_Thumbprint() {
	a := agentauthtest.NewHost("hst_1").NewAgent("agt_1", agentauthtest.WithKey(rfc8037Key()))
	fmt.Println(a.Thumbprint())
	// Output: kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k
}

func ExampleAgent_PublicJWK() {
	a := agentauthtest.NewHost("hst_1").NewAgent("agt_1", agentauthtest.WithKey(rfc8037Key()))
	fmt.Println(string(a.PublicJWK()))
	// Output: {"crv":"Ed25519","kid":"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k","kty":"OKP","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
}

func ExampleAgent_JWKS() {
	a := agentauthtest.NewHost("hst_1").NewAgent("agt_1", agentauthtest.WithKey(rfc8037Key()))
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
	h := exampleHost("hst_1")
	a := h.NewAgent("agt_1").Grant("transfer_money", map[string]any{"amount": map[string]any{"max": 1000}})
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{h}, []*agentauthtest.Agent{a})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: dir,
		Audiences: []string{"https://bank.example/capability/execute"},
		Now:       func() time.Time { return now },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := v.Session(context.Background(), a.Token("https://bank.example/capability/execute"))
	if err != nil {
		fmt.Println(err)
		return
	}
	call := agentauth.Call{Capability: "transfer_money", Arguments: map[string]json.RawMessage{"amount": json.RawMessage("5000")}}
	fmt.Println(s.Agent.ID, agentauth.AuthorizeCall(s, call, now))
	// Output: agt_1 constraint_violated: the arguments violate the grant's constraints
}

func ExampleWriteDirectoryFile() {
	h := exampleHost("hst_1")
	a := h.NewAgent("agt_1").Grant("read_balance", nil)
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

func ExampleWithStatus() {
	h := exampleHost("hst_1", agentauthtest.WithStatus(agentauth.StatusPending))
	a := h.NewAgent("agt_1", agentauthtest.WithStatus(agentauth.StatusRevoked))
	fmt.Println(h.Record().Status, a.Record().Status)
	// Output: pending revoked
}

func ExampleWithUser() {
	h := exampleHost("hst_1", agentauthtest.WithUser("usr_1"))
	a := h.NewAgent("agt_1", agentauthtest.WithUser("usr_2"))
	fmt.Println(h.Record().UserID, a.Record().UserID)
	// Output: usr_1 usr_2
}

func ExampleWithKey() {
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithKey(rfc8037Key()))
	fmt.Println(h.Thumbprint())
	// Output: kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k
}

func ExampleWithJWKSURL() {
	h := exampleHost("hst_1", agentauthtest.WithJWKSURL("https://host.example/jwks"))
	a := h.NewAgent("agt_1", agentauthtest.WithJWKSURL("https://agents.example/jwks"))
	fmt.Println(h.Record().JWKSURL, a.Record().JWKSURL, a.Record().KID == a.Thumbprint())
	// Output: https://host.example/jwks https://agents.example/jwks true
}

func ExampleWithDefaultCapabilities() {
	h := exampleHost("hst_1", agentauthtest.WithDefaultCapabilities("read_balance", "list_accounts"))
	fmt.Println(h.Record().DefaultCapabilities)
	// Output: [read_balance list_accounts]
}

func ExampleWithRandom() {
	seed := [32]byte{42}
	h1 := agentauthtest.NewHost("hst_1", agentauthtest.WithRandom(rand.NewChaCha8(seed)))
	h2 := agentauthtest.NewHost("hst_1", agentauthtest.WithRandom(rand.NewChaCha8(seed)))
	fmt.Println(h1.Key.Equal(h2.Key), h1.NewAgent("agt_1").Key.Equal(h2.NewAgent("agt_1").Key))
	// Output: true true
}

func ExampleWithClock() {
	h := agentauthtest.NewHost("hst_1", agentauthtest.WithClock(func() time.Time { return time.Unix(1700000000, 0) }))
	token := h.NewAgent("agt_1").Token("https://bank.example/capability/execute")
	fmt.Println(claim(token, "iat"), claim(token, "exp"))
	// Output: 1700000000 1700000060
}

func ExampleWithMode() {
	a := exampleHost("hst_1", agentauthtest.WithUser("usr_1")).NewAgent("agt_1", agentauthtest.WithMode(agentauth.ModeAutonomous))
	fmt.Printf("%s %q\n", a.Record().Mode, a.Record().UserID)
	// Output: autonomous ""
}

func ExampleWithGrants() {
	a := exampleHost("hst_1").NewAgent("agt_1", agentauthtest.WithGrants(
		agentauth.Grant{Capability: "transfer_money", Status: agentauth.StatusDenied},
	))
	fmt.Println(a.Record().Grants[0].Status)
	// Output: denied
}

const aud = "https://bank.example/capability/execute"

func ExampleWithCapabilities() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	fmt.Println(claim(a.Token(aud, agentauthtest.WithCapabilities("transfer_money")), "capabilities"))
	fmt.Println(claim(a.Token(aud, agentauthtest.WithCapabilities()), "capabilities"))
	// Output:
	// ["transfer_money"]
	// []
}

func ExampleWithIssuer() {
	h := exampleHost("hst_1")
	token := h.NewAgent("agt_1").Token(aud, agentauthtest.WithIssuer(h.ID))
	fmt.Println(claim(token, "iss"))
	// Output: "hst_1"
}

func ExampleWithNow() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	token := a.Token(aud, agentauthtest.WithNow(time.Unix(1800000000, 0)))
	fmt.Println(claim(token, "iat"), claim(token, "exp"))
	// Output: 1800000000 1800000060
}

func ExampleWithIssuedAt() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	// Issued in the future: a verifier must refuse it beyond its skew.
	token := a.Token(aud, agentauthtest.WithIssuedAt(time.Unix(1767268800+3600, 0)))
	fmt.Println(claim(token, "iat"), claim(token, "exp"))
	// Output: 1767272400 1767272460
}

func ExampleWithLifetime() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	token := a.Token(aud, agentauthtest.WithLifetime(time.Hour))
	fmt.Println(claim(token, "iat"), claim(token, "exp"))
	// Output: 1767268800 1767272400
}

func ExampleWithExpiry() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	token := a.Token(aud, agentauthtest.WithExpiry(time.Unix(1767268800-1, 0)))
	fmt.Println(claim(token, "exp"))
	// Output: 1767268799
}

func ExampleWithJTI() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	first := a.Token(aud, agentauthtest.WithJTI("jti-1"))
	second := a.Token(aud, agentauthtest.WithJTI("jti-1"))
	fmt.Println(claim(first, "jti"), first == second)
	// Output: "jti-1" true
}

func ExampleWithType() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	fmt.Println(header(a.Token(aud, agentauthtest.WithType("host+jwt")), "typ"))
	// Output: "host+jwt"
}

func ExampleWithAlgorithm() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	unsigned := a.Token(aud, agentauthtest.WithAlgorithm("none"))
	confused := a.Token(aud, agentauthtest.WithAlgorithm("HS256"))
	fmt.Println(header(unsigned, "alg"), strings.HasSuffix(unsigned, "."))
	fmt.Println(header(confused, "alg"))
	// Output:
	// "none" true
	// "HS256"
}

func ExampleWithSigningKey() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	intruder := exampleHost("hst_x", agentauthtest.WithRandom(rand.NewChaCha8([32]byte{1}))).NewAgent("agt_x")
	token := a.Token(aud, agentauthtest.WithSigningKey(intruder.Key))
	// The header still names the agent's key, which will not verify.
	fmt.Println(header(token, "kid") == `"`+a.Thumbprint()+`"`)
	// Output: true
}

func ExampleWithHeader() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	token := a.Token(aud,
		agentauthtest.WithHeader("jku", "https://attacker.example/jwks"),
		agentauthtest.WithHeader("crit", []string{"exp"}))
	fmt.Println(header(token, "jku"), header(token, "crit"))
	// Output: "https://attacker.example/jwks" ["exp"]
}

func ExampleWithoutHeader() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	fmt.Println(header(a.Token(aud, agentauthtest.WithoutHeader("kid")), "kid"))
	// Output: (absent)
}

func ExampleWithClaim() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	token := a.Token(aud, agentauthtest.WithClaim("aud", []string{"https://other.example", aud}))
	fmt.Println(claim(token, "aud"))
	// Output: ["https://other.example","https://bank.example/capability/execute"]
}

func ExampleWithoutClaim() {
	a := exampleHost("hst_1").NewAgent("agt_1")
	fmt.Println(claim(a.Token(aud, agentauthtest.WithoutClaim("jti")), "jti"))
	// Output: (absent)
}

func ExampleWithAgentPublicKey() {
	h := exampleHost("hst_1")
	a := h.NewAgent("agt_1", agentauthtest.WithJWKSURL("https://agents.example/jwks"))
	token := h.Token("https://bank.example/api/auth", agentauthtest.WithAgentPublicKey(a))
	fmt.Println(claim(token, "agent_jwks_url"), claim(token, "agent_kid") == `"`+a.Thumbprint()+`"`)
	// Output: "https://agents.example/jwks" true
}
