package agentauth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/internal/jsonvalue"
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
	// ReplayCache, as ReplayKey(ReplayKeyPrefix, agent id, jti).
	ReplayKeyPrefix = "agentauth:jti:"
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
	// Directory resolves agents and hosts. The Verifier only reads the
	// records it returns and passes them on in sessions (which are
	// read-only); it reads a MemoryDirectory without copying.
	Directory Directory
	// Audiences lists the URLs this location answers to. A token's "aud"
	// must exactly equal one of them (a string, or an array with one
	// matching entry).
	Audiences []string
	// Skew is the clock skew tolerated on iat (and nbf): a token may be
	// issued up to Skew in the future and be up to MaxAge plus Skew old.
	// exp gets no tolerance: a token is refused from its exp on. Zero means
	// DefaultSkew; negative values and values above MaxSkew are
	// configuration errors.
	Skew time.Duration
	// MaxAge bounds both a token's age (now - iat, plus Skew) and its
	// lifetime (exp - iat). Zero means DefaultMaxAge, which is also the
	// largest value accepted.
	MaxAge time.Duration
	// Replay records token ids. Nil means NewMemoryReplayCache(0) with
	// the Verifier's clock; applications running several instances must
	// share one (see package redisstore). A cache that is an
	// OwnerReplayCache, as both are, is charged to the token's agent and
	// host, so that no agent or host can fill it for the others.
	Replay ReplayCache
	// Limiter, when set, counts every token that passed the checks
	// before the replay check (steps 1 to 7 of Session) against PerAgent,
	// for its agent, and PerHost, for all the agents of its host: past
	// either it is refused 429 rate_limited with Retry-After, before its
	// jti is recorded, so that a refused token stays unspent and takes
	// no room in the replay cache. A limiter that cannot decide refuses
	// the token with 503 temporarily_unavailable. Nil counts nothing: a
	// location whose agents are not limited elsewhere (by a provider in
	// front, say) should set one (ratelimit.NewMemory, or package
	// redisstore for several instances).
	Limiter ratelimit.Limiter
	// PerAgent and PerHost are Limiter's limits: zero means 120 and 600
	// requests a minute, a provider's defaults.
	PerAgent, PerHost ratelimit.Limit
	// Admit, when set, runs after Limiter, before the jti is recorded,
	// with the session the token proves: a refusal is returned as it is
	// and leaves the token unspent. A provider counts its own limits here.
	Admit func(ctx context.Context, s *Session) error
	// KeyFetch is the policy for fetching JWKS URLs.
	KeyFetch FetchPolicy
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Verifier verifies agent JWTs against a Directory and returns their
// sessions. It is safe for concurrent use. It caches parsed inline keys by
// their exact JWK bytes, and one remote key set per JWKS URL, all of them
// within FetchPolicy.CacheBytes.
type Verifier struct {
	dir       Directory
	audiences []string
	skew      time.Duration
	maxAge    time.Duration
	replay    ReplayCache
	now       func() time.Time
	keys      *keySets
	inline    *inlineKeys
	limiter   ratelimit.Limiter
	perAgent  ratelimit.Limit
	perHost   ratelimit.Limit
	admit     func(ctx context.Context, s *Session) error
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
	if cfg.PerAgent == (ratelimit.Limit{}) {
		cfg.PerAgent = ratelimit.PerMinute(defaultPerAgent)
	}
	if cfg.PerHost == (ratelimit.Limit{}) {
		cfg.PerHost = ratelimit.PerMinute(defaultPerHost)
	}
	if err := cfg.PerAgent.Validate(); err != nil {
		return nil, fmt.Errorf("agentauth: VerifierConfig.PerAgent: %w", err)
	}
	if err := cfg.PerHost.Validate(); err != nil {
		return nil, fmt.Errorf("agentauth: VerifierConfig.PerHost: %w", err)
	}
	dir := cfg.Directory
	if m, ok := dir.(*MemoryDirectory); ok {
		dir = memoryLender{m}
	}
	return &Verifier{
		dir:       dir,
		audiences: slices.Clone(cfg.Audiences),
		skew:      cfg.Skew,
		maxAge:    cfg.MaxAge,
		replay:    cfg.Replay,
		now:       cfg.Now,
		keys:      newKeySets(cfg.KeyFetch, cfg.Now),
		inline:    newInlineKeys(maxInlineKeys),
		limiter:   cfg.Limiter,
		perAgent:  cfg.PerAgent,
		perHost:   cfg.PerHost,
		admit:     cfg.Admit,
	}, nil
}

