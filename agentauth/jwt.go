package agentauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// This file reads both kinds of JWT the package verifies, agent JWTs and
// host JWTs: the compact serialization, the protected header and the
// claims, the JSON through internal/jsonvalue's Reader. The two kinds
// share the grammar and the header, and keep the few decisions in which
// they have always differed, which jwtKind names; their claims differ,
// and are read by agentToken.readClaims and HostJWT.readClaims.

// jwtKind holds what differs between the reading of agent and host JWTs.
type jwtKind struct {
	// typ is the header's typ.
	typ string
	// text is how the header and the claims are read. Both kinds take
	// numbers of any size, the token's size bounding them. Agent JWTs
	// read strings strictly, nest at most jsonvalue.MaxDepth levels and
	// refuse duplicate members at the top level of the claims, the only
	// members read; host JWTs read strings as encoding/json does (a byte
	// outside UTF-8, or a lone surrogate escape, reads as U+FFFD), nest
	// as deep as the token's size allows and refuse duplicates at any
	// depth, since their claims are handed on raw.
	text jsonvalue.Rules
	// lineBreaks lets a segment hold CR and LF, which the base64 decoder
	// skips; otherwise they are refused like every other byte outside the
	// base64url alphabet, so that the bytes parsed are exactly the bytes
	// signed.
	lineBreaks bool
	// float64Numbers refuses claims holding a number that does not
	// convert to a float64 (one beyond ±1.8e308).
	float64Numbers bool
}

var (
	agentJWT = &jwtKind{
		typ:  agentcap.TypeAgentJWT,
		text: jsonvalue.Rules{AnyNumber: true, OuterKeysOnly: true},
	}
	hostJWT = &jwtKind{
		typ:            agentcap.TypeHostJWT,
		text:           jsonvalue.Rules{MaxDepth: jsonvalue.ScanMaxDepth, AnyNumber: true, Replace: true},
		lineBreaks:     true,
		float64Numbers: true,
	}
)

// algEdDSA is the only JWS algorithm either kind of JWT may name.
const algEdDSA = "EdDSA"

var b64 = base64.RawURLEncoding.Strict()

// segments checks that token is at most MaxTokenBytes of JWS compact
// serialization, three non-empty segments, and returns the offsets of its
// two dots.
func (k *jwtKind) segments(token string) (d1, d2 int, err error) {
	if len(token) > MaxTokenBytes {
		return 0, 0, fmt.Errorf("token is %d bytes, limit %d", len(token), MaxTokenBytes)
	}
	d1 = strings.IndexByte(token, '.')
	d2 = -1
	if d1 >= 0 {
		if i := strings.IndexByte(token[d1+1:], '.'); i >= 0 {
			d2 = d1 + 1 + i
		}
	}
	if d2 < 0 || strings.IndexByte(token[d2+1:], '.') >= 0 {
		return 0, 0, errors.New("token is not a JWS compact serialization (three segments)")
	}
	n := len(token)
	if d1 == 0 || d2 == d1+1 || d2 == n-1 {
		return 0, 0, errors.New("token has an empty segment")
	}
	// The base64url decoder refuses every byte outside its alphabet but
	// CR and LF, which it skips.
	if !k.lineBreaks {
		if i := max(strings.IndexByte(token, '\r'), strings.IndexByte(token, '\n')); i >= 0 {
			return 0, 0, fmt.Errorf("token has a line break at offset %d", i)
		}
	}
	return d1, d2, nil
}

// decodedLen is how many bytes decodeSegments needs for a token of n
// bytes whose dots are at d1 and d2.
func decodedLen(n, d1, d2 int) int {
	return b64.DecodedLen(d1) + b64.DecodedLen(d2-d1-1) + b64.DecodedLen(n-d2-1)
}

// decodeSegments decodes the three segments of the token src, whose dots
// are at d1 and d2, one after the other into dst, which holds at least
// decodedLen bytes. The slices returned are cut to their length.
func decodeSegments(dst, src []byte, d1, d2 int) (header, payload, sig []byte, err error) {
	hn, err := b64.Decode(dst, src[:d1])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("header segment: %w", err)
	}
	pn, err := b64.Decode(dst[hn:], src[d1+1:d2])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("payload segment: %w", err)
	}
	sn, err := b64.Decode(dst[hn+pn:], src[d2+1:])
	if err != nil {
		return nil, nil, nil, fmt.Errorf("signature segment: %w", err)
	}
	return dst[:hn:hn], dst[hn : hn+pn : hn+pn], dst[hn+pn : hn+pn+sn : hn+pn+sn], nil
}

