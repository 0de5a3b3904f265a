package agentauth

// This file keeps the readers of agent and host JWTs that the package had
// before both kinds were read by one reader (jwt.go) on internal/jsonvalue:
// the agent JWT's own JSON cursor and the host JWT's encoding/json
// decoding, as they were, as the reference the differential fuzz targets
// of jwt_diff_test.go compare the reader with. The host JWT's decoding
// used decodeObject, checkNoDuplicates and optString, which the package
// keeps for the other documents it reads (JWKS, directory, introspection
// responses), and claimBit names the agent JWT's registered claims for
// both readers.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

var oldB64 = base64.RawURLEncoding.Strict()

// oldBase64URL marks the bytes of the base64url alphabet.
var oldBase64URL = func() (t [256]bool) {
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" {
		t[c] = true
	}
	return t
}()

const oldMaxNumericDate = 253402300799

const oldMaxJSONDepth = 1000

// oldScratch is what the agent JWT reader parsed into.
type oldScratch struct {
	buf          []byte
	signingInput []byte
	sig          []byte
	tok          agentToken
}

// parse runs checks 1 and 2 of Verifier.Session and the claim parsing of
// check 3 on token, leaving the result in sc.tok and the signing input and
// signature in sc. The header and the payload are copied to the heap once,
// as one string, which the claims then share.
func (sc *oldScratch) parse(token string) error {
	if len(token) > MaxTokenBytes {
		return invalidToken(fmt.Errorf("agentauth: token is %d bytes, limit %d", len(token), MaxTokenBytes))
	}
	d1 := strings.IndexByte(token, '.')
	d2 := -1
	if d1 >= 0 {
		if i := strings.IndexByte(token[d1+1:], '.'); i >= 0 {
			d2 = d1 + 1 + i
		}
	}
	if d2 < 0 || strings.IndexByte(token[d2+1:], '.') >= 0 {
		return invalidToken(errors.New("agentauth: token is not a JWS compact serialization (three segments)"))
	}
	n := len(token)
	if d1 == 0 || d2 == d1+1 || d2 == n-1 {
		return invalidToken(errors.New("agentauth: token has an empty segment"))
	}
	// The decoder skips line breaks; the alphabet check keeps the parsed
	// bytes exactly the signed bytes.
	for i := 0; i < n; i++ {
		if c := token[i]; !oldBase64URL[c] && c != '.' {
			return invalidToken(fmt.Errorf("agentauth: token has a byte outside the base64url alphabet at offset %d", i))
		}
	}

	hl, pl, sl := oldB64.DecodedLen(d1), oldB64.DecodedLen(d2-d1-1), oldB64.DecodedLen(n-d2-1)
	need := n + hl + pl + sl
	if cap(sc.buf) < need {
		sc.buf = make([]byte, need)
	}
	buf := sc.buf[:need]
	copy(buf, token)
	hn, err := oldB64.Decode(buf[n:n+hl], buf[:d1])
	if err != nil {
		return invalidToken(fmt.Errorf("agentauth: header segment: %w", err))
	}
	pn, err := oldB64.Decode(buf[n+hn:n+hn+pl], buf[d1+1:d2])
	if err != nil {
		return invalidToken(fmt.Errorf("agentauth: payload segment: %w", err))
	}
	sigAt := n + hn + pn
	sn, err := oldB64.Decode(buf[sigAt:sigAt+sl], buf[d2+1:n])
	if err != nil {
		return invalidToken(fmt.Errorf("agentauth: signature segment: %w", err))
	}
	sc.signingInput = buf[:d2]
	sc.sig = buf[sigAt : sigAt+sn]

	text := string(buf[n:sigAt])
	t := &sc.tok
	if t.kid, err = oldParseHeader(text[:hn]); err != nil {
		return invalidToken(fmt.Errorf("agentauth: header: %w", err))
	}
	t.payload = text[hn:]
	if err := t.oldParseClaims(t.payload); err != nil {
		return invalidToken(fmt.Errorf("agentauth: claims: %w", err))
	}
	if t.claims.Subject == "" {
		return invalidToken(errors.New(`agentauth: claims: "sub" is missing or empty`))
	}
	return nil
}

