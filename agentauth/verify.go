package agentauth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentcap/agentcap/core"
)

// Limits and defaults of agent JWT verification.
const (
	// MaxTokenBytes bounds the size of an agent JWT. The published client's
	// tokens are well under 1 KiB.
	MaxTokenBytes = 8 << 10
	// DefaultSkew is the clock skew tolerated when VerifierConfig.Skew is
	// zero.
	DefaultSkew = 5 * time.Second
	// MaxSkew is the largest skew a Verifier accepts (the protocol's
	// ceiling).
	MaxSkew = 30 * time.Second
	// DefaultMaxAge is the default and largest token age and lifetime.
	DefaultMaxAge = 60 * time.Second
	// ReplayKeyPrefix starts every key a Verifier records in its
	// ReplayCache: ReplayKeyPrefix + agent id + ":" + jti.
	ReplayKeyPrefix = "agentauth:jti:"
)

// Token types of the JWT "typ" header.
const (
	TypeAgentJWT = "agent+jwt"
	TypeHostJWT  = "host+jwt"
)

// Public messages. Every failure before the signature is verified shares
// msgInvalidToken, so that a caller cannot learn whether an agent id
// exists, or which check a forged token failed.
const (
	msgInvalidToken  = "invalid agent JWT"
	msgInternal      = "internal error"
	msgExpired       = "agent JWT expired"
	msgNotYetValid   = "agent JWT issued in the future"
	msgTooOld        = "agent JWT too old"
	msgLifetime      = "agent JWT lifetime too long"
	msgAudience      = "agent JWT audience not accepted"
	msgIssuer        = "agent JWT issuer does not match the agent's host"
	msgMissingClaim  = "agent JWT lacks a required claim"
	msgReplayed      = "agent JWT already used"
	msgAgentRevoked  = "agent revoked"
	msgAgentExpired  = "agent expired"
	msgAgentPending  = "agent pending approval"
	msgAgentRejected = "agent rejected"
	msgAgentClaimed  = "agent claimed"
	msgHostRevoked   = "host revoked"
	msgHostPending   = "host pending approval"
)

// VerifierConfig configures a Verifier. Directory and Audiences are
// required; every other field has a safe default.
type VerifierConfig struct {
	// Directory resolves agents and hosts.
	Directory Directory
	// Audiences lists the URLs this location answers to. A token's "aud"
	// must exactly equal one of them (a string, or an array with one
	// matching entry).
	Audiences []string
	// Skew is the clock skew tolerated on iat and exp. Zero means
	// DefaultSkew; negative values and values above MaxSkew are
	// configuration errors.
	Skew time.Duration
	// MaxAge bounds both a token's age (now - iat, plus Skew) and its
	// lifetime (exp - iat). Zero means DefaultMaxAge, which is also the
	// largest value accepted.
	MaxAge time.Duration
	// Replay records token ids. Nil means NewMemoryReplayCache(0) with
	// the Verifier's clock; applications running several instances must
	// share one (see package redisreplay).
	Replay ReplayCache
	// KeyFetch is the policy for fetching JWKS URLs.
	KeyFetch FetchPolicy
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Verifier verifies agent JWTs against a Directory and returns their
// sessions. It is safe for concurrent use and caches one remote key set per
// JWKS URL.
type Verifier struct {
	dir       Directory
	audiences []string
	skew      time.Duration
	maxAge    time.Duration
	replay    ReplayCache
	now       func() time.Time
	keys      *keySets
}

var _ SessionSource = (*Verifier)(nil)

// NewVerifier checks cfg and returns a Verifier.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if cfg.Directory == nil {
		return nil, errors.New("agentauth: VerifierConfig.Directory is required")
	}
	if len(cfg.Audiences) == 0 {
		return nil, errors.New("agentauth: VerifierConfig.Audiences is required")
	}
	for i, a := range cfg.Audiences {
		if strings.TrimSpace(a) == "" {
			return nil, fmt.Errorf("agentauth: VerifierConfig.Audiences[%d] is empty", i)
		}
	}
	switch {
	case cfg.Skew < 0:
		return nil, fmt.Errorf("agentauth: VerifierConfig.Skew %v is negative", cfg.Skew)
	case cfg.Skew > MaxSkew:
		return nil, fmt.Errorf("agentauth: VerifierConfig.Skew %v exceeds %v", cfg.Skew, MaxSkew)
	case cfg.Skew == 0:
		cfg.Skew = DefaultSkew
	}
	switch {
	case cfg.MaxAge < 0:
		return nil, fmt.Errorf("agentauth: VerifierConfig.MaxAge %v is negative", cfg.MaxAge)
	case cfg.MaxAge > DefaultMaxAge:
		return nil, fmt.Errorf("agentauth: VerifierConfig.MaxAge %v exceeds %v", cfg.MaxAge, DefaultMaxAge)
	case cfg.MaxAge == 0:
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Replay == nil {
		cfg.Replay = NewMemoryReplayCache(0).WithClock(cfg.Now)
	}
	return &Verifier{
		dir:       cfg.Directory,
		audiences: slices.Clone(cfg.Audiences),
		skew:      cfg.Skew,
		maxAge:    cfg.MaxAge,
		replay:    cfg.Replay,
		now:       cfg.Now,
		keys:      newKeySets(cfg.KeyFetch, cfg.Now),
	}, nil
}

