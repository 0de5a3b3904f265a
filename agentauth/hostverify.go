package agentauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/internal/jsonvalue"
)

// HostReplayKeyPrefix starts every key recorded in a ReplayCache for a
// host JWT, as ReplayKey(HostReplayKeyPrefix, iss, jti). Agent JWTs use
// ReplayKeyPrefix, so the two never collide, and a provider and a
// resource server sharing one cache spend a host JWT once between them.
const HostReplayKeyPrefix = "agentauth:host-jti:"

// Public messages of host JWT verification. Every failure before the
// signature is verified shares msgInvalidHostToken, so that a caller
// cannot probe which hosts exist.
const (
	msgInvalidHostToken = "invalid host JWT"
	msgHostExpired      = "host JWT expired"
	msgHostNotYetValid  = "host JWT issued in the future"
	msgHostTooOld       = "host JWT too old"
	msgHostLifetime     = "host JWT lifetime too long"
	msgHostAudience     = "host JWT audience not accepted"
	msgHostReplayed     = "host JWT already used"
)

// HostSource verifies host JWTs (typ host+jwt) presented to list and
// describe capabilities (protocol §5.2, §5.2.1) and returns the host each
// one proves. Errors are *agentcap.Error values in the protocol's codes.
//
// The host returned is the caller's to read, never to change. A pending
// host is returned without its user: until it is approved, nobody's
// capabilities are its to see.
type HostSource interface {
	VerifyHost(ctx context.Context, token string) (*Host, error)
}

// HostKeyDirectory is a Directory that can also find a host by the RFC
// 7638 thumbprint of its current key, which is what a host JWT's "iss"
// names (protocol §4.2). A HostVerifier over a Directory without it finds
// hosts by id alone (an "iss" equal to the host id). MemoryDirectory and
// the stores of package agentauth/store implement it.
type HostKeyDirectory interface {
	Directory
	// HostByKeyThumbprint returns the host whose current key has the
	// thumbprint, or an error wrapping ErrNotFound.
	HostByKeyThumbprint(ctx context.Context, thumbprint string) (*Host, error)
}

// HostVerifierConfig configures a HostVerifier. Directory and Audiences
// are required; every other field has a safe default, as in
// VerifierConfig.
type HostVerifierConfig struct {
	// Directory resolves hosts: by id, and by key thumbprint when it is a
	// HostKeyDirectory.
	Directory Directory
	// Audiences are the "aud" values accepted: the issuer URL, which is
	// what a host JWT names (protocol §4.2).
	Audiences []string
	// Skew, MaxAge, Replay, KeyFetch and Now are as in VerifierConfig.
	Skew     time.Duration
	MaxAge   time.Duration
	Replay   ReplayCache
	KeyFetch FetchPolicy
	Now      func() time.Time
}

// HostVerifier verifies host JWTs against a Directory: the host JWT
// checks of protocol §4.5.1 for a known host, as a provider runs them on
// registration. It is safe for concurrent use.
type HostVerifier struct {
	v *Verifier
}

var _ HostSource = (*HostVerifier)(nil)

// NewHostVerifier checks cfg and returns a HostVerifier.
func NewHostVerifier(cfg HostVerifierConfig) (*HostVerifier, error) {
	v, err := NewVerifier(VerifierConfig{Directory: cfg.Directory, Audiences: cfg.Audiences, Skew: cfg.Skew,
		MaxAge: cfg.MaxAge, Replay: cfg.Replay, KeyFetch: cfg.KeyFetch, Now: cfg.Now})
	if err != nil {
		return nil, fmt.Errorf("agentauth: host verifier: %w", err)
	}
	return &HostVerifier{v: v}, nil
}

// HostJWT is a host JWT after ParseHostJWT checked its syntax, header and
// claim types, before its signature is verified: what a verifier reads
// to find the host and its key.
type HostJWT struct {
	// Kid is the header's kid ("" when absent).
	Kid string
	// Issuer and ID are the iss and jti claims; Issuer is never empty.
	Issuer, ID string
	// Audience is aud, a string or an array of strings.
	Audience []string
	// IssuedAt and Expiry are iat and exp, when HasIssuedAt and HasExpiry.
	IssuedAt, Expiry       time.Time
	HasIssuedAt, HasExpiry bool
	// Claims are all the claims, raw, for the ones the caller reads
	// itself (host_public_key, agent_public_key, ...).
	Claims map[string]json.RawMessage
	// Payload is the decoded payload; SigningInput and Signature are what
	// the signature check needs.
	Payload, SigningInput, Signature []byte
}

func invalidHostToken(cause error) error {
	return agentcap.NewError(agentcap.CodeInvalidJWT, msgInvalidHostToken).WithCause(cause)
}