// Session verifies an agent JWT and returns the session it proves. Every
// error is a *agentcap.Error. The checks run in this order, and the first
// failure is returned:
//
//  1. Syntax: at most MaxTokenBytes, JWS compact serialization (three
//     base64url segments, no padding), UTF-8 JSON header and payload.
//     The JSON is read strictly: a surrogate escape that is not half of a
//     pair, and nesting deeper than 1000 levels, are refused too.
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
//     that timing agrees as well; a directory failure is 503
//     temporarily_unavailable with Retry-After (see Unavailable).
//  4. Signature, with the agent's key: the inline Ed25519 JWK (the token's
//     kid selects nothing and is not checked), or the key of the agent's
//     JWKS URL whose kid is the token's kid, which must equal the agent's
//     configured kid. Failure: 401 invalid_jwt; a JWKS that cannot be
//     fetched also gives 401 invalid_jwt, with the cause kept. The JWKS
//     of an agent that is not active, or whose host is not, is never
//     fetched: its token is checked against keys already cached, and
//     fails with 401 invalid_jwt when none verifies it, so that tokens
//     naming agents nobody approved cost no fetch and no memory.
//  5. Status: the agent must be active (else 403 agent_revoked,
//     agent_expired, agent_pending, agent_rejected or agent_claimed), then
//     the host (revoked or rejected: 403 host_revoked; pending: 403
//     host_pending).
//  6. Issuer: "iss" may be absent; when present it must equal the host id
//     or, for a host with an inline key, that key's RFC 7638 thumbprint.
//     Failure: 401 invalid_jwt.
//  7. Claims, all 401 invalid_jwt, in this order: "aud" matches one
//     configured audience; "iat", "exp" and a non-empty "jti" are
//     present; iat at most Skew in the future; now - iat at most MaxAge +
//     Skew; exp after iat and exp - iat at most MaxAge; now before exp,
//     with no skew (so a token is accepted for at most MaxAge + Skew,
//     from Skew before its iat); "nbf", if present, at most Skew in the
//     future.
//  8. Limits: VerifierConfig.Limiter's, then VerifierConfig.Admit (429
//     rate_limited, or the hook's own refusal), so that a token refused
//     there is not spent.
//  9. Replay: the jti is recorded with ReplayCache.CheckAndSet (for an
//     OwnerReplayCache, CheckAndSetFor the agent and its host) under
//     ReplayKey(ReplayKeyPrefix, agent id, jti) for MaxAge + 2*Skew, which
//     covers the whole window in which the token is acceptable. It runs
//     last so that a token failing any other check does not use up its
//     id. Seen before: 401 invalid_jwt; the agent or its host holding its
//     share of the cache: 429 rate_limited with Retry-After; a cache
//     error: 503 temporarily_unavailable with Retry-After (fail closed).
//
// The capabilities claim is parsed (a string array, nil when absent) but
// not enforced here: whether it allows the requested capability, and the
// agent's grants, are checked when a capability is authorized.
func (v *Verifier) Session(ctx context.Context, token string) (*Session, error) {
	sc := getScratch()
	defer putScratch(sc)

	// Steps 1 and 2, and the claims of step 3.
	if err := sc.parse(token); err != nil {
		return nil, err
	}
	tok := &sc.tok

	// Step 3.
	agent, err := v.dir.Agent(ctx, tok.claims.Subject)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			sc.equalizeTiming()
			return nil, invalidToken(fmt.Errorf("agentauth: agent %q: %w", tok.claims.Subject, err))
		}
		return nil, Unavailable(msgDirectoryDown, fmt.Errorf("agentauth: directory: agent %q: %w", tok.claims.Subject, err))
	}
	host, err := v.dir.Host(ctx, agent.HostID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			sc.equalizeTiming()
			return nil, invalidToken(fmt.Errorf("agentauth: host %q of agent %q: %w", agent.HostID, agent.ID, err))
		}
		return nil, Unavailable(msgDirectoryDown, fmt.Errorf("agentauth: directory: host %q: %w", agent.HostID, err))
	}

	// Step 4.
	if err := v.verifySignature(ctx, token, sc, agent, host); err != nil {
		return nil, err
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
		if err := v.checkIssuer(tok.claims.Issuer, host); err != nil {
			return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgIssuer).WithCause(err)
		}
	}

	// Step 7.
	if err := v.checkTimesAndAudience(tok); err != nil {
		return nil, err
	}

	// Step 8.
	sess := &Session{Agent: agent, Host: host, Claims: tok.claims}
	if v.limiter != nil {
		if err := v.limit(ctx, agent.ID, host.ID); err != nil {
			return nil, err
		}
	}
	if v.admit != nil {
		if err := v.admit(ctx, sess); err != nil {
			return nil, err
		}
	}

	// Step 9.
	fresh, err := checkAndSet(ctx, v.replay, ReplayKey(ReplayKeyPrefix, agent.ID, tok.claims.ID), v.maxAge+2*v.skew, agent.ID, host.ID)
	if err != nil {
		return nil, replayRefused(err, "agent")
	}
	if !fresh {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgReplayed).
			WithCause(fmt.Errorf("agentauth: jti %q of agent %q was already used", tok.claims.ID, agent.ID))
	}
	return sess, nil
}