// Session verifies an agent JWT and returns the session it proves. Every
// error is a *core.AppError. The checks run in this order, and the first
// failure is returned:
//
//  1. Syntax: at most MaxTokenBytes, JWS compact serialization (three
//     base64url segments, no padding), UTF-8 JSON header and payload.
//     Failure: 401 invalid_jwt.
//  2. Header: only the members "alg", "typ" and "kid", no duplicates; typ
//     exactly "agent+jwt" (a host+jwt is token confusion); alg exactly
//     "EdDSA". Any other member ("jwk", "jku", "x5u", "x5c", "crit", ...)
//     is refused, because each asks the verifier to trust something the
//     token itself names. Failure: 401 invalid_jwt.
//  3. Claims syntax and lookup: the payload is a JSON object without
//     duplicate members whose registered claims have their JSON types; the
//     unverified "sub" names the agent, and the agent names its host.
//     An unknown agent or host fails exactly like a bad signature (401
//     invalid_jwt), after a signature check against a key no token uses so
//     that timing agrees as well; a directory failure is 500
//     internal_error.
//  4. Signature, with the agent's key: the inline Ed25519 JWK (the token's
//     kid selects nothing and is not checked), or the key of the agent's
//     JWKS URL whose kid is the token's kid, which must equal the agent's
//     configured kid. Failure: 401 invalid_jwt; a JWKS that cannot be
//     fetched also gives 401 invalid_jwt, with the cause kept.
//  5. Status: the agent must be active (else 403 agent_revoked,
//     agent_expired, agent_pending, agent_rejected or agent_claimed), then
//     the host (revoked or rejected: 403 host_revoked; pending: 403
//     host_pending).
//  6. Issuer: "iss" may be absent; when present it must equal the host id
//     or, for a host with an inline key, that key's RFC 7638 thumbprint.
//     Failure: 401 invalid_jwt.
//  7. Claims, all 401 invalid_jwt: "aud" matches one configured audience;
//     "iat" present and at most Skew in the future; now - iat at most
//     MaxAge + Skew; "exp" present and now before exp + Skew (the same
//     tolerance as iat, so the accepted window is at most MaxAge + 2*Skew
//     long); exp after iat and exp - iat at most MaxAge; "nbf", if
//     present, at most Skew in the future; "jti" present and non-empty.
//  8. Replay: the jti is recorded with ReplayCache.CheckAndSet under
//     ReplayKeyPrefix + agent id + ":" + jti for MaxAge + 2*Skew, which
//     covers the whole window in which the token is acceptable. It runs
//     last so that a token failing any other check does not use up its
//     id. Seen before: 401 invalid_jwt; a cache error: 500 internal_error
//     (fail closed).
//
// The capabilities claim is parsed (a string array, nil when absent) but
// not enforced here: whether it allows the requested capability, and the
// agent's grants, are checked when a capability is authorized.
func (v *Verifier) Session(ctx context.Context, token string) (*Session, error) {
	// Steps 1 and 2.
	tok, err := parseAgentToken(token)
	if err != nil {
		return nil, err
	}
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, invalidToken(fmt.Errorf("agentauth: jws: %w", err))
	}

	// Step 3.
	agent, err := v.dir.Agent(ctx, tok.claims.Subject)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			equalizeTiming(jws)
			return nil, invalidToken(fmt.Errorf("agentauth: agent %q: %w", tok.claims.Subject, err))
		}
		return nil, internal(fmt.Errorf("agentauth: directory: agent %q: %w", tok.claims.Subject, err))
	}
	host, err := v.dir.Host(ctx, agent.HostID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			equalizeTiming(jws)
			return nil, invalidToken(fmt.Errorf("agentauth: host %q of agent %q: %w", agent.HostID, agent.ID, err))
		}
		return nil, internal(fmt.Errorf("agentauth: directory: host %q: %w", agent.HostID, err))
	}

	// Step 4.
	payload, err := v.verifySignature(ctx, token, jws, tok.kid, agent)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(payload, tok.payload) {
		return nil, invalidToken(errors.New("agentauth: verified payload differs from the parsed payload"))
	}

	// Step 5.
	if err := agentStatusError(agent); err != nil {
		return nil, err
	}
	if err := hostStatusError(host); err != nil {
		return nil, err
	}

	// Step 6.
	if tok.hasIss {
		if err := checkIssuer(tok.claims.Issuer, host); err != nil {
			return nil, core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgIssuer).WithCause(err)
		}
	}

	// Step 7.
	if err := v.checkTimesAndAudience(tok); err != nil {
		return nil, err
	}

	// Step 8.
	fresh, err := v.replay.CheckAndSet(ctx, ReplayKeyPrefix+agent.ID+":"+tok.claims.ID, v.maxAge+2*v.skew)
	if err != nil {
		return nil, internal(fmt.Errorf("agentauth: replay cache: %w", err))
	}
	if !fresh {
		return nil, core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgReplayed).
			WithCause(fmt.Errorf("agentauth: jti %q of agent %q was already used", tok.claims.ID, agent.ID))
	}
	return &Session{Agent: agent, Host: host, Claims: tok.claims}, nil
}

