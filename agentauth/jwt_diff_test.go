package agentauth

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
)

// The differential fuzz targets below read each input with the JWT reader
// of jwt.go and with the readers it replaced (jwt_old_test.go), and
// require the same results: accepted or refused, with the same error code
// and public message, and the same parsed fields. tokenType is held to
// the old reading too, except where the old one is a bug that
// TestTokenTypeReadsLikeTheVerifiers pins (see typeDifferenceAllowed).

// diffJWTReaders returns "" when the readers agree on token, else what
// differs.
func diffJWTReaders(token string) string {
	var out []string
	if d := diffAgentReaders(token); d != "" {
		out = append(out, "agent JWT: "+d)
	}
	if d := diffHostReaders(token); d != "" {
		out = append(out, "host JWT: "+d)
	}
	oldTyp, newTyp := oldTokenType(token), tokenType(token)
	if oldTyp != newTyp && !typeDifferenceAllowed(token) {
		out = append(out, "tokenType: old "+oldTyp+", new "+newTyp)
	}
	return strings.Join(out, "\n")
}

// publicError is what a client sees of a refusal.
func publicError(err error) string {
	if err == nil {
		return "accepted"
	}
	var ae *agentcap.Error
	if !errors.As(err, &ae) {
		return "not an *agentcap.Error: " + err.Error()
	}
	return string(ae.Code) + ": " + ae.Message
}

// agentParse is what the agent JWT readers produce.
type agentParse struct {
	Tok               agentToken
	SigningInput, Sig []byte
}

func diffAgentReaders(token string) string {
	var old oldScratch
	oldErr := old.parse(token)
	sc := getScratch()
	defer putScratch(sc)
	newErr := sc.parse(token)
	if o, n := publicError(oldErr), publicError(newErr); o != n {
		return "old " + o + " (" + errString(oldErr) + "), new " + n + " (" + errString(newErr) + ")"
	}
	if newErr != nil {
		return ""
	}
	return cmp.Diff(agentParse{old.tok, old.signingInput, old.sig}, agentParse{sc.tok, sc.signingInput, sc.sig},
		cmp.AllowUnexported(agentToken{}))
}