// readHeader reads the protected header: a JSON object whose members are
// only "alg", "typ" and "kid", each a string at most once, typ the kind's
// and alg EdDSA. Any other member ("jwk", "jku", "x5u", "x5c", "crit",
// ...) is refused, because each asks the verifier to trust something the
// token itself names. It returns the kid, "" when absent.
func (k *jwtKind) readHeader(rd *jsonvalue.Reader, header string) (kid string, err error) {
	rd.ResetText(header, k.text)
	if err := beginObject(rd); err != nil {
		return "", err
	}
	var alg, typ string
	for {
		name, more, err := rd.NextMember()
		if err != nil {
			return "", err
		}
		if !more {
			break
		}
		var dst *string
		switch name {
		case "alg":
			dst = &alg
		case "typ":
			dst = &typ
		case "kid":
			dst = &kid
		default:
			return "", fmt.Errorf("member %q is not allowed", name)
		}
		if *dst, err = readString(rd, name); err != nil {
			return "", err
		}
	}
	if err := rd.Finish(); err != nil {
		return "", err
	}
	if typ != k.typ {
		return "", fmt.Errorf("typ is %q, want %q", typ, k.typ)
	}
	if alg != algEdDSA {
		return "", fmt.Errorf("alg is %q, want %q", alg, algEdDSA)
	}
	return kid, nil
}

// beginObject enters the object that must start the document.
func beginObject(rd *jsonvalue.Reader) error {
	k, err := rd.Peek()
	if err != nil {
		return err
	}
	if k != jsonvalue.KindObject {
		return fmt.Errorf("not a JSON object but %s", k)
	}
	return rd.BeginObject()
}

// readString reads the value of member name, which must be a string; null
// is not one.
func readString(rd *jsonvalue.Reader, name string) (string, error) {
	k, err := rd.Peek()
	if err != nil {
		return "", err
	}
	if k != jsonvalue.KindString {
		return "", fmt.Errorf("%q is not a string", name)
	}
	return rd.ReadString()
}

// readStringArray reads an array of strings, refusing an empty string
// unless emptyOK. An empty array gives a non-nil empty slice: an empty
// capabilities claim allows nothing, which differs from an absent one.
func readStringArray(rd *jsonvalue.Reader, emptyOK bool) ([]string, error) {
	if k, err := rd.Peek(); err != nil || k != jsonvalue.KindArray {
		return nil, errors.New("not an array")
	}
	if err := rd.BeginArray(); err != nil {
		return nil, err
	}
	out := []string{}
	for {
		more, err := rd.NextElement()
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		if k, err := rd.Peek(); err != nil || k != jsonvalue.KindString {
			return nil, fmt.Errorf("element %d is not a string", len(out))
		}
		s, err := rd.ReadString()
		if err != nil {
			return nil, err
		}
		if s == "" && !emptyOK {
			return nil, fmt.Errorf("element %d is empty", len(out))
		}
		out = append(out, s)
	}
	// Returned here, once, the array is built on the stack and moved to
	// the heap in one allocation.
	return out, nil
}

// skipValue reads a value and drops it, checking its numbers when the
// kind asks.
func (k *jwtKind) skipValue(rd *jsonvalue.Reader) error {
	if !k.float64Numbers {
		return rd.Skip()
	}
	kind, err := rd.Peek()
	if err != nil {
		return err
	}
	switch kind {
	case jsonvalue.KindNumber:
		num, err := rd.ReadNumber()
		if err != nil {
			return err
		}
		if _, err := strconv.ParseFloat(string(num), 64); err != nil {
			return fmt.Errorf("number %.20s... is not a float64", num)
		}
		return nil
	case jsonvalue.KindObject:
		if err := rd.BeginObject(); err != nil {
			return err
		}
		for {
			_, more, err := rd.NextMember()
			if err != nil || !more {
				return err
			}
			if err := k.skipValue(rd); err != nil {
				return err
			}
		}
	case jsonvalue.KindArray:
		if err := rd.BeginArray(); err != nil {
			return err
		}
		for {
			more, err := rd.NextElement()
			if err != nil || !more {
				return err
			}
			if err := k.skipValue(rd); err != nil {
				return err
			}
		}
	}
	return rd.Skip()
}

