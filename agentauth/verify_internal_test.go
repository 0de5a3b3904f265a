package agentauth

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// This file keeps the way the verifier read agent JWTs before it had its
// own parser, encoding/json for the header and the claims and go-jose for
// the JWS, as the reference the parser is checked against, and exports
// both to the black-box tests.

// TokenView is what the differential tests compare of a parsed agent JWT.
type TokenView struct {
	KID       string
	Claims    Claims
	HasIss    bool
	HasIat    bool
	HasExp    bool
	HasNbf    bool
	NotBefore time.Time
	// Verifies reports whether the signature verifies with the key the
	// token was parsed against.
	Verifies bool
}

// ParseTokenView parses token as Verifier.Session does and checks its
// signature with pub as Session does for an inline key.
func ParseTokenView(token string, pub ed25519.PublicKey) (TokenView, error) {
	sc := getScratch()
	defer putScratch(sc)
	if err := sc.parse(token); err != nil {
		return TokenView{}, err
	}
	return sc.tok.view(ed25519.Verify(pub, sc.signingInput, sc.sig)), nil
}

// ReferenceTokenView parses token and checks its signature with pub the
// way the verifier did before it parsed tokens itself.
func ReferenceTokenView(token string, pub ed25519.PublicKey) (TokenView, error) {
	tok, jws, err := refParse(token)
	if err != nil {
		return TokenView{}, err
	}
	payload, err := jws.Verify(pub)
	return tok.view(err == nil && string(payload) == tok.payload), nil
}

// DeliberateParseDifference reports whether the header or the payload of
// token holds what the parser refuses on purpose and encoding/json
// accepts: a surrogate escape (the parser refuses those that are not half
// of a pair) or nesting deeper than jsonvalue.MaxDepth. It may say yes for a
// token the parser accepts; the differential tests only ask it about
// tokens the parser refused.
func DeliberateParseDifference(token string) bool {
	segs := strings.Split(token, ".")
	for _, seg := range segs[:min(2, len(segs))] {
		text, err := b64.DecodeString(seg)
		if err != nil {
			continue
		}
		if surrogateEscape.Match(text) || jsonDepth(text) > jsonvalue.MaxDepth {
			return true
		}
	}
	return false
}