func (v *Verifier) verifySignature(ctx context.Context, token string, jws *jose.JSONWebSignature, kid string, agent *Agent) ([]byte, error) {
	switch {
	case len(agent.PublicKey) > 0:
		k, err := parsePublicJWK(agent.PublicKey)
		if err != nil {
			return nil, internal(fmt.Errorf("agentauth: agent %q: public key: %w", agent.ID, err))
		}
		payload, err := jws.Verify(k.Key)
		if err != nil {
			return nil, invalidToken(fmt.Errorf("agentauth: signature of agent %q: %w", agent.ID, err))
		}
		return payload, nil
	case agent.JWKSURL != "":
		if kid == "" {
			return nil, invalidToken(fmt.Errorf("agentauth: agent %q uses a JWKS URL and the token has no kid", agent.ID))
		}
		if kid != agent.KID {
			return nil, invalidToken(fmt.Errorf("agentauth: token kid %q is not agent %q's kid %q", kid, agent.ID, agent.KID))
		}
		payload, err := v.keys.get(agent.JWKSURL).VerifySignature(ctx, token)
		if err != nil {
			return nil, invalidToken(fmt.Errorf("agentauth: signature of agent %q (JWKS): %w", agent.ID, err))
		}
		return payload, nil
	default:
		return nil, internal(fmt.Errorf("agentauth: agent %q has no key", agent.ID))
	}
}

