package agentauth_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// The helpers of this file start with "vf" so that they cannot collide
// with helpers of other test files of the package.

var vfNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	vfAud   = "https://bank.example/capability/execute"
	vfHost  = "hst_1"
	vfAgent = "agt_1"
)

type vfKey struct {
	priv  ed25519.PrivateKey
	pub   ed25519.PublicKey
	jwk   json.RawMessage
	thumb string
}

func vfNewKey(t testing.TB) vfKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := jose.JSONWebKey{Key: pub}
	jwk, err := k.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return vfKey{priv: priv, pub: pub, jwk: jwk, thumb: base64.RawURLEncoding.EncodeToString(tp)}
}

type vfClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *vfClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *vfClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var vfJTI atomic.Int64

// vfClaims returns the claims the published client signs, at vfNow.
func vfClaims() map[string]any {
	return map[string]any{
		"sub":          vfAgent,
		"aud":          vfAud,
		"iat":          vfNow.Unix(),
		"exp":          vfNow.Unix() + 60,
		"jti":          fmt.Sprintf("jti-%d", vfJTI.Add(1)),
		"capabilities": []string{"check_balance"},
	}
}

// vfMint signs claims with go-jose, with the header the published client
// sends: alg EdDSA, typ agent+jwt and, when kid is set, kid.
func vfMint(t testing.TB, priv ed25519.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType(agentcap.TypeAgentJWT)
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: priv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// vfRaw builds a compact JWS from literal header and payload JSON, signed
// with priv, for headers go-jose would not produce.
func vfRaw(priv ed25519.PrivateKey, header, payload string) string {
	in := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
	return in + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(priv, []byte(in)))
}

func vfJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type vfWorld struct {
	dir       *agentauth.MemoryDirectory
	hostKey   vfKey
	agentKey  vfKey
	clock     *vfClock
	v         *agentauth.Verifier
	hostAgent agentauth.Agent
}

func vfNewWorld(t testing.TB, configure func(*agentauth.VerifierConfig)) *vfWorld {
	t.Helper()
	w := &vfWorld{dir: agentauth.NewMemoryDirectory(), hostKey: vfNewKey(t), agentKey: vfNewKey(t), clock: &vfClock{t: vfNow}}
	if err := w.dir.PutHost(&agentauth.Host{ID: vfHost, PublicKey: w.hostKey.jwk, UserID: "usr_1", Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	w.hostAgent = agentauth.Agent{
		ID: vfAgent, HostID: vfHost, UserID: "usr_1", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
		PublicKey: w.agentKey.jwk,
		Grants:    []agentauth.Grant{{Capability: "check_balance", Status: agentcap.StatusActive}},
	}
	if err := w.dir.PutAgent(&w.hostAgent); err != nil {
		t.Fatal(err)
	}
	cfg := agentauth.VerifierConfig{Directory: w.dir, Audiences: []string{"https://other.example/", vfAud}, Now: w.clock.Now}
	if configure != nil {
		configure(&cfg)
	}
	v, err := agentauth.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.v = v
	return w
}

func (w *vfWorld) mint(t testing.TB, mutate func(map[string]any)) string {
	t.Helper()
	c := vfClaims()
	if mutate != nil {
		mutate(c)
	}
	return vfMint(t, w.agentKey.priv, w.agentKey.thumb, c)
}

// vfOutcome is the public face of an error: status, code and message.
type vfOutcome struct {
	Status  int
	Code    agentcap.Code
	Message string
}

func vfOutcomeOf(t testing.TB, err error) vfOutcome {
	t.Helper()
	if err == nil {
		return vfOutcome{}
	}
	var ae *agentcap.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not a *agentcap.Error", err, err)
	}
	if ae.Unwrap() == nil {
		t.Errorf("error %v has no hidden cause", err)
	}
	return vfOutcome{ae.HTTPStatus(), ae.Code, ae.Message}
}

var (
	vfOK         = vfOutcome{}
	vfInvalid    = vfOutcome{401, agentcap.CodeInvalidJWT, "invalid agent JWT"}
	vfExpired    = vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT expired"}
	vfFuture     = vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT issued in the future"}
	vfTooOld     = vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT too old"}
	vfLifetime   = vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT lifetime too long"}
	vfAudience   = vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT audience not accepted"}
	vfIssuer     = vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT issuer does not match the agent's host"}
	vfMissing    = vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT lacks a required claim"}
	vfReplayed   = vfOutcome{401, agentcap.CodeInvalidJWT, "agent JWT already used"}
	vfInternal   = vfOutcome{500, agentcap.CodeInternalError, "internal error"}
	vfDirDown    = vfOutcome{503, agentcap.CodeTemporarilyUnavailable, "the directory of agents and hosts cannot be read now; retry later"}
	vfReplayDown = vfOutcome{503, agentcap.CodeTemporarilyUnavailable, "used tokens cannot be checked now; retry later"}
	vfUnset      = func(name string) func(map[string]any) { return func(c map[string]any) { delete(c, name) } }
	vfSet        = func(name string, v any) func(map[string]any) { return func(c map[string]any) { c[name] = v } }
	vfNowSecond  = vfNow.Unix()
)

func TestVerifierClaims(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(map[string]any)
		want   vfOutcome
	}{
		{"valid", nil, vfOK},
		{"aud array with one match", vfSet("aud", []string{"https://x.example", vfAud}), vfOK},
		{"aud second configured audience", vfSet("aud", "https://other.example/"), vfOK},
		{"aud mismatch", vfSet("aud", "https://bank.example/capability/execute/"), vfAudience},
		{"aud array without match", vfSet("aud", []string{"https://x.example"}), vfAudience},
		{"aud empty array", vfSet("aud", []string{}), vfAudience},
		{"aud missing", vfUnset("aud"), vfAudience},
		{"aud differs in case", vfSet("aud", strings.ToUpper(vfAud)), vfAudience},
		{"iss host id", vfSet("iss", vfHost), vfOK},
		{"iss other host", vfSet("iss", "hst_2"), vfIssuer},
		{"iss empty", vfSet("iss", ""), vfIssuer},
		{"iat missing", vfUnset("iat"), vfMissing},
		{"exp missing", vfUnset("exp"), vfMissing},
		{"jti missing", vfUnset("jti"), vfMissing},
		{"jti empty", vfSet("jti", ""), vfMissing},
		{"iat decimal", func(c map[string]any) { c["iat"] = float64(vfNowSecond) + 0.5; c["exp"] = float64(vfNowSecond) + 59.5 }, vfOK},
		{"iat within skew in the future", func(c map[string]any) { c["iat"] = vfNowSecond + 5; c["exp"] = vfNowSecond + 65 }, vfOK},
		{"iat beyond skew in the future", func(c map[string]any) { c["iat"] = vfNowSecond + 6; c["exp"] = vfNowSecond + 66 }, vfFuture},
		{"age within max age plus skew but exp passed", func(c map[string]any) { c["iat"] = vfNowSecond - 64; c["exp"] = vfNowSecond - 4 }, vfExpired},
		{"age at max age, exp not passed", func(c map[string]any) { c["iat"] = vfNowSecond - 59; c["exp"] = vfNowSecond + 1 }, vfOK},
		{"age beyond max age plus skew", func(c map[string]any) { c["iat"] = vfNowSecond - 66; c["exp"] = vfNowSecond - 6 }, vfTooOld},
		{"exp passed a second ago: no skew on exp", func(c map[string]any) { c["iat"] = vfNowSecond - 30; c["exp"] = vfNowSecond - 1 }, vfExpired},
		{"exp is now", func(c map[string]any) { c["iat"] = vfNowSecond - 30; c["exp"] = vfNowSecond }, vfExpired},
		{"exp passed by skew", func(c map[string]any) { c["iat"] = vfNowSecond - 30; c["exp"] = vfNowSecond - 5 }, vfExpired},
		{"lifetime above max age", vfSet("exp", vfNowSecond+61), vfLifetime},
		{"exp before iat", vfSet("exp", vfNowSecond-1), vfLifetime},
		{"exp equals iat", vfSet("exp", vfNowSecond), vfLifetime},
		{"nbf in the future", vfSet("nbf", vfNowSecond+30), vfFuture},
		{"nbf past", vfSet("nbf", vfNowSecond-1), vfOK},
		{"capabilities absent", vfUnset("capabilities"), vfOK},
		{"capabilities empty", vfSet("capabilities", []string{}), vfOK},
		{"capabilities not an array", vfSet("capabilities", "check_balance"), vfInvalid},
		{"capabilities null", vfSet("capabilities", nil), vfInvalid},
		{"capabilities with a number", vfSet("capabilities", []any{"a", 1}), vfInvalid},
		{"sub missing", vfUnset("sub"), vfInvalid},
		{"sub a number", vfSet("sub", 7), vfInvalid},
		{"sub unknown agent", vfSet("sub", "agt_unknown"), vfInvalid},
		{"iat a string", vfSet("iat", "1772366400"), vfInvalid},
		{"exp negative", vfSet("exp", -1), vfInvalid},
		{"exp beyond year 9999", vfSet("exp", 1e13), vfInvalid},
		{"aud a number", vfSet("aud", 1), vfInvalid},
		{"iss null", vfSet("iss", nil), vfInvalid},
		{"jti a number", vfSet("jti", 5), vfInvalid},
		{"unregistered claims ignored", vfSet("scope", map[string]any{"x": 1}), vfOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := vfNewWorld(t, nil)
			sess, err := w.v.Session(context.Background(), w.mint(t, tt.mutate))
			if diff := cmp.Diff(tt.want, vfOutcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if err == nil && (sess.Agent.ID != vfAgent || sess.Host.ID != vfHost || sess.Compact) {
				t.Errorf("session = %+v", sess)
			}
		})
	}
}