// Defaults of VerifierConfig.PerAgent and PerHost, in requests a minute:
// a provider's (see package provider's RateLimits).
const (
	defaultPerAgent = 120
	defaultPerHost  = 600
)

// limit counts a verified token against the Limiter's limits of its agent
// and host (step 8 of Session).
func (v *Verifier) limit(ctx context.Context, agentID, hostID string) error {
	d, err := ratelimit.AllowAll(ctx, v.limiter,
		ratelimit.Rule{Key: ratelimit.Key(ratelimit.DimAgent, agentID), Limit: v.perAgent},
		ratelimit.Rule{Key: ratelimit.Key(ratelimit.DimHost, hostID), Limit: v.perHost})
	if err != nil {
		return Unavailable(msgLimiterDown, fmt.Errorf("agentauth: rate limiter: %w", err))
	}
	if !d.Allowed {
		return ratelimit.Error(d, "too many requests for this agent; retry later")
	}
	return nil
}

// verifySignature is step 4. An inline key is parsed, and its curve point
// decoded, once per distinct JWK; the signature is checked (see edKey)
// over the token's own signing input: the
// bytes that were parsed are the bytes that are verified, so nothing is
// decoded twice. A JWKS key is checked by go-oidc (see jwksKeySet), and
// the payload it verified must be the payload that was parsed; but for an
// agent or a host that is not active, only a key set already cached is
// used (see verifyCached).
func (v *Verifier) verifySignature(ctx context.Context, token string, sc *tokenScratch, agent *Agent, host *Host) error {
	switch {
	case len(agent.PublicKey) > 0:
		k, err := v.inline.get(agent.PublicKey)
		if errors.Is(err, errNotCurvePoint) {
			// No signature verifies under such a key: the token is
			// refused as ed25519.Verify would refuse it, not reported
			// as a server fault.
			return invalidToken(fmt.Errorf("agentauth: agent %q: public key: %w", agent.ID, err))
		}
		if err != nil {
			return internal(fmt.Errorf("agentauth: agent %q: public key: %w", agent.ID, err))
		}
		if !k.ed.verify(sc.signingInput, sc.sig) {
			return invalidToken(fmt.Errorf("agentauth: signature of agent %q does not verify", agent.ID))
		}
		return nil
	case agent.JWKSURL != "":
		kid := sc.tok.kid
		if kid == "" {
			return invalidToken(fmt.Errorf("agentauth: agent %q uses a JWKS URL and the token has no kid", agent.ID))
		}
		if kid != agent.KID {
			return invalidToken(fmt.Errorf("agentauth: token kid %q is not agent %q's kid %q", kid, agent.ID, agent.KID))
		}
		if agent.Status != agentcap.StatusActive || host.Status != agentcap.StatusActive {
			if err := v.verifyCached(sc.signingInput, sc.sig, agent.JWKSURL, kid); err != nil {
				return invalidToken(fmt.Errorf("agentauth: agent %q is %s, its host %s: %w", agent.ID, agent.Status, host.Status, err))
			}
			return nil
		}
		set, err := v.keys.get(agent.JWKSURL)
		if err != nil {
			return invalidToken(fmt.Errorf("agentauth: agent %q: JWKS URL: %w", agent.ID, err))
		}
		payload, err := set.verify(ctx, token)
		if err != nil {
			return invalidToken(fmt.Errorf("agentauth: signature of agent %q (JWKS): %w", agent.ID, err))
		}
		if string(payload) != sc.tok.payload {
			return invalidToken(errors.New("agentauth: verified payload differs from the parsed payload"))
		}
		return nil
	default:
		return internal(fmt.Errorf("agentauth: agent %q has no key", agent.ID))
	}
}