// oldParseHeader checks the protected header and returns its kid.
func oldParseHeader(header string) (kid string, err error) {
	if !utf8.ValidString(header) {
		return "", errors.New("not UTF-8")
	}
	c := oldCursor{s: header}
	empty, err := c.enter('{', '}')
	if err != nil {
		return "", err
	}
	var alg, typ string
	var seen uint
	for more := !empty; more; {
		name, err := c.name(true)
		if err != nil {
			return "", err
		}
		var dst *string
		var bit uint
		switch name {
		case "alg":
			dst, bit = &alg, 1
		case "typ":
			dst, bit = &typ, 2
		case "kid":
			dst, bit = &kid, 4
		default:
			return "", fmt.Errorf("member %q is not allowed", name)
		}
		if seen&bit != 0 {
			return "", fmt.Errorf("duplicate member %q", name)
		}
		seen |= bit
		if *dst, err = c.stringValue(name); err != nil {
			return "", err
		}
		if more, err = c.next('}'); err != nil {
			return "", err
		}
	}
	if err := c.end(); err != nil {
		return "", err
	}
	if typ != agentcap.TypeAgentJWT {
		return "", fmt.Errorf("typ is %q, want %q", typ, agentcap.TypeAgentJWT)
	}
	if alg != algEdDSA {
		return "", fmt.Errorf("alg is %q, want %q", alg, algEdDSA)
	}
	return kid, nil
}

// oldParseClaims reads the registered claims with their JSON types. Other
// claims are checked for syntax and skipped; whether a claim is required
// is decided later. Strings without escapes are substrings of payload.
func (t *agentToken) oldParseClaims(payload string) error {
	if !utf8.ValidString(payload) {
		return errors.New("not UTF-8")
	}
	c := oldCursor{s: payload}
	empty, err := c.enter('{', '}')
	if err != nil {
		return err
	}
	var seen uint
	var others oldNameSet
	for more := !empty; more; {
		name, err := c.name(true)
		if err != nil {
			return err
		}
		if bit := claimBit(name); bit != 0 {
			if seen&bit != 0 {
				return fmt.Errorf("duplicate member %q", name)
			}
			seen |= bit
			err = t.oldReadClaim(&c, bit, name)
		} else {
			if !others.add(name) {
				return fmt.Errorf("duplicate member %q", name)
			}
			err = c.skip()
		}
		if err != nil {
			return err
		}
		if more, err = c.next('}'); err != nil {
			return err
		}
	}
	return c.end()
}

// oldReadClaim reads the value of the registered claim bit, called name.
func (t *agentToken) oldReadClaim(c *oldCursor, bit uint, name string) error {
	var err error
	switch bit {
	case claimSub:
		t.claims.Subject, err = c.stringValue(name)
	case claimIss:
		t.hasIss = true
		t.claims.Issuer, err = c.stringValue(name)
	case claimJti:
		t.claims.ID, err = c.stringValue(name)
	case claimAud:
		switch c.peek() {
		case '"':
			var aud string
			aud, err = c.str(true)
			t.claims.Audience = []string{aud}
		case '[':
			t.claims.Audience, err = c.stringArray()
		default:
			err = errors.New(`"aud" must be a string or an array of strings`)
		}
	case claimIat:
		t.claims.IssuedAt, err = c.numericDate(name)
		t.hasIat = err == nil
	case claimExp:
		t.claims.ExpiresAt, err = c.numericDate(name)
		t.hasExp = err == nil
	case claimNbf:
		t.nbf, err = c.numericDate(name)
		t.hasNbf = err == nil
	case claimCapabilities:
		if c.peek() != '[' {
			return fmt.Errorf("%q is not an array", name)
		}
		t.claims.Capabilities, err = c.stringArray()
	}
	if err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	return nil
}

// oldNameSet holds the names of a token's unregistered claims, to refuse
// duplicates without allocating for the few a token carries.
type oldNameSet struct {
	few  [8]string
	n    int
	many map[string]struct{}
}