// timingKey is a fixed Ed25519 public key no token is signed with.
var timingKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public()

// equalizeTiming spends on a token naming an unknown agent the time a
// signature check would take, so that response times do not tell which
// agent ids exist.
func equalizeTiming(jws *jose.JSONWebSignature) {
	_, _ = jws.Verify(timingKey)
}

func agentStatusError(a *Agent) error {
	var code, msg string
	switch a.Status {
	case StatusActive:
		return nil
	case StatusRevoked:
		code, msg = CodeAgentRevoked, msgAgentRevoked
	case StatusExpired:
		code, msg = CodeAgentExpired, msgAgentExpired
	case StatusPending:
		code, msg = CodeAgentPending, msgAgentPending
	case StatusRejected:
		code, msg = CodeAgentRejected, msgAgentRejected
	case StatusClaimed:
		code, msg = CodeAgentClaimed, msgAgentClaimed
	default:
		return internal(fmt.Errorf("agentauth: agent %q has unknown status %q", a.ID, a.Status))
	}
	return core.NewAppError(http.StatusForbidden, code, msg).
		WithCause(fmt.Errorf("agentauth: agent %q is %s", a.ID, a.Status))
}

// hostStatusError maps host states. The protocol has no host_rejected
// code; a rejected host can never act, like a revoked one.
func hostStatusError(h *Host) error {
	var code, msg string
	switch h.Status {
	case StatusActive:
		return nil
	case StatusRevoked, StatusRejected:
		code, msg = CodeHostRevoked, msgHostRevoked
	case StatusPending:
		code, msg = CodeHostPending, msgHostPending
	default:
		return internal(fmt.Errorf("agentauth: host %q has unknown status %q", h.ID, h.Status))
	}
	return core.NewAppError(http.StatusForbidden, code, msg).
		WithCause(fmt.Errorf("agentauth: host %q is %s", h.ID, h.Status))
}

func checkIssuer(iss string, host *Host) error {
	if iss == host.ID {
		return nil
	}
	if len(host.PublicKey) > 0 {
		k, err := parsePublicJWK(host.PublicKey)
		if err != nil {
			return fmt.Errorf("agentauth: host %q: public key: %w", host.ID, err)
		}
		tp, err := jwkThumbprint(k)
		if err != nil {
			return fmt.Errorf("agentauth: host %q: thumbprint: %w", host.ID, err)
		}
		if iss == tp {
			return nil
		}
		return fmt.Errorf("agentauth: iss %q is neither host id %q nor its key thumbprint %q", iss, host.ID, tp)
	}
	return fmt.Errorf("agentauth: iss %q is not host id %q", iss, host.ID)
}

func (v *Verifier) checkTimesAndAudience(tok *agentToken) error {
	c := &tok.claims
	if !audienceMatches(c.Audience, v.audiences) {
		return core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgAudience).
			WithCause(fmt.Errorf("agentauth: aud %q matches none of %q", c.Audience, v.audiences))
	}
	now := v.now()
	switch {
	case !tok.hasIat:
		return missingClaim("iat")
	case !tok.hasExp:
		return missingClaim("exp")
	case c.ID == "":
		return missingClaim("jti")
	}
	if c.IssuedAt.After(now.Add(v.skew)) {
		return core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgNotYetValid).
			WithCause(fmt.Errorf("agentauth: iat %v is more than %v after now %v", c.IssuedAt, v.skew, now))
	}
	if age := now.Sub(c.IssuedAt); age > v.maxAge+v.skew {
		return core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgTooOld).
			WithCause(fmt.Errorf("agentauth: token age %v exceeds %v", age, v.maxAge+v.skew))
	}
	if !now.Before(c.ExpiresAt.Add(v.skew)) {
		return core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgExpired).
			WithCause(fmt.Errorf("agentauth: exp %v passed (now %v, skew %v)", c.ExpiresAt, now, v.skew))
	}
	if life := c.ExpiresAt.Sub(c.IssuedAt); life <= 0 || life > v.maxAge {
		return core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgLifetime).
			WithCause(fmt.Errorf("agentauth: exp - iat is %v, must be in (0, %v]", life, v.maxAge))
	}
	if tok.hasNbf && tok.nbf.After(now.Add(v.skew)) {
		return core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgNotYetValid).
			WithCause(fmt.Errorf("agentauth: nbf %v is more than %v after now %v", tok.nbf, v.skew, now))
	}
	return nil
}