// verifyCached checks a signature, of a token whose signer may not act,
// against the keys of jwksURL named kid that are already cached, and
// fails when none verifies it. Such a token can only end in a refusal, so
// it never fetches: otherwise a token naming an agent that registered a
// URL and was never approved, with any signature, would make this server
// fetch that URL and keep its key set. A valid token of a JWKS agent that
// is not active is therefore refused as invalid (401) rather than with its
// status (403), unless its keys were cached while it was active.
func (v *Verifier) verifyCached(signingInput, sig []byte, jwksURL, kid string) error {
	keys := v.keys.cached(jwksURL, kid)
	for _, k := range keys {
		if k.ed.verify(signingInput, sig) {
			return nil
		}
	}
	if len(keys) == 0 {
		_ = timingKey.verify(signingInput, sig)
	}
	return fmt.Errorf("no cached key %q of its JWKS verifies the token, and none is fetched", kid)
}

// timingKey is a fixed Ed25519 public key no token is signed with,
// decoded like a cached inline key.
var timingKey = func() *edKey {
	k, err := newEdKey(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey))
	if err != nil {
		panic(err)
	}
	return k
}()

// equalizeTiming spends on a token naming an unknown agent the time a
// signature check would take, so that response times do not tell which
// agent ids exist.
func (sc *tokenScratch) equalizeTiming() {
	_ = timingKey.verify(sc.signingInput, sc.sig)
}

func agentStatusError(a *Agent) error {
	var code agentcap.Code
	var msg string
	switch a.Status {
	case agentcap.StatusActive:
		return nil
	case agentcap.StatusRevoked:
		code, msg = agentcap.CodeAgentRevoked, msgAgentRevoked
	case agentcap.StatusExpired:
		code, msg = agentcap.CodeAgentExpired, msgAgentExpired
	case agentcap.StatusPending:
		code, msg = agentcap.CodeAgentPending, msgAgentPending
	case agentcap.StatusRejected:
		code, msg = agentcap.CodeAgentRejected, msgAgentRejected
	case agentcap.StatusClaimed:
		code, msg = agentcap.CodeAgentClaimed, msgAgentClaimed
	default:
		return internal(fmt.Errorf("agentauth: agent %q has unknown status %q", a.ID, a.Status))
	}
	return agentcap.NewError(code, msg).
		WithCause(fmt.Errorf("agentauth: agent %q is %s", a.ID, a.Status))
}