// add records name and reports whether it was new.
func (s *oldNameSet) add(name string) bool {
	if s.many != nil {
		if _, dup := s.many[name]; dup {
			return false
		}
		s.many[name] = struct{}{}
		return true
	}
	for _, n := range s.few[:s.n] {
		if n == name {
			return false
		}
	}
	if s.n < len(s.few) {
		s.few[s.n] = name
		s.n++
		return true
	}
	s.many = make(map[string]struct{}, 2*len(s.few))
	for _, n := range s.few {
		s.many[n] = struct{}{}
	}
	s.many[name] = struct{}{}
	return true
}

// oldCursor reads JSON text (RFC 8259) that is known to be valid UTF-8,
// value by value, without building a tree: strings without escapes come
// back as substrings of the text, numbers as their text. Like
// internal/jsonvalue, and unlike encoding/json, it refuses a surrogate
// escape that is not half of a pair rather than decode it to U+FFFD, so
// that two different texts never read as one name or value.
type oldCursor struct {
	s     string
	i     int
	depth int
}

func (c *oldCursor) fail(what string) error {
	return fmt.Errorf("malformed JSON at offset %d: %s", c.i, what)
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (c *oldCursor) peek() byte {
	for c.i < len(c.s) {
		switch b := c.s[c.i]; b {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return b
		}
	}
	return 0
}

// enter consumes the byte that opens an object or an array and reports
// whether the container is empty, in which case its closing byte is
// consumed too.
func (c *oldCursor) enter(open, close byte) (empty bool, err error) {
	if c.peek() != open {
		return false, c.fail(fmt.Sprintf("want %q", open))
	}
	if c.depth++; c.depth > oldMaxJSONDepth {
		return false, c.fail("nesting too deep")
	}
	c.i++
	if c.peek() == close {
		c.i++
		c.depth--
		return true, nil
	}
	return false, nil
}

// next consumes what follows an element of a container: a comma, and
// reports that another element follows, or the closing byte.
func (c *oldCursor) next(close byte) (more bool, err error) {
	switch c.peek() {
	case ',':
		c.i++
		return true, nil
	case close:
		c.i++
		c.depth--
		return false, nil
	}
	return false, c.fail(fmt.Sprintf("want ',' or %q", close))
}

// name reads a member name and the colon after it. Unless decode is set,
// a name with escapes is checked but not built.
func (c *oldCursor) name(decode bool) (string, error) {
	if c.peek() != '"' {
		return "", c.fail("member name is not a string")
	}
	name, err := c.str(decode)
	if err != nil {
		return "", err
	}
	if c.peek() != ':' {
		return "", c.fail("want ':' after a member name")
	}
	c.i++
	return name, nil
}

// end checks that nothing but whitespace follows the value read.
func (c *oldCursor) end() error {
	c.peek()
	if c.i != len(c.s) {
		return c.fail("data after the value")
	}
	return nil
}

// stringValue reads a value that must be a string; null is not one.
func (c *oldCursor) stringValue(name string) (string, error) {
	if c.peek() != '"' {
		return "", fmt.Errorf("%q is not a string", name)
	}
	return c.str(true)
}

// str reads the string whose opening quote is at c.i.
func (c *oldCursor) str(decode bool) (string, error) {
	s := c.s
	start := c.i + 1
	for j := start; j < len(s); j++ {
		switch b := s[j]; {
		case b == '"':
			c.i = j + 1
			return s[start:j], nil
		case b == '\\':
			return c.escaped(start, j, decode)
		case b < 0x20:
			c.i = j
			return "", c.fail("control character in string")
		}
	}
	c.i = len(s)
	return "", c.fail("unterminated string")
}

// escaped finishes str from the first backslash, at j, building the
// unescaped string when decode is set.
func (c *oldCursor) escaped(start, j int, decode bool) (string, error) {
	s := c.s
	var out []byte
	if decode {
		out = append(make([]byte, 0, len(s)-start), s[start:j]...)
	}
	for j < len(s) {
		b := s[j]
		switch {
		case b == '"':
			c.i = j + 1
			return string(out), nil
		case b < 0x20:
			c.i = j
			return "", c.fail("control character in string")
		case b != '\\':
			if decode {
				out = append(out, b)
			}
			j++
			continue
		}
		if j+1 >= len(s) {
			break
		}
		r, n, fail, _ := jsonvalue.ReadEscape(s, j)
		switch {
		case fail == jsonvalue.EscapeBadChar:
			c.i = j
			return "", c.fail("invalid escape")
		case fail != 0:
			c.i = j
			return "", c.fail(`invalid \u escape`)
		case utf16.IsSurrogate(r):
			// Only a high surrogate directly followed by an escaped
			// low one is a character.
			pair, n2, ok := jsonvalue.ReadSurrogatePair(s, r, j+n)
			if !jsonvalue.IsHighSurrogate(r) || !ok {
				c.i = j
				return "", c.fail("invalid surrogate escape")
			}
			r = pair
			n += n2
		}
		if decode {
			out = utf8.AppendRune(out, r)
		}
		j += n
	}
	c.i = len(s)
	return "", c.fail("unterminated string")
}

// number reads a number and returns its text.
func (c *oldCursor) number() (string, error) {
	s := c.s
	start, j := c.i, c.i
	if j < len(s) && s[j] == '-' {
		j++
	}
	switch {
	case j < len(s) && s[j] == '0':
		j++
	case j < len(s) && s[j] >= '1' && s[j] <= '9':
		j = oldDigitsEnd(s, j+1)
	default:
		c.i = j
		return "", c.fail("invalid number")
	}
	if j < len(s) && s[j] == '.' {
		if j++; j >= len(s) || !oldIsDigit(s[j]) {
			c.i = j
			return "", c.fail("invalid number")
		}
		j = oldDigitsEnd(s, j)
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		if j++; j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j >= len(s) || !oldIsDigit(s[j]) {
			c.i = j
			return "", c.fail("invalid number")
		}
		j = oldDigitsEnd(s, j)
	}
	c.i = j
	return s[start:j], nil
}

func oldIsDigit(b byte) bool { return b >= '0' && b <= '9' }

func oldDigitsEnd(s string, j int) int {
	for j < len(s) && oldIsDigit(s[j]) {
		j++
	}
	return j
}

// numericDate reads a JSON number of seconds since the epoch, integer or
// decimal.
func (c *oldCursor) numericDate(name string) (time.Time, error) {
	if b := c.peek(); b != '-' && !oldIsDigit(b) {
		return time.Time{}, fmt.Errorf("%q is not a number", name)
	}
	num, err := c.number()
	if err != nil {
		return time.Time{}, err
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || f > oldMaxNumericDate {
		return time.Time{}, fmt.Errorf("%q is not a date between 1970 and 9999: %s", name, num)
	}
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64(math.Round((f-sec)*1e9))).UTC(), nil
}

// stringArray reads an array of strings. An empty array gives a non-nil empty
// slice: an empty capabilities claim allows nothing, which differs from an
// absent one.
func (c *oldCursor) stringArray() ([]string, error) {
	empty, err := c.enter('[', ']')
	if err != nil {
		return nil, err
	}
	out := []string{}
	for more := !empty; more; {
		if c.peek() != '"' {
			return nil, fmt.Errorf("element %d is not a string", len(out))
		}
		s, err := c.str(true)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		if more, err = c.next(']'); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// skip reads any value and drops it.
func (c *oldCursor) skip() error {
	switch b := c.peek(); {
	case b == '"':
		_, err := c.str(false)
		return err
	case b == '{':
		empty, err := c.enter('{', '}')
		if err != nil {
			return err
		}
		for more := !empty; more; {
			if _, err := c.name(false); err != nil {
				return err
			}
			if err := c.skip(); err != nil {
				return err
			}
			if more, err = c.next('}'); err != nil {
				return err
			}
		}
		return nil
	case b == '[':
		empty, err := c.enter('[', ']')
		if err != nil {
			return err
		}
		for more := !empty; more; {
			if err := c.skip(); err != nil {
				return err
			}
			if more, err = c.next(']'); err != nil {
				return err
			}
		}
		return nil
	case b == '-' || oldIsDigit(b):
		_, err := c.number()
		return err
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	}
	return c.fail("want a value")
}

func (c *oldCursor) literal(lit string) error {
	if !strings.HasPrefix(c.s[c.i:], lit) {
		return c.fail("invalid literal")
	}
	c.i += len(lit)
	return nil
}

// oldParseHostJWT runs the syntax, header and claim-type checks of a host
// JWT (step 1 of HostVerifier.VerifyHost): at most MaxTokenBytes, three
// base64url segments, JSON objects without duplicate members, header
// members only alg, typ and kid, typ exactly host+jwt, alg exactly
// EdDSA, iss a non-empty string, jti a string, aud a string or an array
// of non-empty strings, iat and exp NumericDates. Every failure is 401
// invalid_jwt with one message, so that a caller cannot tell which check
// failed. Nothing is verified: a provider reads the token's key claims
// from the result to find the key it then verifies with.
func oldParseHostJWT(token string) (*HostJWT, error) {
	if len(token) > MaxTokenBytes {
		return nil, invalidHostToken(errors.New("token too large"))
	}
	segs := strings.Split(token, ".")
	if len(segs) != 3 || segs[0] == "" || segs[1] == "" || segs[2] == "" {
		return nil, invalidHostToken(errors.New("not a JWS compact serialization"))
	}
	header, err := oldB64.DecodeString(segs[0])
	if err != nil {
		return nil, invalidHostToken(err)
	}
	payload, err := oldB64.DecodeString(segs[1])
	if err != nil {
		return nil, invalidHostToken(err)
	}
	sig, err := oldB64.DecodeString(segs[2])
	if err != nil {
		return nil, invalidHostToken(err)
	}
	h, err := decodeObject(header)
	if err != nil {
		return nil, invalidHostToken(err)
	}
	for name := range h {
		if name != "alg" && name != "typ" && name != "kid" {
			return nil, invalidHostToken(fmt.Errorf("header member %q is not accepted", name))
		}
	}
	typ, err1 := optString(h, "typ")
	alg, err2 := optString(h, "alg")
	kid, err3 := optString(h, "kid")
	switch {
	case err1 != nil || err2 != nil || err3 != nil:
		return nil, invalidHostToken(errors.New("header member of the wrong type"))
	case typ != agentcap.TypeHostJWT:
		return nil, invalidHostToken(fmt.Errorf("typ %q is not %s", typ, agentcap.TypeHostJWT))
	case alg != "EdDSA":
		return nil, invalidHostToken(fmt.Errorf("alg %q is not EdDSA", alg))
	}
	if err := checkNoDuplicates(payload); err != nil {
		return nil, invalidHostToken(err)
	}
	c, err := decodeObject(payload)
	if err != nil {
		return nil, invalidHostToken(err)
	}
	tok := &HostJWT{
		Kid:          kid,
		Claims:       c,
		Payload:      payload,
		SigningInput: []byte(segs[0] + "." + segs[1]),
		Signature:    sig,
	}
	if tok.Issuer, err = optString(c, "iss"); err != nil || tok.Issuer == "" {
		return nil, invalidHostToken(errors.New("iss is missing or not a string"))
	}
	if tok.ID, err = optString(c, "jti"); err != nil {
		return nil, invalidHostToken(err)
	}
	if raw, ok := c["aud"]; ok {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			tok.Audience = []string{one}
		} else if err := json.Unmarshal(raw, &tok.Audience); err != nil || slices.Contains(tok.Audience, "") {
			return nil, invalidHostToken(errors.New(`claim "aud" has the wrong type`))
		}
	}
	for _, d := range []struct {
		name string
		t    *time.Time
		has  *bool
	}{{"iat", &tok.IssuedAt, &tok.HasIssuedAt}, {"exp", &tok.Expiry, &tok.HasExpiry}} {
		raw, ok := c[d.name]
		if !ok {
			continue
		}
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
			return nil, invalidHostToken(fmt.Errorf("claim %q is not a NumericDate", d.name))
		}
		sec, frac := math.Modf(f)
		*d.t, *d.has = time.Unix(int64(sec), int64(frac*1e9)), true
	}
	return tok, nil
}

// oldTokenType returns the "typ" header of a compact JWT without verifying
// anything, or "" when the header cannot be read. It tells a host JWT
// from an agent JWT before either is verified, so that each goes to its
// own verifier; the verifier then checks typ again.
func oldTokenType(token string) string {
	head, _, ok := strings.Cut(token, ".")
	if !ok || len(head) > MaxTokenBytes {
		return ""
	}
	header, err := oldB64.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Typ string `json:"typ"`
	}
	if json.Unmarshal(header, &h) != nil {
		return ""
	}
	return h.Typ
}