// Agent JWTs.

// maxNumericDate is 9999-12-31T23:59:59Z, the latest date of an agent
// JWT; later dates are refused rather than overflow time arithmetic.
const maxNumericDate = 253402300799

// agentDate converts the NumericDate num of an agent JWT, a number of
// seconds since the epoch, integer or decimal, between 0 and
// maxNumericDate: its fraction is rounded to the nanosecond.
func agentDate(num string) (time.Time, bool) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || f > maxNumericDate {
		return time.Time{}, false
	}
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64(math.Round((f-sec)*1e9))).UTC(), true
}

// Registered claims of agent JWTs, as bits of a set.
const (
	claimSub uint = 1 << iota
	claimIss
	claimAud
	claimIat
	claimExp
	claimNbf
	claimJti
	claimCapabilities
)

func claimBit(name string) uint {
	switch name {
	case "sub":
		return claimSub
	case "iss":
		return claimIss
	case "aud":
		return claimAud
	case "iat":
		return claimIat
	case "exp":
		return claimExp
	case "nbf":
		return claimNbf
	case "jti":
		return claimJti
	case "capabilities":
		return claimCapabilities
	}
	return 0
}

// readClaims reads the claims of an agent JWT, the registered ones with
// their JSON types. Other claims are checked for syntax and skipped;
// whether a claim is required is decided later. Strings without escapes
// are substrings of payload.
func (t *agentToken) readClaims(rd *jsonvalue.Reader, payload string) error {
	rd.ResetText(payload, agentJWT.text)
	if err := beginObject(rd); err != nil {
		return err
	}
	for {
		name, more, err := rd.NextMember()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		if bit := claimBit(name); bit != 0 {
			err = t.readClaim(rd, bit, name)
		} else {
			err = rd.Skip()
		}
		if err != nil {
			return err
		}
	}
	return rd.Finish()
}

// readClaim reads the value of the registered claim bit, called name.
func (t *agentToken) readClaim(rd *jsonvalue.Reader, bit uint, name string) error {
	var err error
	switch bit {
	case claimSub:
		t.claims.Subject, err = readString(rd, name)
	case claimIss:
		t.hasIss = true
		t.claims.Issuer, err = readString(rd, name)
	case claimJti:
		t.claims.ID, err = readString(rd, name)
	case claimAud:
		var k jsonvalue.Kind
		if k, err = rd.Peek(); err != nil {
			break
		}
		switch k {
		case jsonvalue.KindString:
			var aud string
			aud, err = rd.ReadString()
			t.claims.Audience = []string{aud}
		case jsonvalue.KindArray:
			t.claims.Audience, err = readStringArray(rd, true)
		default:
			err = errors.New(`"aud" must be a string or an array of strings`)
		}
	case claimIat:
		t.claims.IssuedAt, err = readAgentDate(rd, name)
		t.hasIat = err == nil
	case claimExp:
		t.claims.ExpiresAt, err = readAgentDate(rd, name)
		t.hasExp = err == nil
	case claimNbf:
		t.nbf, err = readAgentDate(rd, name)
		t.hasNbf = err == nil
	case claimCapabilities:
		t.claims.Capabilities, err = readStringArray(rd, true)
	}
	if err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	return nil
}

// readAgentDate reads the NumericDate of claim name (see agentDate).
func readAgentDate(rd *jsonvalue.Reader, name string) (time.Time, error) {
	if k, err := rd.Peek(); err != nil || k != jsonvalue.KindNumber {
		return time.Time{}, fmt.Errorf("%q is not a number", name)
	}
	num, err := rd.ReadNumber()
	if err != nil {
		return time.Time{}, err
	}
	d, ok := agentDate(string(num))
	if !ok {
		return time.Time{}, fmt.Errorf("%q is not a date between 1970 and 9999: %.40s", name, num)
	}
	return d, nil
}