// hostStatusError maps host states. The protocol has no host_rejected
// code; a rejected host can never act, like a revoked one.
func hostStatusError(h *Host) error {
	var code agentcap.Code
	var msg string
	switch h.Status {
	case agentcap.StatusActive:
		return nil
	case agentcap.StatusRevoked, agentcap.StatusRejected:
		code, msg = agentcap.CodeHostRevoked, msgHostRevoked
	case agentcap.StatusPending:
		code, msg = agentcap.CodeHostPending, msgHostPending
	default:
		return internal(fmt.Errorf("agentauth: host %q has unknown status %q", h.ID, h.Status))
	}
	return agentcap.NewError(code, msg).
		WithCause(fmt.Errorf("agentauth: host %q is %s", h.ID, h.Status))
}

func (v *Verifier) checkIssuer(iss string, host *Host) error {
	if iss == host.ID {
		return nil
	}
	if len(host.PublicKey) > 0 {
		k, err := v.inline.get(host.PublicKey)
		if err != nil {
			return fmt.Errorf("agentauth: host %q: public key: %w", host.ID, err)
		}
		if iss == k.thumb {
			return nil
		}
		return fmt.Errorf("agentauth: iss %q is neither host id %q nor its key thumbprint %q", iss, host.ID, k.thumb)
	}
	return fmt.Errorf("agentauth: iss %q is not host id %q", iss, host.ID)
}

func (v *Verifier) checkTimesAndAudience(tok *agentToken) error {
	c := &tok.claims
	if !audienceMatches(c.Audience, v.audiences) {
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgAudience).
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
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgNotYetValid).
			WithCause(fmt.Errorf("agentauth: iat %v is more than %v after now %v", c.IssuedAt, v.skew, now))
	}
	if age := now.Sub(c.IssuedAt); age > v.maxAge+v.skew {
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgTooOld).
			WithCause(fmt.Errorf("agentauth: token age %v exceeds %v", age, v.maxAge+v.skew))
	}
	if life := c.ExpiresAt.Sub(c.IssuedAt); life <= 0 || life > v.maxAge {
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgLifetime).
			WithCause(fmt.Errorf("agentauth: exp - iat is %v, must be in (0, %v]", life, v.maxAge))
	}
	// exp is the client's own promise about its token: honoured as
	// written, with no skew added.
	if !now.Before(c.ExpiresAt) {
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgExpired).
			WithCause(fmt.Errorf("agentauth: exp %v passed (now %v)", c.ExpiresAt, now))
	}
	if tok.hasNbf && tok.nbf.After(now.Add(v.skew)) {
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgNotYetValid).
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
	return agentcap.NewError(agentcap.CodeInvalidJWT, msgMissingClaim).
		WithCause(fmt.Errorf("agentauth: claim %q is missing or empty", name))
}

func invalidToken(cause error) error {
	return agentcap.NewError(agentcap.CodeInvalidJWT, msgInvalidToken).WithCause(cause)
}

func internal(cause error) error {
	return agentcap.NewError(agentcap.CodeInternalError, msgInternal).WithCause(cause)
}

// Public messages of Unavailable for the stores the verifiers read.
const (
	msgDirectoryDown = "the directory of agents and hosts cannot be read now; retry later"
	msgReplayDown    = "used tokens cannot be checked now; retry later"
	msgLimiterDown   = "the rate limiter is unavailable; retry later"
)