func audienceMatches(aud, accepted []string) bool {
	for _, a := range aud {
		if slices.Contains(accepted, a) {
			return true
		}
	}
	return false
}

func missingClaim(name string) error {
	return core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgMissingClaim).
		WithCause(fmt.Errorf("agentauth: claim %q is missing or empty", name))
}

func invalidToken(cause error) error {
	return core.NewAppError(http.StatusUnauthorized, CodeInvalidJWT, msgInvalidToken).WithCause(cause)
}

func internal(cause error) error {
	return core.NewAppError(http.StatusInternalServerError, CodeInternalError, msgInternal).WithCause(cause)
}

// agentToken is an agent JWT after the syntax, header and claim-type
// checks, before its signature is verified.
type agentToken struct {
	kid     string
	payload []byte
	claims  Claims
	hasIss  bool
	hasIat  bool
	hasExp  bool
	hasNbf  bool
	nbf     time.Time
}

var b64 = base64.RawURLEncoding.Strict()

// parseAgentToken runs checks 1 and 2 of Verifier.Session and the claim
// parsing of check 3.
func parseAgentToken(token string) (*agentToken, error) {
	if len(token) > MaxTokenBytes {
		return nil, invalidToken(fmt.Errorf("agentauth: token is %d bytes, limit %d", len(token), MaxTokenBytes))
	}
	h, rest, ok1 := strings.Cut(token, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") {
		return nil, invalidToken(errors.New("agentauth: token is not a JWS compact serialization (three segments)"))
	}
	if h == "" || p == "" || s == "" {
		return nil, invalidToken(errors.New("agentauth: token has an empty segment"))
	}
	// The decoder skips line breaks; the alphabet check keeps the parsed
	// bytes exactly the signed bytes.
	if i := strings.IndexFunc(token, notTokenChar); i >= 0 {
		return nil, invalidToken(fmt.Errorf("agentauth: token has a byte outside the base64url alphabet at offset %d", i))
	}
	header, err := b64.DecodeString(h)
	if err != nil {
		return nil, invalidToken(fmt.Errorf("agentauth: header segment: %w", err))
	}
	payload, err := b64.DecodeString(p)
	if err != nil {
		return nil, invalidToken(fmt.Errorf("agentauth: payload segment: %w", err))
	}
	if _, err := b64.DecodeString(s); err != nil {
		return nil, invalidToken(fmt.Errorf("agentauth: signature segment: %w", err))
	}
	kid, err := parseHeader(header)
	if err != nil {
		return nil, invalidToken(fmt.Errorf("agentauth: header: %w", err))
	}
	tok := &agentToken{kid: kid, payload: payload}
	if err := tok.parseClaims(payload); err != nil {
		return nil, invalidToken(fmt.Errorf("agentauth: claims: %w", err))
	}
	if tok.claims.Subject == "" {
		return nil, invalidToken(errors.New(`agentauth: claims: "sub" is missing or empty`))
	}
	return tok, nil
}

func notTokenChar(r rune) bool {
	return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
}

// parseHeader checks the protected header and returns its kid.
func parseHeader(header []byte) (string, error) {
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
	if typ != TypeAgentJWT {
		return "", fmt.Errorf("typ is %q, want %q", typ, TypeAgentJWT)
	}
	alg, err := optString(m, "alg")
	if err != nil {
		return "", err
	}
	if alg != string(jose.EdDSA) {
		return "", fmt.Errorf("alg is %q, want %q", alg, jose.EdDSA)
	}
	return optString(m, "kid")
}