func diffHostReaders(token string) string {
	old, oldErr := oldParseHostJWT(token)
	tok, newErr := ParseHostJWT(token)
	if o, n := publicError(oldErr), publicError(newErr); o != n {
		return "old " + o + " (" + errString(oldErr) + "), new " + n + " (" + errString(newErr) + ")"
	}
	if newErr != nil {
		return ""
	}
	if d := cmp.Diff(old, tok); d != "" {
		return d
	}
	// cmp compares instants with Equal; the zones must agree too.
	if old.IssuedAt.Location() != tok.IssuedAt.Location() || old.Expiry.Location() != tok.Expiry.Location() {
		return "time zones differ"
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// typeDifferenceAllowed reports whether the old tokenType may read
// token's typ otherwise than the new one: only when neither verifier's
// header check accepts the header, so that whichever verifier the token
// goes to refuses it. The old tokenType read the header with
// encoding/json into a struct, matching "TYP" or "Typ" as "typ", letting
// the last of several win, and giving up on a type error in any of them;
// the verifiers read typ exactly, once, which tokenType now does too.
func typeDifferenceAllowed(token string) bool {
	head, _, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	header, err := oldB64.DecodeString(head)
	if err != nil {
		return false
	}
	if _, err := oldParseHeader(string(header)); err == nil {
		return false
	}
	h, err := decodeObject(header)
	if err != nil {
		return true
	}
	for name := range h {
		if name != "alg" && name != "typ" && name != "kid" {
			return true
		}
	}
	typ, err1 := optString(h, "typ")
	alg, err2 := optString(h, "alg")
	_, err3 := optString(h, "kid")
	return err1 != nil || err2 != nil || err3 != nil || typ != agentcap.TypeHostJWT || alg != "EdDSA"
}

var seg = base64.RawURLEncoding

// jwtFromJSON builds a token of header, payload and sig; brk, when not
// zero, puts a line break into it, at brk modulo its length.
func jwtFromJSON(header, payload string, sig []byte, brk uint16) string {
	tok := seg.EncodeToString([]byte(header)) + "." + seg.EncodeToString([]byte(payload)) + "." + seg.EncodeToString(sig)
	if brk != 0 {
		at := int(brk) % len(tok)
		tok = tok[:at] + "\n" + tok[at:]
	}
	return tok
}

// jwtDiffClaims are payloads of the seeds: the edges on which the two
// kinds of JWT were read differently, and more.
var jwtDiffClaims = []string{
	`{"sub":"agt_1","iss":"hst_1","aud":"https://rs.example","iat":1700000000,"exp":1700000060,"jti":"j1","capabilities":["a","b"]}`,
	`{"sub":"agt_1","aud":["a","b"],"iat":1700000000.5,"exp":1.70000006e9,"nbf":1700000000,"jti":"j"}`,
	`{"sub":"agt_1","aud":[],"iat":1e-400,"exp":0.0000000001,"jti":"","capabilities":[]}`,
	`{"sub":"agt_1","aud":null,"iat":null,"exp":null,"jti":null}`,
	`{"iss":"hst_1","aud":"","iat":-0,"exp":-1,"jti":"x"}`,
	`{"iss":"hst_1","aud":["a",""],"iat":1e11,"exp":100000000000.5,"jti":"x"}`,
	`{"iss":"hst_1","aud":["a",null],"iat":253402300799,"exp":253402300800}`,
	`{"iss":"hst_1","x":1e400,"y":{"a":1,"a":2}}`,
	`{"iss":"hst_1","sub":"s","x":1e-400,"y":[{"a":[1,{"b":{}}]}],"z":123456789012345678901234567890}`,
	`{"sub":"agt_1","x":{"a":1,"a":2},"y":1e500}`,
	`{"sub":"agt_1","sub":"agt_2"}`,
	`{"sub":"agt_1","\u0073ub":"agt_2"}`,
	`{"\u0069ss":"hst_1","\ud800":1,"\udc00":2}`,
	`{"iss":"hst_\ud800","jti":"\udfff\ud800\udc00","aud":["\ud83d"]}`,
	"{\"iss\":\"hst_\xff\",\"x\":\"\xfe\",\"\xfd\":1,\"\xfc\":2}",
	"{\"sub\":\"agt_\xff\"}",
	" \t\r\n{ \"sub\" : \"agt_1\" , \"iss\" : \"hst_1\" } \n",
	`{"sub":"agt_1","iat":"1700000000","exp":true,"nbf":{}}`,
	`{"sub":"agt_1","capabilities":null,"aud":5}`,
	`{"iss":"hst_1","host_public_key":{"kty":"OKP","crv":"Ed25519","x":"abc"},"host_name":"n\u00e9","agent_public_key":null}`,
	`{"sub":"agt_1"} x`,
	`{"sub":"agt_1"}{}`,
	`[]`,
	``,
	`{"iss":"hst_1","iat":01}`,
	`{"sub":"agt_1","aud":"\u0000\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`,
	`{"sub":"agt_1","deep":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	`{"sub":"agt_1","deep":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
	`{"iss":"hst_1","deep":` + strings.Repeat(`{"a":`, 1500) + `1` + strings.Repeat("}", 1500) + `}`,
	`{"iss":"hst_1","n":-` + strings.Repeat("9", 400) + `}`,
}

// jwtDiffHeaders are headers of the seeds.
var jwtDiffHeaders = []string{
	`{"alg":"EdDSA","typ":"agent+jwt"}`,
	`{"alg":"EdDSA","typ":"host+jwt","kid":"k1"}`,
	`{"alg":"EdDSA","typ":"host+jwt","kid":"k\ud800"}`,
	"{\"alg\":\"EdDSA\",\"typ\":\"host+jwt\",\"kid\":\"k\xff\"}",
	`{"\u0061lg":"EdDSA","typ":"agent\u002bjwt"}`,
	`{"alg":"EdDSA","typ":"agent+jwt","kid":null}`,
	`{"alg":"EdDSA","typ":"host+jwt","jku":"https://evil.example"}`,
	`{"alg":"EdDSA","typ":"host+jwt","typ":"host+jwt"}`,
	`{"alg":"EdDSA","TYP":"host+jwt"}`,
	`{"alg":"EdDSA","typ":"agent+jwt","Typ":"host+jwt"}`,
	`{"alg":"none","typ":"host+jwt"}`,
	` { "alg" : "EdDSA" , "typ" : "agent+jwt" } `,
	`{"alg":"EdDSA","typ":"host+jwt","x":{"a":1,"a":2}}`,
	`{"typ":"host+jwt","x":1e400}`,
}

// FuzzJWTReaders reads arbitrary tokens with both readers.
func FuzzJWTReaders(f *testing.F) {
	for i, h := range jwtDiffHeaders {
		for j, c := range jwtDiffClaims {
			if (i+j)%3 == 0 {
				f.Add(jwtFromJSON(h, c, []byte("sig"), 0))
			}
		}
	}
	f.Add("")
	f.Add("a.b.c")
	f.Add("..")
	f.Add("a.b.c.d")
	f.Add("eyJhbGciOiJFZERTQSIsInR5cCI6Imhvc3Qrand0In0\n.eyJpc3MiOiJoIn0.c2ln")
	f.Add("eyJhbGciOiJFZERTQSIsInR5cCI6Imhvc3Qrand0In0\r.eyJpc3MiOiJoIn0.\n")
	f.Add("eyJhbGciOiJFZERTQSIsInR5cCI6Imhvc3Qrand0In0=.eyJpc3MiOiJoIn0.c2ln")
	f.Fuzz(func(t *testing.T, token string) {
		if d := diffJWTReaders(token); d != "" {
			t.Fatalf("%q:\n%s", token, d)
		}
	})
}

// FuzzJWTReadersJSON reads tokens built of arbitrary header and claims
// JSON with both readers.
func FuzzJWTReadersJSON(f *testing.F) {
	for i, h := range jwtDiffHeaders {
		for j, c := range jwtDiffClaims {
			if (i+j)%2 == 0 {
				f.Add(h, c, []byte{1, 2, 3}, uint16(0))
			}
		}
	}
	f.Add(jwtDiffHeaders[1], jwtDiffClaims[0], []byte{}, uint16(7))
	f.Add(jwtDiffHeaders[0], jwtDiffClaims[0], []byte{9}, uint16(100))
	f.Fuzz(func(t *testing.T, header, payload string, sig []byte, brk uint16) {
		token := jwtFromJSON(header, payload, sig, brk)
		if d := diffJWTReaders(token); d != "" {
			t.Fatalf("header %q, payload %q, token %q:\n%s", header, payload, token, d)
		}
	})
}

// TestJWTReadersAgree runs the seeds of the fuzz targets as a test.
func TestJWTReadersAgree(t *testing.T) {
	for _, h := range jwtDiffHeaders {
		for _, c := range jwtDiffClaims {
			for _, brk := range []uint16{0, 5} {
				token := jwtFromJSON(h, c, []byte("sig"), brk)
				if d := diffJWTReaders(token); d != "" {
					t.Errorf("header %q, payload %q:\n%s", h, c, d)
				}
			}
		}
	}
}

// TestTokenTypeReadsLikeTheVerifiers pins where tokenType now differs
// from the encoding/json reading it had: a header whose typ the verifiers
// do not read as "host+jwt" no longer goes to the host verifier because
// of a member named "TYP" or "Typ", or of the last of two typ members,
// and the other way round. Both verifiers refuse such tokens (401
// invalid_jwt); only which of them says so changes.
func TestTokenTypeReadsLikeTheVerifiers(t *testing.T) {
	for _, tt := range []struct {
		header   string
		old, new string
	}{
		{`{"alg":"EdDSA","TYP":"host+jwt"}`, agentcap.TypeHostJWT, ""},
		{`{"alg":"EdDSA","typ":"agent+jwt","Typ":"host+jwt"}`, agentcap.TypeHostJWT, agentcap.TypeAgentJWT},
		{`{"alg":"EdDSA","typ":"agent+jwt","typ":"host+jwt"}`, agentcap.TypeHostJWT, ""},
		{`{"alg":"EdDSA","typ":"host+jwt","Typ":5}`, "", agentcap.TypeHostJWT},
		// As before.
		{`{"alg":"EdDSA","typ":"host+jwt","kid":"k\ud800"}`, agentcap.TypeHostJWT, agentcap.TypeHostJWT},
		{`{"alg":"EdDSA","typ":"agent+jwt"}`, agentcap.TypeAgentJWT, agentcap.TypeAgentJWT},
		{`{"typ":null}`, "", ""},
	} {
		token := jwtFromJSON(tt.header, `{"iss":"h","sub":"a"}`, []byte("s"), 0)
		if got := oldTokenType(token); got != tt.old {
			t.Errorf("%s: old tokenType %q, want %q", tt.header, got, tt.old)
		}
		if got := tokenType(token); got != tt.new {
			t.Errorf("%s: tokenType %q, want %q", tt.header, got, tt.new)
		}
		if tt.old != tt.new && !typeDifferenceAllowed(token) {
			t.Errorf("%s: a header a verifier accepts", tt.header)
		}
	}
}

// TestHostJWTEdges pins readings of host JWTs that differ from agent
// JWTs' and that the reader keeps.
func TestHostJWTEdges(t *testing.T) {
	hdr := `{"alg":"EdDSA","typ":"host+jwt"}`
	for _, tt := range []struct {
		claims string
		ok     bool
		check  func(*HostJWT) bool
	}{
		{`{"iss":"h","aud":null,"iat":null}`, true, func(j *HostJWT) bool {
			return len(j.Audience) == 1 && j.Audience[0] == "" && j.HasIssuedAt && j.IssuedAt.Equal(time.Unix(0, 0))
		}},
		{`{"iss":"h","iat":1700000000.9999999999}`, true, func(j *HostJWT) bool { return j.IssuedAt.Unix() == 1700000001 }},
		{`{"iss":"h","iat":1.5e9,"exp":100000000000}`, true, nil},
		{`{"iss":"h","exp":100000000000.1}`, false, nil},
		{`{"iss":"h\ud800"}`, true, func(j *HostJWT) bool { return j.Issuer == "h\uFFFD" }},
		{"{\"iss\":\"h\xff\"}", true, func(j *HostJWT) bool { return j.Issuer == "h\uFFFD" }},
		{`{"iss":"h","x":{"\ud800":1,"\udbff":2}}`, false, nil},
		{`{"iss":"h","x":[1e400]}`, false, nil},
		{`{"iss":"h","x":1e-400,"y":` + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + `}`, true, nil},
		{`{"iss":"h","aud":["a",""]}`, false, nil},
		{`{"iss":""}`, false, nil},
	} {
		j, err := ParseHostJWT(jwtFromJSON(hdr, tt.claims, []byte("s"), 0))
		if (err == nil) != tt.ok || err == nil && tt.check != nil && !tt.check(j) {
			t.Errorf("%s: %+v, %v", tt.claims, j, err)
		}
	}
	// Line breaks inside a segment are skipped, as the base64 decoder
	// skips them; an agent JWT refuses them.
	tok := jwtFromJSON(hdr, `{"iss":"h"}`, []byte("s"), 3)
	if _, err := ParseHostJWT(tok); err != nil {
		t.Errorf("host JWT with a line break: %v", err)
	}
}

// TestAgentJWTEdges pins readings of agent JWTs that differ from host
// JWTs' and that the reader keeps.
func TestAgentJWTEdges(t *testing.T) {
	hdr := `{"alg":"EdDSA","typ":"agent+jwt"}`
	for _, tt := range []struct {
		claims string
		ok     bool
	}{
		// Unregistered claims are not read: a duplicate inside one, or a
		// number no float64 holds, is no error.
		{`{"sub":"a","x":{"k":1,"k":2}}`, true},
		{`{"sub":"a","x":[1e400,-` + strings.Repeat("9", 300) + `]}`, true},
		{`{"sub":"a","x":1,"x":2}`, false},
		{`{"sub":"a","aud":null}`, false},
		{`{"sub":"a","iat":null}`, false},
		{`{"sub":"a","aud":["",""]}`, true},
		{`{"sub":"a","iat":253402300798.9}`, true},
		{`{"sub":"a","iat":253402300799.4}`, false},
		{`{"sub":"a","x":"\ud800"}`, false},
		{"{\"sub\":\"a\",\"x\":\"\xff\"}", false},
		{`{"sub":"a","x":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`, true},
		{`{"sub":"a","x":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, false},
	} {
		_, err := parseAgentToken(jwtFromJSON(hdr, tt.claims, []byte("s"), 0))
		if (err == nil) != tt.ok {
			t.Errorf("%.60s: %v, want accepted %v", tt.claims, err, tt.ok)
		}
	}
	if _, err := parseAgentToken(jwtFromJSON(hdr, `{"sub":"a"}`, []byte("s"), 3)); err == nil {
		t.Error("agent JWT with a line break accepted")
	}
	tok, err := parseAgentToken(jwtFromJSON(hdr, `{"sub":"a","iat":1700000000.9999999999,"aud":[]}`, []byte("s"), 0))
	if err != nil || tok.claims.IssuedAt != time.Unix(1700000001, 0).UTC() || tok.claims.Audience == nil {
		t.Errorf("%+v, %v", tok, err)
	}
}