// VerifyHost verifies a host JWT and returns its host. The checks run in
// this order, the first failure answering (all 401 invalid_jwt unless
// said otherwise):
//
//  1. Syntax: at most MaxTokenBytes, three base64url segments, JSON
//     objects without duplicate members; header members only alg, typ
//     and kid; typ exactly host+jwt (an agent+jwt here is token
//     confusion); alg exactly EdDSA; iss a non-empty string, the other
//     registered claims of their JSON types.
//  2. aud: one of the configured audiences.
//  3. The host: by iss as its id, else, for a HostKeyDirectory, by iss
//     as the thumbprint of its current key. An unknown host fails like a
//     bad signature, after as long; a directory failure is 503
//     temporarily_unavailable (see Unavailable).
//  4. The signature, with the host's inline key, or the key of its JWKS
//     URL that the header's kid names. The JWKS of a revoked or rejected
//     host is never fetched: only keys already cached are tried, and a
//     token none verifies is 401 invalid_jwt.
//  5. iss: the host id, the thumbprint of the host's inline key, or the
//     thumbprint the directory found the host by.
//  6. iat, exp and lifetime, as for agent JWTs (see Verifier.Session):
//     iat at most Skew ahead, age at most MaxAge + Skew, 0 < exp - iat
//     <= MaxAge, now before exp with no skew; jti present.
//  7. jti replay, recorded last under ReplayKey(HostReplayKeyPrefix, iss,
//     jti), so that a token failing another check does not use up its id,
//     and charged to the host when the cache is an OwnerReplayCache (429
//     rate_limited past the host's share); a cache error is 503
//     temporarily_unavailable.
//  8. Status: revoked or rejected is 403 host_revoked; a pending host is
//     returned without its user.
func (hv *HostVerifier) VerifyHost(ctx context.Context, token string) (*Host, error) {
	v := hv.v
	tok, err := ParseHostJWT(token)
	if err != nil {
		return nil, err
	}
	if !audienceMatches(tok.Audience, v.audiences) {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgHostAudience).
			WithCause(fmt.Errorf("agentauth: host JWT aud %q", tok.Audience))
	}
	host, byThumb, err := hv.lookup(ctx, tok.Issuer)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			_ = timingKey.verify(tok.SigningInput, tok.Signature)
			return nil, invalidHostToken(err)
		}
		return nil, Unavailable(msgDirectoryDown, fmt.Errorf("agentauth: directory: host %q: %w", tok.Issuer, err))
	}
	var thumb string
	switch {
	case len(host.PublicKey) > 0:
		k, err := v.inline.get(host.PublicKey)
		if errors.Is(err, errNotCurvePoint) {
			return nil, invalidHostToken(err)
		}
		if err != nil {
			return nil, internal(fmt.Errorf("agentauth: host %q: public key: %w", host.ID, err))
		}
		if !k.ed.verify(tok.SigningInput, tok.Signature) {
			return nil, invalidHostToken(fmt.Errorf("agentauth: signature of host %q does not verify", host.ID))
		}
		thumb = k.thumb
	case host.JWKSURL != "":
		if tok.Kid == "" {
			return nil, invalidHostToken(fmt.Errorf("agentauth: host %q uses a JWKS URL and the token has no kid", host.ID))
		}
		if host.Status != agentcap.StatusActive && host.Status != agentcap.StatusPending {
			// Refused whatever its signature: no fetch (see verifyCached).
			if err := v.verifyCached(tok.SigningInput, tok.Signature, host.JWKSURL, tok.Kid); err != nil {
				return nil, invalidHostToken(fmt.Errorf("agentauth: host %q is %s: %w", host.ID, host.Status, err))
			}
			break
		}
		set, err := v.keys.get(host.JWKSURL)
		if err != nil {
			return nil, invalidHostToken(fmt.Errorf("agentauth: host %q: JWKS URL: %w", host.ID, err))
		}
		payload, err := set.verify(ctx, token)
		if err != nil {
			return nil, invalidHostToken(fmt.Errorf("agentauth: signature of host %q (JWKS): %w", host.ID, err))
		}
		if string(payload) != string(tok.Payload) {
			return nil, invalidHostToken(errors.New("agentauth: verified payload differs from the parsed payload"))
		}
	default:
		return nil, internal(fmt.Errorf("agentauth: host %q has no key", host.ID))
	}
	if tok.Issuer != host.ID && tok.Issuer != thumb && !byThumb {
		return nil, invalidHostToken(fmt.Errorf("agentauth: iss %q names neither host %q nor its key", tok.Issuer, host.ID))
	}
	if err := v.checkHostTimes(tok); err != nil {
		return nil, err
	}
	fresh, err := checkAndSet(ctx, v.replay, ReplayKey(HostReplayKeyPrefix, tok.Issuer, tok.ID), v.maxAge+2*v.skew, "", host.ID)
	if err != nil {
		return nil, replayRefused(err, "host")
	}
	if !fresh {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgHostReplayed)
	}
	switch host.Status {
	case agentcap.StatusActive:
		return cloneHost(host), nil
	case agentcap.StatusPending:
		h := cloneHost(host)
		h.UserID = ""
		return h, nil
	default:
		return nil, hostStatusError(host)
	}
}