// parseClaims decodes the registered claims with their JSON types. Other
// claims are ignored; whether a claim is required is decided later.
func (t *agentToken) parseClaims(payload []byte) error {
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
		if c.Audience, err = parseAudience(raw); err != nil {
			return err
		}
	}
	if c.IssuedAt, t.hasIat, err = optNumericDate(m, "iat"); err != nil {
		return err
	}
	if c.ExpiresAt, t.hasExp, err = optNumericDate(m, "exp"); err != nil {
		return err
	}
	if t.nbf, t.hasNbf, err = optNumericDate(m, "nbf"); err != nil {
		return err
	}
	if raw, ok := m["capabilities"]; ok {
		if c.Capabilities, err = parseStringArray(raw); err != nil {
			return fmt.Errorf(`"capabilities": %w`, err)
		}
	}
	return nil
}

func parseAudience(raw json.RawMessage) ([]string, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf(`"aud": %w`, err)
		}
		return []string{s}, nil
	}
	aud, err := parseStringArray(raw)
	if err != nil {
		return nil, fmt.Errorf(`"aud" must be a string or an array of strings: %w`, err)
	}
	return aud, nil
}

// parseStringArray accepts a JSON array of strings, and returns a non-nil
// slice even for an empty array: an empty capabilities claim allows
// nothing, which differs from an absent one.
func parseStringArray(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, errors.New("not an array")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		if len(it) == 0 || it[0] != '"' {
			return nil, fmt.Errorf("element %d is not a string", i)
		}
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// maxNumericDate is 9999-12-31T23:59:59Z; later dates are refused rather
// than overflow time arithmetic.
const maxNumericDate = 253402300799

// optNumericDate reads a JSON number of seconds since the epoch, integer or
// decimal.
func optNumericDate(m map[string]json.RawMessage, name string) (time.Time, bool, error) {
	raw, ok := m[name]
	if !ok {
		return time.Time{}, false, nil
	}
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return time.Time{}, false, fmt.Errorf("%q is not a number", name)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > maxNumericDate {
		return time.Time{}, false, fmt.Errorf("%q is not a date between 1970 and 9999: %s", name, raw)
	}
	sec := math.Floor(f)
	nsec := math.Round((f - sec) * 1e9)
	return time.Unix(int64(sec), int64(nsec)).UTC(), true, nil
}

// optString returns the string member name of m, "" when absent. A member
// of another JSON type is an error; so is null, which a string claim never
// is in this protocol.
func optString(m map[string]json.RawMessage, name string) (string, error) {
	raw, ok := m[name]
	if !ok {
		return "", nil
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%q is not a string", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%q: %w", name, err)
	}
	return s, nil
}

// decodeObject decodes one JSON object into its members, refusing
// duplicate member names (which different parsers resolve differently)
// and anything after the object. Member values are kept raw.
func decodeObject(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	m := make(map[string]json.RawMessage, 8)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("malformed JSON: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, errors.New("malformed JSON: member name is not a string")
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("duplicate member %q", name)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("malformed JSON in member %q: %w", name, err)
		}
		m[name] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed JSON: data after the object")
	}
	return m, nil
}

// checkNoDuplicates walks a JSON value and refuses duplicate member names
// at any depth.
func checkNoDuplicates(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object bool
		seen   map[string]struct{}
		expect bool // next token in this object is a member name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("malformed JSON: %w", err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			name := tok.(string)
			if _, dup := top.seen[name]; dup {
				return fmt.Errorf("duplicate member %q", name)
			}
			top.seen[name] = struct{}{}
			top.expect = false
			continue
		}
		if top != nil && top.object {
			top.expect = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, seen: map[string]struct{}{}, expect: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}