func TestVerifierSessionContents(t *testing.T) {
	w := vfNewWorld(t, nil)
	claims := vfClaims()
	claims["iss"] = w.hostKey.thumb
	claims["aud"] = []string{vfAud}
	claims["iat"] = float64(vfNowSecond) + 0.25
	sess, err := w.v.Session(context.Background(), vfMint(t, w.agentKey.priv, "", claims))
	if err != nil {
		t.Fatal(err)
	}
	want := agentauth.Claims{
		Subject:      vfAgent,
		Issuer:       w.hostKey.thumb,
		Audience:     []string{vfAud},
		IssuedAt:     vfNow.Add(250 * time.Millisecond),
		ExpiresAt:    vfNow.Add(60 * time.Second),
		ID:           claims["jti"].(string),
		Capabilities: []string{"check_balance"},
	}
	if diff := cmp.Diff(want, sess.Claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&w.hostAgent, sess.Agent); diff != "" {
		t.Errorf("agent (-want +got):\n%s", diff)
	}
	if sess.Host.UserID != "usr_1" || sess.Host.Status != agentcap.StatusActive {
		t.Errorf("host = %+v", sess.Host)
	}

	// nil and empty capabilities stay distinct.
	delete(claims, "capabilities")
	claims["jti"] = "other"
	sess, err = w.v.Session(context.Background(), vfMint(t, w.agentKey.priv, "", claims))
	if err != nil || sess.Claims.Capabilities != nil {
		t.Fatalf("absent capabilities: %v, %#v", err, sess)
	}
	claims["capabilities"] = []string{}
	claims["jti"] = "third"
	sess, err = w.v.Session(context.Background(), vfMint(t, w.agentKey.priv, "", claims))
	if err != nil || sess.Claims.Capabilities == nil || len(sess.Claims.Capabilities) != 0 {
		t.Fatalf("empty capabilities: %v, %#v", err, sess)
	}
}