// lookup finds the host a host JWT's iss names; byThumb reports that the
// directory found it by key thumbprint.
func (hv *HostVerifier) lookup(ctx context.Context, iss string) (h *Host, byThumb bool, err error) {
	h, err = hv.v.dir.Host(ctx, iss)
	if err == nil || !errors.Is(err, ErrNotFound) {
		return h, false, err
	}
	kd, ok := hv.v.dir.(HostKeyDirectory)
	if !ok {
		if l, isLender := hv.v.dir.(memoryLender); isLender {
			kd = l.d
			ok = true
		}
	}
	if !ok {
		return nil, false, err
	}
	h, err = kd.HostByKeyThumbprint(ctx, iss)
	return h, err == nil, err
}

// checkHostTimes is step 6 of VerifyHost.
func (v *Verifier) checkHostTimes(tok *HostJWT) error {
	now := v.now()
	msg := ""
	switch {
	case !tok.HasIssuedAt || !tok.HasExpiry || tok.ID == "":
		msg = "host JWT lacks iat, exp or jti"
	case tok.IssuedAt.After(now.Add(v.skew)):
		msg = msgHostNotYetValid
	case now.Sub(tok.IssuedAt) > v.maxAge+v.skew:
		msg = msgHostTooOld
	case tok.Expiry.Sub(tok.IssuedAt) <= 0 || tok.Expiry.Sub(tok.IssuedAt) > v.maxAge:
		msg = msgHostLifetime
	case !now.Before(tok.Expiry):
		msg = msgHostExpired
	default:
		return nil
	}
	return agentcap.NewError(agentcap.CodeInvalidJWT, msg)
}

// ParseHostJWT runs the syntax, header and claim-type checks of a host
// JWT (step 1 of HostVerifier.VerifyHost): at most MaxTokenBytes, three
// base64url segments, JSON objects without duplicate members, header
// members only alg, typ and kid, typ exactly host+jwt, alg exactly
// EdDSA, iss a non-empty string, jti a string, aud a string or an array
// of non-empty strings, iat and exp NumericDates. Every failure is 401
// invalid_jwt with one message, so that a caller cannot tell which check
// failed. Nothing is verified: a provider reads the token's key claims
// from the result to find the key it then verifies with.
//
// The token is read by the reader of agent JWTs (see Verifier.Session),
// with the readings host JWTs have always had: a line break inside a
// segment is skipped; a string's byte outside UTF-8, or surrogate escape
// that is not half of a pair, reads as U+FFFD, as encoding/json reads it
// (so two names that read alike are duplicates); nesting is bounded by
// the size alone; every number must fit a float64; an aud of null reads
// as one empty audience; an iat or exp of null as the epoch; and
// NumericDates up to 1e11, their fraction truncated, in the local zone.
func ParseHostJWT(token string) (*HostJWT, error) {
	d1, d2, err := hostJWT.segments(token)
	if err != nil {
		return nil, invalidHostToken(err)
	}
	src := []byte(token)
	header, payload, sig, err := decodeSegments(make([]byte, decodedLen(len(src), d1, d2)), src, d1, d2)
	if err != nil {
		return nil, invalidHostToken(err)
	}
	var rd jsonvalue.Reader
	kid, err := hostJWT.readHeader(&rd, string(header))
	if err != nil {
		return nil, invalidHostToken(fmt.Errorf("header: %w", err))
	}
	tok := &HostJWT{Kid: kid, Payload: payload, SigningInput: src[:d2:d2], Signature: sig}
	if err := tok.readClaims(&rd, payload); err != nil {
		return nil, invalidHostToken(fmt.Errorf("claims: %w", err))
	}
	return tok, nil
}

// tokenType returns the "typ" header of a compact JWT without verifying
// anything, or "" when the header cannot be read. It tells a host JWT
// from an agent JWT before either is verified, so that each goes to its
// own verifier; the verifier then checks typ again, read the same way.
func tokenType(token string) string {
	head, _, ok := strings.Cut(token, ".")
	if !ok || len(head) > MaxTokenBytes {
		return ""
	}
	header, err := b64.DecodeString(head)
	if err != nil {
		return ""
	}
	var rd jsonvalue.Reader
	return readType(&rd, string(header))
}