// Unavailable refuses a request that could not be checked because a
// store did not answer (a database restarting, a cache unreachable): 503
// temporarily_unavailable with message, asking the caller to retry
// after agentcap.UnavailableRetryAfter (the Retry-After header, and
// retry_after in the body), the cause kept hidden. The request is
// refused, never let through; a retry, with a fresh token, succeeds once
// the store is back.
func Unavailable(message string, cause error) *agentcap.Error {
	secs := int(agentcap.UnavailableRetryAfter / time.Second)
	return agentcap.Unavailable(message, cause).With(ratelimit.RetryAfterField, secs)
}

// agentToken is an agent JWT after the syntax, header and claim-type
// checks, before its signature is verified.
type agentToken struct {
	kid string
	// payload is the decoded payload, the text the claims were read from.
	payload string
	claims  Claims
	hasIss  bool
	hasIat  bool
	hasExp  bool
	hasNbf  bool
	nbf     time.Time
}

// tokenScratch holds one token's bytes while it is verified. It is pooled,
// so that a request decodes into memory an earlier request used; nothing
// that outlives the verification points into buf.
type tokenScratch struct {
	// buf holds a copy of the token, then its decoded header, payload and
	// signature, in that order.
	buf []byte
	// signingInput is the JWS signing input: the token up to its second
	// dot, in buf.
	signingInput []byte
	sig          []byte
	tok          agentToken
	// rd reads the header and the claims.
	rd jsonvalue.Reader
}

var scratchPool = sync.Pool{New: func() any { return new(tokenScratch) }}

func getScratch() *tokenScratch { return scratchPool.Get().(*tokenScratch) }

// putScratch returns sc to the pool. Its buffer is at most about twice
// MaxTokenBytes, so every buffer is worth keeping.
func putScratch(sc *tokenScratch) {
	sc.signingInput, sc.sig = nil, nil
	sc.tok = agentToken{}
	sc.rd.ResetText("", jsonvalue.Rules{})
	scratchPool.Put(sc)
}

// parseAgentToken runs checks 1 and 2 of Verifier.Session and the claim
// parsing of check 3, for a caller that needs no signature check.
func parseAgentToken(token string) (*agentToken, error) {
	sc := getScratch()
	defer putScratch(sc)
	if err := sc.parse(token); err != nil {
		return nil, err
	}
	tok := sc.tok
	return &tok, nil
}

// parse runs checks 1 and 2 of Verifier.Session and the claim parsing of
// check 3 on token, leaving the result in sc.tok and the signing input and
// signature in sc. The header and the payload are copied to the heap once,
// as one string, which the claims then share.
func (sc *tokenScratch) parse(token string) error {
	d1, d2, err := agentJWT.segments(token)
	if err != nil {
		return invalidToken(fmt.Errorf("agentauth: %w", err))
	}
	n := len(token)
	need := n + decodedLen(n, d1, d2)
	if cap(sc.buf) < need {
		sc.buf = make([]byte, need)
	}
	buf := sc.buf[:need]
	copy(buf, token)
	header, payload, sig, err := decodeSegments(buf[n:], buf[:n], d1, d2)
	if err != nil {
		return invalidToken(fmt.Errorf("agentauth: %w", err))
	}
	sc.signingInput = buf[:d2]
	sc.sig = sig

	// header and payload are adjacent in buf.
	hn := len(header)
	text := string(buf[n : n+hn+len(payload)])
	t := &sc.tok
	if t.kid, err = agentJWT.readHeader(&sc.rd, text[:hn]); err != nil {
		return invalidToken(fmt.Errorf("agentauth: header: %w", err))
	}
	t.payload = text[hn:]
	if err := t.readClaims(&sc.rd, t.payload); err != nil {
		return invalidToken(fmt.Errorf("agentauth: claims: %w", err))
	}
	if t.claims.Subject == "" {
		return invalidToken(errors.New(`agentauth: claims: "sub" is missing or empty`))
	}
	return nil
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