func TestVerifierHeaderAndSyntax(t *testing.T) {
	w := vfNewWorld(t, nil)
	good := w.mint(t, nil)
	parts := strings.Split(good, ".")
	payload := vfJSON(t, vfClaims())
	priv := w.agentKey.priv
	hdr := func(h string) string { return vfRaw(priv, h, vfJSON(t, vfClaims())) }
	hs256 := func() string {
		in := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"agent+jwt"}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
		m := hmac.New(sha256.New, w.agentKey.pub)
		m.Write([]byte(in))
		return in + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	jwkHeader := `{"alg":"EdDSA","typ":"agent+jwt","jwk":` + string(w.agentKey.jwk) + `}`
	tests := []struct {
		name  string
		token string
		want  vfOutcome
	}{
		{"raw header accepted", hdr(`{"alg":"EdDSA","typ":"agent+jwt"}`), vfOK},
		{"raw header with kid", hdr(`{"alg":"EdDSA","typ":"agent+jwt","kid":"anything"}`), vfOK},
		{"empty", "", vfInvalid},
		{"two segments", parts[0] + "." + parts[1], vfInvalid},
		{"four segments", good + ".x", vfInvalid},
		{"empty signature", parts[0] + "." + parts[1] + ".", vfInvalid},
		{"padding", good + "=", vfInvalid},
		{"line break", parts[0] + "\n." + parts[1] + "." + parts[2], vfInvalid},
		{"space", " " + good, vfInvalid},
		{"standard base64 alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(good) + "+", vfInvalid},
		{"JSON serialization", `{"payload":"` + parts[1] + `","protected":"` + parts[0] + `","signature":"` + parts[2] + `"}`, vfInvalid},
		{"too large", hdr(`{"alg":"EdDSA","typ":"agent+jwt","kid":"` + strings.Repeat("k", agentauth.MaxTokenBytes) + `"}`), vfInvalid},
		{"header not JSON", base64.RawURLEncoding.EncodeToString([]byte("nope")) + "." + parts[1] + "." + parts[2], vfInvalid},
		{"payload not an object", vfRaw(priv, `{"alg":"EdDSA","typ":"agent+jwt"}`, `["sub"]`), vfInvalid},
		{"payload trailing data", vfRaw(priv, `{"alg":"EdDSA","typ":"agent+jwt"}`, payload+`{}`), vfInvalid},
		{"payload duplicate claim", vfRaw(priv, `{"alg":"EdDSA","typ":"agent+jwt"}`, strings.Replace(payload, "{", `{"sub":"agt_other",`, 1)), vfInvalid},
		{"payload not UTF-8", vfRaw(priv, `{"alg":"EdDSA","typ":"agent+jwt"}`, strings.Replace(payload, "{", "{\"x\":\"\xff\",", 1)), vfInvalid},
		{"typ host+jwt", hdr(`{"alg":"EdDSA","typ":"host+jwt"}`), vfInvalid},
		{"typ upper case", hdr(`{"alg":"EdDSA","typ":"AGENT+JWT"}`), vfInvalid},
		{"typ JWT", hdr(`{"alg":"EdDSA","typ":"JWT"}`), vfInvalid},
		{"typ missing", hdr(`{"alg":"EdDSA"}`), vfInvalid},
		{"typ not a string", hdr(`{"alg":"EdDSA","typ":["agent+jwt"]}`), vfInvalid},
		{"alg none unsigned", base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"agent+jwt"}`)) + "." + parts[1] + ".", vfInvalid},
		{"alg none signed", hdr(`{"alg":"none","typ":"agent+jwt"}`), vfInvalid},
		{"alg HS256 keyed with the public key", hs256(), vfInvalid},
		{"alg RS256", hdr(`{"alg":"RS256","typ":"agent+jwt"}`), vfInvalid},
		{"alg ES256", hdr(`{"alg":"ES256","typ":"agent+jwt"}`), vfInvalid},
		{"alg Ed25519", hdr(`{"alg":"Ed25519","typ":"agent+jwt"}`), vfInvalid},
		{"alg lower case", hdr(`{"alg":"eddsa","typ":"agent+jwt"}`), vfInvalid},
		{"alg missing", hdr(`{"typ":"agent+jwt"}`), vfInvalid},
		{"embedded jwk", hdr(jwkHeader), vfInvalid},
		{"jku", hdr(`{"alg":"EdDSA","typ":"agent+jwt","jku":"https://evil.example/jwks"}`), vfInvalid},
		{"x5u", hdr(`{"alg":"EdDSA","typ":"agent+jwt","x5u":"https://evil.example/cert"}`), vfInvalid},
		{"x5c", hdr(`{"alg":"EdDSA","typ":"agent+jwt","x5c":["MIIB"]}`), vfInvalid},
		{"crit", hdr(`{"alg":"EdDSA","typ":"agent+jwt","crit":["exp"],"exp":1}`), vfInvalid},
		{"b64", hdr(`{"alg":"EdDSA","typ":"agent+jwt","b64":false,"crit":["b64"]}`), vfInvalid},
		{"unknown member", hdr(`{"alg":"EdDSA","typ":"agent+jwt","cty":"JWT"}`), vfInvalid},
		{"duplicate typ", hdr(`{"alg":"EdDSA","typ":"host+jwt","typ":"agent+jwt"}`), vfInvalid},
		{"kid a number", hdr(`{"alg":"EdDSA","typ":"agent+jwt","kid":1}`), vfInvalid},
		{"signed by another key", vfMint(t, vfNewKey(t).priv, "", vfClaims()), vfInvalid},
		{"signed by the host key", vfMint(t, w.hostKey.priv, "", vfClaims()), vfInvalid},
		{"payload swapped", parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + parts[2], vfInvalid},
		{"signature bit flipped", parts[0] + "." + parts[1] + "." + flipLast(parts[2]), vfInvalid},
		{"escaped header members", hdr(`{"\u0061lg":"EdDSA","typ":"agent\u002bjwt"}`), vfOK},
		{"escaped header member not allowed", hdr(`{"alg":"EdDSA","typ":"agent+jwt","\u006Awk":{}}`), vfInvalid},
		{"lone surrogate in a claim", vfRaw(priv, `{"alg":"EdDSA","typ":"agent+jwt"}`, strings.Replace(payload, "{", `{"x":"\ud800",`, 1)), vfInvalid},
		{"surrogate pair in a claim", vfRaw(priv, `{"alg":"EdDSA","typ":"agent+jwt"}`, strings.Replace(vfJSON(t, vfClaims()), "{", `{"x":"\ud83d\ude00",`, 1)), vfOK},
		{"payload nested too deep", vfRaw(priv, `{"alg":"EdDSA","typ":"agent+jwt"}`, strings.Replace(vfJSON(t, vfClaims()), "{", `{"x":`+strings.Repeat("[", 1000)+strings.Repeat("]", 1000)+",", 1)), vfInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.v.Session(context.Background(), tt.token)
			if diff := cmp.Diff(tt.want, vfOutcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tt.want == vfDirDown {
				vfCheckRetryAfter(t, err)
			}
		})
	}
}

// flipLast changes the last significant bits of a base64url segment while
// keeping it canonical.
func flipLast(seg string) string {
	b, _ := base64.RawURLEncoding.DecodeString(seg)
	b[len(b)-1] ^= 1
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestVerifierStatuses(t *testing.T) {
	tests := []struct {
		agentStatus, hostStatus string
		want                    vfOutcome
	}{
		{agentcap.StatusActive, agentcap.StatusActive, vfOK},
		{agentcap.StatusRevoked, agentcap.StatusActive, vfOutcome{403, agentcap.CodeAgentRevoked, "agent revoked"}},
		{agentcap.StatusExpired, agentcap.StatusActive, vfOutcome{403, agentcap.CodeAgentExpired, "agent expired"}},
		{agentcap.StatusPending, agentcap.StatusActive, vfOutcome{403, agentcap.CodeAgentPending, "agent pending approval"}},
		{agentcap.StatusRejected, agentcap.StatusActive, vfOutcome{403, agentcap.CodeAgentRejected, "agent rejected"}},
		{agentcap.StatusClaimed, agentcap.StatusActive, vfOutcome{403, agentcap.CodeAgentClaimed, "agent claimed"}},
		{agentcap.StatusActive, agentcap.StatusRevoked, vfOutcome{403, agentcap.CodeHostRevoked, "host revoked"}},
		{agentcap.StatusActive, agentcap.StatusRejected, vfOutcome{403, agentcap.CodeHostRevoked, "host revoked"}},
		{agentcap.StatusActive, agentcap.StatusPending, vfOutcome{403, agentcap.CodeHostPending, "host pending approval"}},
		// The agent's state is reported before the host's.
		{agentcap.StatusRevoked, agentcap.StatusPending, vfOutcome{403, agentcap.CodeAgentRevoked, "agent revoked"}},
	}
	for _, tt := range tests {
		t.Run(tt.agentStatus+"/"+tt.hostStatus, func(t *testing.T) {
			w := vfNewWorld(t, nil)
			a := w.hostAgent
			a.Status = tt.agentStatus
			if err := w.dir.PutAgent(&a); err != nil {
				t.Fatal(err)
			}
			h, _ := w.dir.Host(context.Background(), vfHost)
			h.Status = tt.hostStatus
			if err := w.dir.PutHost(h); err != nil {
				t.Fatal(err)
			}
			_, err := w.v.Session(context.Background(), w.mint(t, nil))
			if diff := cmp.Diff(tt.want, vfOutcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

// TestVerifierCheckOrder pins the documented order with tokens that fail
// two checks at once.
func TestVerifierCheckOrder(t *testing.T) {
	w := vfNewWorld(t, nil)
	revoked := w.hostAgent
	revoked.ID = "agt_revoked"
	revoked.Status = agentcap.StatusRevoked
	if err := w.dir.PutAgent(&revoked); err != nil {
		t.Fatal(err)
	}
	expired := func(c map[string]any) { c["iat"] = vfNowSecond - 600; c["exp"] = vfNowSecond - 540 }
	tests := []struct {
		name  string
		token string
		want  vfOutcome
	}{
		{"bad typ before unknown agent", vfRaw(w.agentKey.priv, `{"alg":"EdDSA","typ":"host+jwt"}`, vfJSON(t, map[string]any{"sub": "nobody"})), vfInvalid},
		{"bad signature before status", vfMint(t, vfNewKey(t).priv, "", map[string]any{"sub": "agt_revoked", "aud": vfAud}), vfInvalid},
		{"bad signature before expiry", vfMint(t, vfNewKey(t).priv, "", func() map[string]any { c := vfClaims(); expired(c); return c }()), vfInvalid},
		{"agent status before expiry", vfMint(t, w.agentKey.priv, "", func() map[string]any { c := vfClaims(); expired(c); c["sub"] = "agt_revoked"; return c }()), vfOutcome{403, agentcap.CodeAgentRevoked, "agent revoked"}},
		{"agent status before issuer", vfMint(t, w.agentKey.priv, "", map[string]any{"sub": "agt_revoked", "iss": "wrong"}), vfOutcome{403, agentcap.CodeAgentRevoked, "agent revoked"}},
		{"issuer before audience", w.mint(t, func(c map[string]any) { c["iss"] = "wrong"; c["aud"] = "wrong" }), vfIssuer},
		{"audience before expiry", w.mint(t, func(c map[string]any) { expired(c); c["aud"] = "wrong" }), vfAudience},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.v.Session(context.Background(), tt.token)
			if diff := cmp.Diff(tt.want, vfOutcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestVerifierUnknownAgentLooksLikeBadSignature(t *testing.T) {
	w := vfNewWorld(t, nil)
	_, unknown := w.v.Session(context.Background(), w.mint(t, vfSet("sub", "agt_nobody")))
	_, forged := w.v.Session(context.Background(), vfMint(t, vfNewKey(t).priv, "", vfClaims()))
	if diff := cmp.Diff(vfOutcomeOf(t, unknown), vfOutcomeOf(t, forged)); diff != "" {
		t.Fatalf("unknown agent and forged signature differ (-unknown +forged):\n%s", diff)
	}
	if !errors.Is(unknown, agentauth.ErrNotFound) {
		t.Errorf("hidden cause of %v does not wrap ErrNotFound", unknown)
	}
}

func TestVerifierReplay(t *testing.T) {
	w := vfNewWorld(t, nil)
	tok := w.mint(t, nil)
	if _, err := w.v.Session(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	_, err := w.v.Session(context.Background(), tok)
	if diff := cmp.Diff(vfReplayed, vfOutcomeOf(t, err)); diff != "" {
		t.Fatalf("replay (-want +got):\n%s", diff)
	}
	// A token failing a check does not use up its jti.
	w2 := vfNewWorld(t, nil)
	bad := w2.mint(t, func(c map[string]any) { c["jti"] = "shared"; c["aud"] = "https://wrong.example" })
	if _, err := w2.v.Session(context.Background(), bad); vfOutcomeOf(t, err) != vfAudience {
		t.Fatalf("bad aud: %v", err)
	}
	if _, err := w2.v.Session(context.Background(), w2.mint(t, vfSet("jti", "shared"))); err != nil {
		t.Fatalf("valid token after a refused one with the same jti: %v", err)
	}
	// The same jti from another agent is another key.
	other := w2.hostAgent
	other.ID = "agt_2"
	if err := w2.dir.PutAgent(&other); err != nil {
		t.Fatal(err)
	}
	if _, err := w2.v.Session(context.Background(), w2.mint(t, func(c map[string]any) { c["jti"] = "shared"; c["sub"] = "agt_2" })); err != nil {
		t.Fatalf("same jti, other agent: %v", err)
	}
}

type vfRecordingReplay struct {
	mu   sync.Mutex
	keys []string
	ttls []time.Duration
	err  error
}

func (r *vfRecordingReplay) CheckAndSet(_ context.Context, key string, ttl time.Duration) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
	r.ttls = append(r.ttls, ttl)
	return r.err == nil, r.err
}

func TestVerifierReplayKeyAndTTL(t *testing.T) {
	rec := &vfRecordingReplay{}
	w := vfNewWorld(t, func(c *agentauth.VerifierConfig) {
		c.Replay = rec
		c.Skew = 10 * time.Second
		c.MaxAge = 30 * time.Second
	})
	if _, err := w.v.Session(context.Background(), w.mint(t, func(c map[string]any) { c["jti"] = "j1"; c["exp"] = vfNowSecond + 30 })); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"agentauth:jti:agt_1:j1"}, rec.keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{50 * time.Second}, rec.ttls); diff != "" {
		t.Errorf("ttl (-want +got):\n%s", diff)
	}
	rec.err = errors.New("redis down")
	_, err := w.v.Session(context.Background(), w.mint(t, vfSet("exp", vfNowSecond+30)))
	if diff := cmp.Diff(vfReplayDown, vfOutcomeOf(t, err)); diff != "" {
		t.Fatalf("replay cache failure (-want +got):\n%s", diff)
	}
	if !errors.Is(err, rec.err) {
		t.Errorf("cause of %v does not wrap the cache error", err)
	}
	vfCheckRetryAfter(t, err)
}

type vfFailingDirectory struct {
	agentauth.Directory
	agentErr, hostErr error
}

func (d vfFailingDirectory) Agent(ctx context.Context, id string) (*agentauth.Agent, error) {
	if d.agentErr != nil {
		return nil, d.agentErr
	}
	return d.Directory.Agent(ctx, id)
}

func (d vfFailingDirectory) Host(ctx context.Context, id string) (*agentauth.Host, error) {
	if d.hostErr != nil {
		return nil, d.hostErr
	}
	return d.Directory.Host(ctx, id)
}

func TestVerifierDirectoryFailures(t *testing.T) {
	tests := []struct {
		name string
		dir  func(agentauth.Directory) agentauth.Directory
		want vfOutcome
	}{
		{"agent lookup fails", func(d agentauth.Directory) agentauth.Directory {
			return vfFailingDirectory{Directory: d, agentErr: errors.New("db down")}
		}, vfDirDown},
		{"host lookup fails", func(d agentauth.Directory) agentauth.Directory {
			return vfFailingDirectory{Directory: d, hostErr: errors.New("db down")}
		}, vfDirDown},
		{"host missing", func(d agentauth.Directory) agentauth.Directory {
			return vfFailingDirectory{Directory: d, hostErr: fmt.Errorf("gone: %w", agentauth.ErrNotFound)}
		}, vfInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := vfNewWorld(t, func(c *agentauth.VerifierConfig) { c.Directory = tt.dir(c.Directory) })
			_, err := w.v.Session(context.Background(), w.mint(t, nil))
			if diff := cmp.Diff(tt.want, vfOutcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestVerifierConcurrentReplay(t *testing.T) {
	w := vfNewWorld(t, nil)
	tok := w.mint(t, nil)
	const n = 32
	var ok, replayed atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := w.v.Session(context.Background(), tok)
			switch {
			case err == nil:
				ok.Add(1)
			case vfOutcomeOf(t, err) == vfReplayed:
				replayed.Add(1)
			default:
				t.Errorf("unexpected error %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || replayed.Load() != n-1 {
		t.Fatalf("successes = %d, replays = %d; want 1 and %d", ok.Load(), replayed.Load(), n-1)
	}
}

func TestNewVerifierConfig(t *testing.T) {
	dir := agentauth.NewMemoryDirectory()
	tests := []struct {
		name string
		cfg  agentauth.VerifierConfig
		ok   bool
	}{
		{"minimal", agentauth.VerifierConfig{Directory: dir, Audiences: []string{vfAud}}, true},
		{"no directory", agentauth.VerifierConfig{Audiences: []string{vfAud}}, false},
		{"no audiences", agentauth.VerifierConfig{Directory: dir}, false},
		{"blank audience", agentauth.VerifierConfig{Directory: dir, Audiences: []string{vfAud, " "}}, false},
		{"skew 30s", agentauth.VerifierConfig{Directory: dir, Audiences: []string{vfAud}, Skew: 30 * time.Second}, true},
		{"skew above 30s", agentauth.VerifierConfig{Directory: dir, Audiences: []string{vfAud}, Skew: 31 * time.Second}, false},
		{"negative skew", agentauth.VerifierConfig{Directory: dir, Audiences: []string{vfAud}, Skew: -time.Second}, false},
		{"max age 60s", agentauth.VerifierConfig{Directory: dir, Audiences: []string{vfAud}, MaxAge: time.Minute}, true},
		{"max age above 60s", agentauth.VerifierConfig{Directory: dir, Audiences: []string{vfAud}, MaxAge: time.Minute + 1}, false},
		{"negative max age", agentauth.VerifierConfig{Directory: dir, Audiences: []string{vfAud}, MaxAge: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agentauth.NewVerifier(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("NewVerifier error = %v, want ok = %v", err, tt.ok)
			}
		})
	}
}

// vfJWKSServer serves a JWK Set over TLS on loopback and counts fetches.
type vfJWKSServer struct {
	srv  *httptest.Server
	hits atomic.Int32
	mu   sync.Mutex
	body []byte
}

func vfNewJWKSServer(t testing.TB, body []byte) *vfJWKSServer {
	t.Helper()
	s := &vfJWKSServer{body: body}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.body)
	}))
	// The untrusted-certificate case makes the server log a handshake
	// failure; it is expected.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

func (s *vfJWKSServer) set(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
}

// policy trusts the server's certificate. Its timeout is far above what a
// loopback fetch takes even on a loaded machine under the race detector,
// so that no outcome depends on how fast the machine is.
func (s *vfJWKSServer) policy() agentauth.FetchPolicy {
	return agentauth.FetchPolicy{
		AllowLoopback: true,
		RootCAs:       s.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		Timeout:       time.Minute,
	}
}

func vfJWKS(t testing.TB, keys ...jose.JSONWebKey) []byte {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func vfPublicJWK(k vfKey, kid string) jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.pub, KeyID: kid, Algorithm: string(jose.EdDSA), Use: "sig"}
}

// vfJWKSWorld is a world whose agent agt_jwks is keyed by a JWKS URL with
// kid "k1".
func vfJWKSWorld(t *testing.T, body func(agentKey vfKey) []byte, policy func(*vfJWKSServer) agentauth.FetchPolicy) (*vfWorld, *vfJWKSServer, vfKey) {
	t.Helper()
	key := vfNewKey(t)
	srv := vfNewJWKSServer(t, body(key))
	if policy == nil {
		policy = (*vfJWKSServer).policy
	}
	w := vfNewWorld(t, func(c *agentauth.VerifierConfig) { c.KeyFetch = policy(srv) })
	if err := w.dir.PutAgent(&agentauth.Agent{
		ID: "agt_jwks", HostID: vfHost, Mode: agentcap.ModeAutonomous, Status: agentcap.StatusActive,
		JWKSURL: srv.srv.URL + "/jwks.json", KID: "k1",
	}); err != nil {
		t.Fatal(err)
	}
	return w, srv, key
}

func vfJWKSClaims() map[string]any {
	c := vfClaims()
	c["sub"] = "agt_jwks"
	return c
}

func TestVerifierJWKS(t *testing.T) {
	other := vfNewKey(t)
	oct := jose.JSONWebKey{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "k1", Algorithm: "HS256"}
	tests := []struct {
		name   string
		body   func(agentKey vfKey) []byte
		policy func(*vfJWKSServer) agentauth.FetchPolicy
		kid    string
		signer func(agentKey vfKey) ed25519.PrivateKey
		want   vfOutcome
	}{
		{name: "key found by kid", body: func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(other, "k0"), vfPublicJWK(k, "k1")) }, kid: "k1", want: vfOK},
		{name: "token without kid", body: func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(k, "k1")) }, kid: "", want: vfInvalid},
		{name: "kid not the agent's", body: func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(k, "k1"), vfPublicJWK(k, "k2")) }, kid: "k2", want: vfInvalid},
		{name: "kid missing from the set", body: func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(k, "k9")) }, kid: "k1", want: vfInvalid},
		{name: "kid names another key", body: func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(other, "k1")) }, kid: "k1", want: vfInvalid},
		{name: "set with a symmetric key", body: func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(k, "k1"), oct) }, kid: "k1", want: vfInvalid},
		{name: "set with a private key", body: func(k vfKey) []byte {
			return vfJWKS(t, jose.JSONWebKey{Key: k.priv, KeyID: "k1", Algorithm: string(jose.EdDSA)})
		}, kid: "k1", want: vfInvalid},
		{name: "set with too many keys", body: func(k vfKey) []byte {
			keys := []jose.JSONWebKey{vfPublicJWK(k, "k1")}
			for i := range 20 {
				keys = append(keys, vfPublicJWK(other, fmt.Sprintf("x%d", i)))
			}
			return vfJWKS(t, keys...)
		}, kid: "k1", want: vfInvalid},
		{name: "MaxKeys raised", body: func(k vfKey) []byte {
			keys := []jose.JSONWebKey{vfPublicJWK(k, "k1")}
			for i := range 20 {
				keys = append(keys, vfPublicJWK(other, fmt.Sprintf("x%d", i)))
			}
			return vfJWKS(t, keys...)
		}, policy: func(s *vfJWKSServer) agentauth.FetchPolicy { p := s.policy(); p.MaxKeys = 21; return p }, kid: "k1", want: vfOK},
		{name: "body over MaxBytes", body: func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(k, "k1")) },
			policy: func(s *vfJWKSServer) agentauth.FetchPolicy { p := s.policy(); p.MaxBytes = 64; return p }, kid: "k1", want: vfInvalid},
		{name: "not JSON", body: func(vfKey) []byte { return []byte("<html>") }, kid: "k1", want: vfInvalid},
		{name: "loopback refused by the production policy", body: func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(k, "k1")) },
			policy: func(s *vfJWKSServer) agentauth.FetchPolicy { p := s.policy(); p.AllowLoopback = false; return p }, kid: "k1", want: vfInvalid},
		{name: "untrusted certificate", body: func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(k, "k1")) },
			policy: func(s *vfJWKSServer) agentauth.FetchPolicy { return agentauth.FetchPolicy{AllowLoopback: true} }, kid: "k1", want: vfInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, srv, key := vfJWKSWorld(t, tt.body, tt.policy)
			_, err := w.v.Session(context.Background(), vfMint(t, key.priv, tt.kid, vfJWKSClaims()))
			if diff := cmp.Diff(tt.want, vfOutcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s\nerror: %v", diff, err)
			}
			wantHits := int32(1)
			if tt.kid != "k1" {
				wantHits = 0 // refused before any fetch
			}
			if tt.name == "loopback refused by the production policy" {
				wantHits = 0
			}
			if got := srv.hits.Load(); got > wantHits {
				t.Errorf("JWKS fetched %d times, want at most %d", got, wantHits)
			}
		})
	}
}

// TestVerifierJWKSRefetchThrottle shows that forged tokens naming a JWKS
// agent cannot make the verifier fetch the key owner's URL more than once
// per ten seconds, and that a rotated key is picked up after that. Time
// moves only by the verifier's clock, and each outcome is decided by it:
// a token arriving just after a refresh is not answered from that
// refresh's keys once the floor has passed (see TestJWKSKeySetRenews), so
// the test needs no sleep and passes on a machine of any speed.
func TestVerifierJWKSRefetchThrottle(t *testing.T) {
	w, srv, key := vfJWKSWorld(t, func(k vfKey) []byte { return vfJWKS(t, vfPublicJWK(k, "k1")) }, nil)
	ctx := context.Background()
	if _, err := w.v.Session(ctx, vfMint(t, key.priv, "k1", vfJWKSClaims())); err != nil {
		t.Fatal(err)
	}
	forger := vfNewKey(t)
	for range 5 {
		if _, err := w.v.Session(ctx, vfMint(t, forger.priv, "k1", vfJWKSClaims())); vfOutcomeOf(t, err) != vfInvalid {
			t.Fatalf("forged token: %v", err)
		}
	}
	if got := srv.hits.Load(); got != 1 {
		t.Fatalf("JWKS fetched %d times after 1 good and 5 forged tokens, want 1", got)
	}

	// Rotation: the agent's key becomes k2.
	rotated := vfNewKey(t)
	srv.set(vfJWKS(t, vfPublicJWK(key, "k1"), vfPublicJWK(rotated, "k2")))
	if err := w.dir.PutAgent(&agentauth.Agent{
		ID: "agt_jwks", HostID: vfHost, Mode: agentcap.ModeAutonomous, Status: agentcap.StatusActive,
		JWKSURL: srv.srv.URL + "/jwks.json", KID: "k2",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.v.Session(ctx, vfMint(t, rotated.priv, "k2", vfJWKSClaims())); vfOutcomeOf(t, err) != vfInvalid {
		t.Fatalf("rotated key within the refresh floor: %v", err)
	}
	w.clock.Add(11 * time.Second)
	c := vfJWKSClaims()
	c["iat"], c["exp"] = vfNowSecond+11, vfNowSecond+71
	if _, err := w.v.Session(ctx, vfMint(t, rotated.priv, "k2", c)); err != nil {
		t.Fatalf("rotated key after the refresh floor: %v", err)
	}
	if got := srv.hits.Load(); got != 2 {
		t.Fatalf("JWKS fetched %d times, want 2", got)
	}
}

// vfCorpusEntry is one token of the differential corpus, with the outcome
// Session gives it when the corpus is verified in order by one verifier.
// These outcomes are the ones the verifier gave before it parsed tokens
// itself (encoding/json for the claims, go-jose for the JWS).
type vfCorpusEntry struct {
	name  string
	token string
	want  vfOutcome
}

// vfCorpus is a directory of test identities from agentauthtest and the
// tokens they mint: valid ones, each broken variant agentauthtest can
// make, and every one-byte mutation of a valid token.
type vfCorpus struct {
	dir      *agentauth.MemoryDirectory
	agentKey ed25519.PublicKey
	entries  []vfCorpusEntry
}

func vfNewCorpus(t testing.TB) *vfCorpus {
	t.Helper()
	clock := func() time.Time { return vfNow }
	seeded := func(seed byte) io.Reader { return mrand.NewChaCha8([32]byte{seed}) }
	host := agentauthtest.NewHost(agentauthtest.Host{ID: vfHost, Rand: seeded(1), Clock: clock, UserID: "usr_1"})
	agent := host.NewAgent(agentauthtest.Agent{ID: vfAgent}).Grant("check_balance", nil)
	revoked := host.NewAgent(agentauthtest.Agent{ID: "agt_revoked", Status: agentcap.StatusRevoked})
	pendingHost := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_pending", Rand: seeded(2), Clock: clock, Status: agentcap.StatusPending})
	underPending := pendingHost.NewAgent(agentauthtest.Agent{ID: "agt_under_pending"})
	stranger := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_x", Rand: seeded(3), Clock: clock}).NewAgent(agentauthtest.Agent{ID: "agt_x"})
	dir, err := agentauthtest.NewDirectory([]*agentauthtest.Host{host, pendingHost}, []*agentauthtest.Agent{agent, revoked, underPending})
	if err != nil {
		t.Fatal(err)
	}

	tok := func(tok agentauthtest.Token) string {
		tok.Audience = vfAud
		return agent.Token(tok)
	}
	sec := func(d time.Duration) float64 { return float64(vfNow.Add(d).UnixMilli()) / 1000 }
	good := tok(agentauthtest.Token{JTI: "replayed"})
	entries := []vfCorpusEntry{
		{"published client's token", tok(agentauthtest.Token{}), vfOK},
		{"capabilities claim", tok(agentauthtest.Token{Capabilities: []string{"check_balance", "transfer"}}), vfOK},
		{"empty capabilities claim", tok(agentauthtest.Token{Capabilities: []string{}}), vfOK},
		{"iss the host thumbprint", tok(agentauthtest.Token{Issuer: host.Thumbprint()}), vfOK},
		{"iss the host id", tok(agentauthtest.Token{Issuer: vfHost}), vfOK},
		{"aud array", tok(agentauthtest.Token{Claims: map[string]any{"aud": []string{"https://x.example", vfAud}}}), vfOK},
		{"decimal times", tok(agentauthtest.Token{Claims: map[string]any{"iat": sec(-1500 * time.Millisecond), "exp": sec(58 * time.Second)}}), vfOK},
		{"nbf in the past", tok(agentauthtest.Token{Claims: map[string]any{"nbf": vfNow.Unix() - 10}}), vfOK},
		{"escaped jti", tok(agentauthtest.Token{JTI: "<j&1>\u2028"}), vfOK},
		{"unregistered claims", tok(agentauthtest.Token{Claims: map[string]any{"scope": map[string]any{"a": []any{1.5, "<b>", nil, true}, "é": "😀"}}}), vfOK},
		{"no kid", tok(agentauthtest.Token{Header: map[string]any{"kid": nil}}), vfOK},
		{"first use", good, vfOK},
		{"replayed", good, vfReplayed},

		{"typ host+jwt", tok(agentauthtest.Token{Type: agentcap.TypeHostJWT}), vfInvalid},
		{"typ JWT", tok(agentauthtest.Token{Type: "JWT"}), vfInvalid},
		{"no typ", tok(agentauthtest.Token{Header: map[string]any{"typ": nil}}), vfInvalid},
		{"no alg", tok(agentauthtest.Token{Header: map[string]any{"alg": nil}}), vfInvalid},
		{"alg none", tok(agentauthtest.Token{Algorithm: "none"}), vfInvalid},
		{"HS256 keyed with the public key", tok(agentauthtest.Token{Algorithm: "HS256"}), vfInvalid},
		{"HS384 keyed with the public key", tok(agentauthtest.Token{Algorithm: "HS384"}), vfInvalid},
		{"HS512 keyed with the public key", tok(agentauthtest.Token{Algorithm: "HS512"}), vfInvalid},
		{"ES256 label", tok(agentauthtest.Token{Algorithm: "ES256"}), vfInvalid},
		{"RS256 label", tok(agentauthtest.Token{Algorithm: "RS256"}), vfInvalid},
		{"signed by another key", tok(agentauthtest.Token{SigningKey: stranger.Key}), vfInvalid},
		{"signed by the host key", tok(agentauthtest.Token{SigningKey: host.Key}), vfInvalid},
		{"embedded jwk", tok(agentauthtest.Token{Header: map[string]any{"jwk": json.RawMessage(stranger.PublicJWK())}}), vfInvalid},
		{"jku", tok(agentauthtest.Token{Header: map[string]any{"jku": "https://evil.example/jwks"}}), vfInvalid},
		{"x5u", tok(agentauthtest.Token{Header: map[string]any{"x5u": "https://evil.example/cert"}}), vfInvalid},
		{"x5c", tok(agentauthtest.Token{Header: map[string]any{"x5c": []string{"MIIB"}}}), vfInvalid},
		{"crit", tok(agentauthtest.Token{Header: map[string]any{"crit": []string{"exp"}}}), vfInvalid},
		{"b64", tok(agentauthtest.Token{Header: map[string]any{"b64": false}}), vfInvalid},
		{"cty", tok(agentauthtest.Token{Header: map[string]any{"cty": "JWT"}}), vfInvalid},
		{"kid a number", tok(agentauthtest.Token{Header: map[string]any{"kid": 7}}), vfInvalid},
		{"typ an array", tok(agentauthtest.Token{Header: map[string]any{"typ": []string{agentcap.TypeAgentJWT}}}), vfInvalid},
		{"host token", host.Token(agentauthtest.Token{Audience: vfAud}), vfInvalid},
		{"unknown agent", stranger.Token(agentauthtest.Token{Audience: vfAud}), vfInvalid},
		{"no sub", tok(agentauthtest.Token{Claims: map[string]any{"sub": nil}}), vfInvalid},
		{"sub a number", tok(agentauthtest.Token{Claims: map[string]any{"sub": 7}}), vfInvalid},
		{"iat a string", tok(agentauthtest.Token{Claims: map[string]any{"iat": strconv.FormatInt(vfNow.Unix(), 10)}}), vfInvalid},
		{"exp negative", tok(agentauthtest.Token{Claims: map[string]any{"exp": -1}}), vfInvalid},
		{"exp beyond year 9999", tok(agentauthtest.Token{Claims: map[string]any{"exp": 1e13}}), vfInvalid},
		{"nbf a string", tok(agentauthtest.Token{Claims: map[string]any{"nbf": "soon"}}), vfInvalid},
		{"aud a number", tok(agentauthtest.Token{Claims: map[string]any{"aud": 1}}), vfInvalid},
		{"aud array with a number", tok(agentauthtest.Token{Claims: map[string]any{"aud": []any{vfAud, 1}}}), vfInvalid},
		{"capabilities a string", tok(agentauthtest.Token{Claims: map[string]any{"capabilities": "check_balance"}}), vfInvalid},
		{"capabilities null", tok(agentauthtest.Token{Claims: map[string]any{"capabilities": json.RawMessage("null")}}), vfInvalid},
		{"iss null", tok(agentauthtest.Token{Claims: map[string]any{"iss": json.RawMessage("null")}}), vfInvalid},
		{"jti a number", tok(agentauthtest.Token{Claims: map[string]any{"jti": 5}}), vfInvalid},
		{"revoked agent", revoked.Token(agentauthtest.Token{Audience: vfAud}), vfOutcome{403, agentcap.CodeAgentRevoked, "agent revoked"}},
		{"pending host", underPending.Token(agentauthtest.Token{Audience: vfAud}), vfOutcome{403, agentcap.CodeHostPending, "host pending approval"}},
		{"foreign iss", tok(agentauthtest.Token{Issuer: "hst_other"}), vfIssuer},
		{"wrong audience", agent.Token(agentauthtest.Token{Audience: "https://elsewhere.example"}), vfAudience},
		{"no aud", tok(agentauthtest.Token{Claims: map[string]any{"aud": nil}}), vfAudience},
		{"no iat", tok(agentauthtest.Token{Claims: map[string]any{"iat": nil}}), vfMissing},
		{"no exp", tok(agentauthtest.Token{Claims: map[string]any{"exp": nil}}), vfMissing},
		{"no jti", tok(agentauthtest.Token{Claims: map[string]any{"jti": nil}}), vfMissing},
		{"empty jti", tok(agentauthtest.Token{Claims: map[string]any{"jti": ""}}), vfMissing},
		{"issued in the future", tok(agentauthtest.Token{IssuedAt: vfNow.Add(time.Minute)}), vfFuture},
		{"nbf in the future", tok(agentauthtest.Token{Claims: map[string]any{"nbf": vfNow.Unix() + 30}}), vfFuture},
		{"issued ten minutes ago", tok(agentauthtest.Token{IssuedAt: vfNow.Add(-10 * time.Minute)}), vfTooOld},
		{"expired", tok(agentauthtest.Token{IssuedAt: vfNow.Add(-30 * time.Second), Lifetime: 20 * time.Second}), vfExpired},
		{"lifetime of an hour", tok(agentauthtest.Token{Lifetime: time.Hour}), vfLifetime},
		{"exp equals iat", tok(agentauthtest.Token{Expiry: vfNow}), vfLifetime},
	}

	// Every one-byte change of a valid token: each byte replaced by
	// another of the alphabet, removed, or doubled.
	base := tok(agentauthtest.Token{JTI: "mutated"})
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
	for i := range len(base) {
		other := alphabet[(strings.IndexByte(alphabet, base[i])+1)%len(alphabet)]
		entries = append(entries,
			vfCorpusEntry{fmt.Sprintf("byte %d replaced", i), base[:i] + string(other) + base[i+1:], vfInvalid},
			vfCorpusEntry{fmt.Sprintf("byte %d removed", i), base[:i] + base[i+1:], vfInvalid},
			vfCorpusEntry{fmt.Sprintf("byte %d doubled", i), base[:i+1] + base[i:], vfInvalid},
		)
	}
	parts := strings.Split(base, ".")
	entries = append(entries,
		vfCorpusEntry{"padded", base + "=", vfInvalid},
		vfCorpusEntry{"header and payload swapped", parts[1] + "." + parts[0] + "." + parts[2], vfInvalid},
		vfCorpusEntry{"signature of another token", parts[0] + "." + parts[1] + "." + strings.Split(tok(agentauthtest.Token{}), ".")[2], vfInvalid},
		vfCorpusEntry{"signature truncated to 63 bytes", parts[0] + "." + parts[1] + "." + parts[2][:84], vfInvalid},
	)
	return &vfCorpus{dir: dir, agentKey: agent.Key.Public().(ed25519.PublicKey), entries: entries}
}

// TestVerifierTokenCorpus verifies the corpus in order with one verifier:
// each token gets the outcome it got before the verifier parsed tokens
// itself.
func TestVerifierTokenCorpus(t *testing.T) {
	c := vfNewCorpus(t)
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{Directory: c.dir, Audiences: []string{vfAud}, Now: func() time.Time { return vfNow }})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.entries {
		_, err := v.Session(context.Background(), e.token)
		if diff := cmp.Diff(e.want, vfOutcomeOf(t, err)); diff != "" {
			t.Errorf("%s: outcome (-want +got):\n%s\nerror: %v", e.name, diff, err)
		}
	}
}

// TestTokenParserMatchesReference checks the verifier's parser against
// the encoding/json and go-jose decoding it replaced, on the corpus: both
// accept or both refuse every token, and read what they accept alike,
// down to whether the signature verifies with the agent's key.
func TestTokenParserMatchesReference(t *testing.T) {
	c := vfNewCorpus(t)
	accepted := 0
	for _, e := range c.entries {
		got, err := agentauth.ParseTokenView(e.token, c.agentKey)
		want, refErr := agentauth.ReferenceTokenView(e.token, c.agentKey)
		switch {
		case (err == nil) != (refErr == nil):
			t.Errorf("%s: parser error %v, reference error %v", e.name, err, refErr)
		case err == nil:
			accepted++
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: parsed token (-reference +parser):\n%s", e.name, diff)
			}
		}
		if err != nil && vfOutcomeOf(t, err) != vfInvalid {
			t.Errorf("%s: parser error %v is not %v", e.name, err, vfInvalid)
		}
	}
	// Most of the corpus is syntactically valid: the comparison covers
	// the claims, not only refusals.
	if accepted < 60 {
		t.Errorf("only %d of %d tokens parsed", accepted, len(c.entries))
	}
}

// TestVerifierInlineKeyCache shows that parsed keys are cached by their
// content, not by agent or host id: a record whose key changes is
// verified with its new key at once, and a key one agent shares with
// another does not make either's tokens valid for the other.
func TestVerifierInlineKeyCache(t *testing.T) {
	w := vfNewWorld(t, nil)
	ctx := context.Background()
	if _, err := w.v.Session(ctx, w.mint(t, nil)); err != nil {
		t.Fatal(err)
	}
	rotated := vfNewKey(t)
	a := w.hostAgent
	a.PublicKey = rotated.jwk
	if err := w.dir.PutAgent(&a); err != nil {
		t.Fatal(err)
	}
	if _, err := w.v.Session(ctx, w.mint(t, nil)); vfOutcomeOf(t, err) != vfInvalid {
		t.Fatalf("token signed with the replaced key: %v", err)
	}
	if _, err := w.v.Session(ctx, vfMint(t, rotated.priv, "", vfClaims())); err != nil {
		t.Fatalf("token signed with the new key: %v", err)
	}

	// The host's thumbprint as iss follows the host's key the same way.
	newHostKey := vfNewKey(t)
	h, err := w.dir.Host(ctx, vfHost)
	if err != nil {
		t.Fatal(err)
	}
	h.PublicKey = newHostKey.jwk
	if err := w.dir.PutHost(h); err != nil {
		t.Fatal(err)
	}
	if _, err := w.v.Session(ctx, vfMint(t, rotated.priv, "", func() map[string]any { c := vfClaims(); c["iss"] = w.hostKey.thumb; return c }())); vfOutcomeOf(t, err) != vfIssuer {
		t.Fatalf("iss naming the host's former key: %v", err)
	}
	if _, err := w.v.Session(ctx, vfMint(t, rotated.priv, "", func() map[string]any { c := vfClaims(); c["iss"] = newHostKey.thumb; return c }())); err != nil {
		t.Fatalf("iss naming the host's new key: %v", err)
	}
}

// TestVerifierSessionAllocations guards the allocation budget of a
// successful Session with an inline key and the memory replay cache.
func TestVerifierSessionAllocations(t *testing.T) {
	w := vfNewWorld(t, nil)
	const runs = 50
	tokens := make([]string, runs+1)
	for i := range tokens {
		tokens[i] = w.mint(t, vfSet("jti", fmt.Sprintf("alloc-%d", i)))
	}
	ctx := context.Background()
	next := 0
	allocs := testing.AllocsPerRun(runs, func() {
		if _, err := w.v.Session(ctx, tokens[next]); err != nil {
			t.Fatal(err)
		}
		next++
	})
	if allocs > 25 {
		t.Errorf("a successful Session allocates %.1f times, want at most 25", allocs)
	}
}

// FuzzVerify feeds arbitrary strings to the verifier. It must never panic,
// and never accept anything but the valid seed tokens.
func FuzzVerify(f *testing.F) {
	w := vfNewWorld(f, nil)
	valid := map[string]bool{}
	for i := range 3 {
		tok := w.mint(f, vfSet("jti", fmt.Sprintf("fuzz-%d", i)))
		valid[tok] = true
		f.Add(tok)
	}
	f.Add("")
	f.Add("a.b.c")
	f.Add(vfRaw(w.agentKey.priv, `{"alg":"EdDSA","typ":"agent+jwt","jwk":{}}`, `{"sub":"agt_1"}`))
	f.Add(vfRaw(w.agentKey.priv, `{"alg":"none","typ":"agent+jwt"}`, `{"sub":"agt_1","aud":"x"}`))
	f.Fuzz(func(t *testing.T, token string) {
		sess, err := w.v.Session(context.Background(), token)
		if err == nil {
			if !valid[token] {
				t.Fatalf("accepted a token that was not minted by the test: %q", token)
			}
			if sess == nil || sess.Agent == nil || sess.Host == nil {
				t.Fatalf("nil session parts for %q", token)
			}
			return
		}
		var ae *agentcap.Error
		if !errors.As(err, &ae) {
			t.Fatalf("error %v is not a *agentcap.Error", err)
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	w := vfNewWorld(b, nil)
	tokens := make([]string, b.N)
	for i := range tokens {
		tokens[i] = w.mint(b, vfSet("jti", fmt.Sprintf("bench-%d", i)))
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := w.v.Session(ctx, tokens[i]); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleNewVerifier() {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	jwk, _ := jose.JSONWebKey{Key: pub}.MarshalJSON()

	dir := agentauth.NewMemoryDirectory()
	_ = dir.PutHost(&agentauth.Host{ID: "hst_1", PublicKey: jwk, Status: agentcap.StatusActive})
	_ = dir.PutAgent(&agentauth.Agent{
		ID: "agt_1", HostID: "hst_1", Mode: agentcap.ModeDelegated, Status: agentcap.StatusActive,
		PublicKey: jwk,
		Grants:    []agentauth.Grant{{Capability: "check_balance", Status: agentcap.StatusActive}},
	})
	v, err := agentauth.NewVerifier(agentauth.VerifierConfig{
		Directory: dir,
		Audiences: []string{"https://bank.example/capability/execute"},
	})
	if err != nil {
		panic(err)
	}

	// What the agent's client sends as its bearer token.
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: priv},
		(&jose.SignerOptions{}).WithType("agent+jwt"))
	now := time.Now().Unix()
	payload, _ := json.Marshal(map[string]any{
		"sub": "agt_1", "aud": "https://bank.example/capability/execute",
		"iat": now, "exp": now + 60, "jti": "b7f1c2", "capabilities": []string{"check_balance"},
	})
	jws, _ := signer.Sign(payload)
	token, _ := jws.CompactSerialize()

	sess, err := v.Session(context.Background(), token)
	fmt.Println(sess.Agent.ID, sess.Host.ID, sess.Claims.Capabilities, err)

	_, err = v.Session(context.Background(), token)
	var ae *agentcap.Error
	errors.As(err, &ae)
	fmt.Println(ae.HTTPStatus(), ae.Code, ae.Message)
	// Output:
	// agt_1 hst_1 [check_balance] <nil>
	// 401 invalid_jwt agent JWT already used
}

// vfCheckRetryAfter checks that a refusal for a store that did not answer
// asks the caller to retry in a second, in the header and the body.
func vfCheckRetryAfter(t *testing.T, err error) {
	t.Helper()
	var ae *agentcap.Error
	if !errors.As(err, &ae) {
		t.Fatalf("%v is not a *agentcap.Error", err)
	}
	if ae.RetryAfter != time.Second || ae.Fields["retry_after"] != 1 {
		t.Errorf("RetryAfter %s, retry_after %v; want 1s and 1", ae.RetryAfter, ae.Fields["retry_after"])
	}
}