// Host JWTs.

// maxHostDate bounds the NumericDates of host JWTs: 1e11 seconds after
// the epoch is in the year 5138.
const maxHostDate = 1e11

// hostDate converts the NumericDate num of a host JWT, between 0 and
// maxHostDate, its fraction truncated to the nanosecond, in the local
// time zone.
func hostDate(num string) (time.Time, bool) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || f > maxHostDate {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// readHostDate reads a NumericDate of a host JWT: a number (see hostDate),
// or null, which has always read as the epoch.
func readHostDate(rd *jsonvalue.Reader, name string) (time.Time, error) {
	k, err := rd.Peek()
	if err != nil {
		return time.Time{}, err
	}
	switch k {
	case jsonvalue.KindNull:
		return time.Unix(0, 0), rd.ReadNull()
	case jsonvalue.KindNumber:
		num, err := rd.ReadNumber()
		if err != nil {
			return time.Time{}, err
		}
		if d, ok := hostDate(string(num)); ok {
			return d, nil
		}
	}
	return time.Time{}, fmt.Errorf("claim %q is not a NumericDate", name)
}

// readHostAudience reads the aud claim of a host JWT: a string, an array
// of non-empty strings, or null, which has always read as one empty
// audience (which no verifier accepts).
func readHostAudience(rd *jsonvalue.Reader) ([]string, error) {
	k, err := rd.Peek()
	if err != nil {
		return nil, err
	}
	switch k {
	case jsonvalue.KindString:
		s, err := rd.ReadString()
		return []string{s}, err
	case jsonvalue.KindNull:
		return []string{""}, rd.ReadNull()
	case jsonvalue.KindArray:
		aud, err := readStringArray(rd, false)
		if err != nil {
			return nil, fmt.Errorf(`claim "aud": %w`, err)
		}
		return aud, nil
	}
	return nil, errors.New(`claim "aud" has the wrong type`)
}

// readClaims reads the claims of a host JWT from payload: every claim
// raw into tok.Claims, and the registered ones with their types.
func (tok *HostJWT) readClaims(rd *jsonvalue.Reader, payload []byte) error {
	rd.ResetText(string(payload), hostJWT.text)
	if err := beginObject(rd); err != nil {
		return err
	}
	// The raw claims share one copy of the payload, so that they do not
	// change with tok.Payload.
	raw := append([]byte(nil), payload...)
	c := make(map[string]json.RawMessage, 8)
	for {
		name, more, err := rd.NextMember()
		if err != nil {
			return err
		}
		if !more {
			break
		}
		if _, err := rd.Peek(); err != nil {
			return err
		}
		start := rd.Offset()
		switch name {
		case "iss":
			tok.Issuer, err = readString(rd, name)
		case "jti":
			tok.ID, err = readString(rd, name)
		case "aud":
			tok.Audience, err = readHostAudience(rd)
		case "iat":
			tok.IssuedAt, err = readHostDate(rd, name)
			tok.HasIssuedAt = err == nil
		case "exp":
			tok.Expiry, err = readHostDate(rd, name)
			tok.HasExpiry = err == nil
		default:
			err = hostJWT.skipValue(rd)
		}
		if err != nil {
			return err
		}
		end := rd.Offset()
		c[name] = json.RawMessage(raw[start:end:end])
	}
	if err := rd.Finish(); err != nil {
		return err
	}
	if tok.Issuer == "" {
		return errors.New("iss is missing or not a string")
	}
	tok.Claims = c
	return nil
}

// readType returns the header's typ, as the verifiers read it (with the
// lenient rules of host JWTs), or "" when the header is not a JSON object
// whose typ is a string.
func readType(rd *jsonvalue.Reader, header string) string {
	rd.ResetText(header, hostJWT.text)
	if beginObject(rd) != nil {
		return ""
	}
	var typ string
	for {
		name, more, err := rd.NextMember()
		if err != nil {
			return ""
		}
		if !more {
			break
		}
		if name == "typ" {
			typ, err = readString(rd, name)
		} else {
			err = rd.Skip()
		}
		if err != nil {
			return ""
		}
	}
	if rd.Finish() != nil {
		return ""
	}
	return typ
}