var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F][0-9a-fA-F]{2}`)

// jsonDepth returns the deepest nesting of arrays and objects in text,
// outside strings.
func jsonDepth(text []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

func (t *agentToken) view(verifies bool) TokenView {
	return TokenView{
		KID: t.kid, Claims: t.claims,
		HasIss: t.hasIss, HasIat: t.hasIat, HasExp: t.hasExp, HasNbf: t.hasNbf,
		NotBefore: t.nbf, Verifies: verifies,
	}
}

// refParse is the verifier's former parsing: the syntax checks, the header
// and the claims read through encoding/json, then go-jose's parse, which
// Session ran before looking the agent up.
func refParse(token string) (*agentToken, *jose.JSONWebSignature, error) {
	if len(token) > MaxTokenBytes {
		return nil, nil, errors.New("token too large")
	}
	h, rest, ok1 := strings.Cut(token, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") {
		return nil, nil, errors.New("not three segments")
	}
	if h == "" || p == "" || s == "" {
		return nil, nil, errors.New("empty segment")
	}
	if strings.IndexFunc(token, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) >= 0 {
		return nil, nil, errors.New("byte outside the alphabet")
	}
	header, err := b64.DecodeString(h)
	if err != nil {
		return nil, nil, err
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return nil, nil, err
	}
	if _, err := b64.DecodeString(s); err != nil {
		return nil, nil, err
	}
	kid, err := refParseHeader(header)
	if err != nil {
		return nil, nil, err
	}
	tok := &agentToken{kid: kid, payload: string(payload)}
	if err := tok.refParseClaims(payload); err != nil {
		return nil, nil, err
	}
	if tok.claims.Subject == "" {
		return nil, nil, errors.New("no sub")
	}
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, nil, err
	}
	return tok, jws, nil
}

func refParseHeader(header []byte) (string, error) {
	if !utf8.Valid(header) {
		return "", errors.New("not UTF-8")
	}
	m, err := decodeObject(header)
	if err != nil {
		return "", err
	}
	for name := range m {
		switch name {
		case "alg", "typ", "kid":
		default:
			return "", fmt.Errorf("member %q is not allowed", name)
		}
	}
	typ, err := optString(m, "typ")
	if err != nil {
		return "", err
	}
	if typ != agentcap.TypeAgentJWT {
		return "", fmt.Errorf("typ is %q", typ)
	}
	alg, err := optString(m, "alg")
	if err != nil {
		return "", err
	}
	if alg != string(jose.EdDSA) {
		return "", fmt.Errorf("alg is %q", alg)
	}
	return optString(m, "kid")
}

func (t *agentToken) refParseClaims(payload []byte) error {
	if !utf8.Valid(payload) {
		return errors.New("not UTF-8")
	}
	m, err := decodeObject(payload)
	if err != nil {
		return err
	}
	c := &t.claims
	if c.Subject, err = optString(m, "sub"); err != nil {
		return err
	}
	_, t.hasIss = m["iss"]
	if c.Issuer, err = optString(m, "iss"); err != nil {
		return err
	}
	if c.ID, err = optString(m, "jti"); err != nil {
		return err
	}
	if raw, ok := m["aud"]; ok {
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			c.Audience = []string{s}
		} else if c.Audience, err = parseStringArray(raw); err != nil {
			return err
		}
	}
	if c.IssuedAt, t.hasIat, err = refNumericDate(m, "iat"); err != nil {
		return err
	}
	if c.ExpiresAt, t.hasExp, err = refNumericDate(m, "exp"); err != nil {
		return err
	}
	if t.nbf, t.hasNbf, err = refNumericDate(m, "nbf"); err != nil {
		return err
	}
	if raw, ok := m["capabilities"]; ok {
		if c.Capabilities, err = parseStringArray(raw); err != nil {
			return err
		}
	}
	return nil
}

func refNumericDate(m map[string]json.RawMessage, name string) (time.Time, bool, error) {
	raw, ok := m[name]
	if !ok {
		return time.Time{}, false, nil
	}
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return time.Time{}, false, fmt.Errorf("%q is not a number", name)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > maxNumericDate {
		return time.Time{}, false, fmt.Errorf("%q is out of range", name)
	}
	sec := math.Floor(f)
	nsec := math.Round((f - sec) * 1e9)
	return time.Unix(int64(sec), int64(nsec)).UTC(), true, nil
}

// diffParsers compares the parser with the reference on token, signed for
// pub, and describes any disagreement.
func diffParsers(token string, pub ed25519.PublicKey) string {
	got, err := ParseTokenView(token, pub)
	want, refErr := ReferenceTokenView(token, pub)
	switch {
	case err == nil && refErr != nil:
		return fmt.Sprintf("parser accepts, reference refuses: %v", refErr)
	case err != nil && refErr == nil:
		if DeliberateParseDifference(token) {
			return ""
		}
		return fmt.Sprintf("parser refuses (%v), reference accepts", err)
	case err != nil:
		return ""
	}
	return cmp.Diff(want, got)
}

// fuzzKey signs the tokens of FuzzTokenParser.
var fuzzKey = ed25519.NewKeyFromSeed([]byte("agentauth: token parser fuzzing."))

func fuzzToken(header, payload string, flip uint8) string {
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	sig := ed25519.Sign(fuzzKey, []byte(in))
	if flip != 0 {
		sig[int(flip)%len(sig)] ^= 1 << (flip % 8)
	}
	return in + "." + enc.EncodeToString(sig)
}

// FuzzTokenParser checks the parser against the reference on signed
// tokens made of arbitrary header and payload text: both accept or both
// refuse (except where the parser is stricter on purpose), and what both
// accept they read alike, signature included.
func FuzzTokenParser(f *testing.F) {
	const hdr = `{"alg":"EdDSA","typ":"agent+jwt","kid":"k1"}`
	const claims = `{"sub":"agt_1","aud":"https://a.example","iat":1772366400,"exp":1772366460,"jti":"j1","capabilities":["x"]}`
	seeds := []struct {
		header, payload string
		flip            uint8
	}{
		{hdr, claims, 0},
		{hdr, claims, 9},
		{`{"alg":"EdDSA","typ":"agent+jwt"}`, `{"sub":"a","aud":["x","y"],"iat":1.5,"exp":1e3,"nbf":-0,"iss":"h"}`, 0},
		{` { "typ" : "agent\u002bjwt" , "\u0061lg" : "EdDSA" } `, `{"sub":"\u00e9\ud83d\ude00","x":{"a":[1,{"b":null}],"a":true},"jti":"\/"}`, 0},
		{hdr, `{"sub":"a","x":"\ud800"}`, 0},
		{hdr, `{"sub":"a","sub":"b"}`, 0},
		{hdr, `{"sub":"a"} x`, 0},
		{hdr, `{"sub":"a","iat":01}`, 0},
		{hdr, `{"sub":"a","iat":"1"}`, 0},
		{hdr, `{"sub":"a","capabilities":[]}`, 0},
		{hdr, `{"sub":"a","capabilities":null}`, 0},
		{`{"alg":"EdDSA","typ":"agent+jwt","jwk":{}}`, `{"sub":"a"}`, 0},
		{`{"alg":"none","typ":"agent+jwt"}`, `{"sub":"a"}`, 0},
		{hdr, `{"sub":"a","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":10}`, 0},
		{hdr, `{"sub":"a","n":[[[[[[[[[[]]]]]]]]]]}`, 0},
		{hdr, "{\"sub\":\"a\",\"t\":\"\t\"}", 0},
	}
	for _, s := range seeds {
		f.Add(s.header, s.payload, s.flip)
	}
	pub := fuzzKey.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, header, payload string, flip uint8) {
		if diff := diffParsers(fuzzToken(header, payload, flip), pub); diff != "" {
			t.Fatalf("header %q payload %q flip %d:\n%s", header, payload, flip, diff)
		}
	})
}

// TestTokenParserJSON pins the parser's reading of JSON details the
// reference reads the same way, and the two deliberate differences.
func TestTokenParserJSON(t *testing.T) {
	const hdr = `{"alg":"EdDSA","typ":"agent+jwt"}`
	pub := fuzzKey.Public().(ed25519.PublicKey)
	tests := []struct {
		name, header, payload string
		accept, deliberate    bool
	}{
		{"escaped header names and values", `{"\u0061lg":"Ed\u0044SA","typ":"agent\u002bjwt","kid":"\ud83d\ude00"}`, `{"sub":"a"}`, true, false},
		{"escaped claims", hdr, `{"s\u0075b":"\u00e9\"\\\/\b\f\n\r\t","jti":"\uD83D\uDE00"}`, true, false},
		{"whitespace everywhere", " \t\r\n{ \"alg\" :\"EdDSA\" , \"typ\":\"agent+jwt\" }\n", "\n{ \"sub\" : \"a\" , \"aud\" : [ \"x\" , \"y\" ] , \"capabilities\" : [ ] }\t", true, false},
		{"numbers", hdr, `{"sub":"a","iat":1772366400.25,"exp":17723664e2,"nbf":0,"x":[-0.5E-3,1e+2,0]}`, true, false},
		{"negative zero date", hdr, `{"sub":"a","iat":-0}`, true, false},
		{"negative date", hdr, `{"sub":"a","iat":-1}`, false, false},
		{"date overflows float64", hdr, `{"sub":"a","exp":1e400}`, false, false},
		{"nested duplicates skipped", hdr, `{"sub":"a","x":{"k":1,"k":2}}`, true, false},
		{"many unregistered claims", hdr, `{"sub":"a","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10}`, true, false},
		{"duplicate among many", hdr, `{"sub":"a","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"a":10}`, false, false},
		{"duplicate escaped name", hdr, `{"sub":"a","\u0073ub":"b"}`, false, false},
		{"duplicate kid", `{"alg":"EdDSA","typ":"agent+jwt","kid":"a","kid":"a"}`, `{"sub":"a"}`, false, false},
		{"null kid", `{"alg":"EdDSA","typ":"agent+jwt","kid":null}`, `{"sub":"a"}`, false, false},
		{"empty sub", hdr, `{"sub":""}`, false, false},
		{"trailing comma", hdr, `{"sub":"a",}`, false, false},
		{"array trailing comma", hdr, `{"sub":"a","x":[1,]}`, false, false},
		{"leading zero", hdr, `{"sub":"a","x":01}`, false, false},
		{"bad literal", hdr, `{"sub":"a","x":nul}`, false, false},
		{"literal with a tail", hdr, `{"sub":"a","x":truex}`, false, false},
		{"bad escape", hdr, `{"sub":"a","x":"\x"}`, false, false},
		{"short unicode escape", hdr, `{"sub":"a","x":"\u12"}`, false, false},
		{"raw control character", hdr, "{\"sub\":\"a\",\"x\":\"\x01\"}", false, false},
		{"unterminated string", hdr, `{"sub":"a","x":"abc`, false, false},
		{"unterminated object", hdr, `{"sub":"a"`, false, false},
		{"invalid UTF-8", hdr, "{\"sub\":\"a\",\"x\":\"\xff\"}", false, false},
		{"not an object", hdr, `"sub"`, false, false},
		{"two objects", hdr, `{"sub":"a"}{}`, false, false},
		{"capabilities with null", hdr, `{"sub":"a","capabilities":["x",null]}`, false, false},
		{"aud object", hdr, `{"sub":"a","aud":{}}`, false, false},
		{"lone high surrogate", hdr, `{"sub":"a","x":"\ud800"}`, false, true},
		{"lone low surrogate", hdr, `{"sub":"a","x":"\udc00"}`, false, true},
		{"high surrogate then a letter", hdr, `{"sub":"a","x":"\ud800\u0041"}`, false, true},
		{"lone surrogate in sub", hdr, `{"sub":"\udfff"}`, false, true},
		{"nesting at the limit", hdr, `{"sub":"a","x":` + strings.Repeat("[", jsonvalue.MaxDepth-1) + strings.Repeat("]", jsonvalue.MaxDepth-1) + `}`, true, false},
		{"nesting beyond the limit", hdr, `{"sub":"a","x":` + strings.Repeat("[", jsonvalue.MaxDepth) + strings.Repeat("]", jsonvalue.MaxDepth) + `}`, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := fuzzToken(tt.header, tt.payload, 0)
			_, err := ParseTokenView(token, pub)
			if (err == nil) != tt.accept {
				t.Fatalf("parser error = %v, want accept = %v", err, tt.accept)
			}
			_, refErr := ReferenceTokenView(token, pub)
			if refAccepts := refErr == nil; refAccepts != (tt.accept || tt.deliberate) {
				t.Errorf("reference error = %v; the test expects it to accept = %v", refErr, tt.accept || tt.deliberate)
			}
			if got := DeliberateParseDifference(token); tt.deliberate && !got {
				t.Errorf("DeliberateParseDifference = false for a deliberate difference")
			}
			if diff := diffParsers(token, pub); diff != "" {
				t.Errorf("parser and reference disagree:\n%s", diff)
			}
		})
	}
}

// TestParsedClaimsOwnTheirMemory shows that a token's claims keep no reference to
// the pooled buffer it was decoded into: a later parse reusing the buffer
// leaves them unchanged.
func TestParsedClaimsOwnTheirMemory(t *testing.T) {
	const hdr = `{"alg":"EdDSA","typ":"agent+jwt"}`
	first, err := parseAgentToken(fuzzToken(hdr, `{"sub":"agt_first","jti":"j\u0031","aud":["a1"],"capabilities":["c1"]}`, 0))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := parseAgentToken(fuzzToken(hdr, `{"sub":"agt_other","jti":"j2","aud":["a2"],"capabilities":["c2"]}`, 0)); err != nil {
			t.Fatal(err)
		}
	}
	want := Claims{Subject: "agt_first", ID: "j1", Audience: []string{"a1"}, Capabilities: []string{"c1"}}
	if diff := cmp.Diff(want, first.claims); diff != "" {
		t.Errorf("claims changed (-want +got):\n%s", diff)
	}
}
