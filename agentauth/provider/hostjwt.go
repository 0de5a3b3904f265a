package provider

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/auth"
)

// hostReplayKeyPrefix starts every key the provider records in its
// ReplayCache for a host JWT, as agentauth.ReplayKey(hostReplayKeyPrefix,
// iss, jti). Agent
// JWTs use agentauth.ReplayKeyPrefix, so the two never collide.
const hostReplayKeyPrefix = agentauth.HostReplayKeyPrefix

// Public messages of host JWT verification. Every failure before the
// signature is verified shares msgInvalidHostToken, so that a caller
// cannot probe which hosts exist.
const (
	msgInvalidHostToken = "invalid host JWT"
	msgHostExpired      = "host JWT expired"
	msgHostNotYetValid  = "host JWT issued in the future"
	msgHostTooOld       = "host JWT too old"
	msgHostLifetime     = "host JWT lifetime too long"
	msgHostAudience     = "host JWT audience is not this issuer"
	msgHostReplayed     = "host JWT already used"
	msgHostRevoked      = "host revoked"
	msgHostPending      = "host pending approval"
)

// hostToken is a host JWT after its syntax, header and claim types were
// checked, before its signature is.
type hostToken struct {
	raw string
	kid string
	// signingInput and signature are what the signature covers and is.
	signingInput, signature []byte

	iss, jti      string
	aud           []string
	iat, exp      time.Time
	hasIat        bool
	hasExp        bool
	hostKey       json.RawMessage
	hostJWKSURL   string
	agentKey      json.RawMessage
	agentJWKSURL  string
	agentKID      string
	hostNameClaim string
}

// hostAuth is a verified host JWT: the host it names (nil for a host the
// provider has not seen, which only registration accepts) and the key
// that signed it.
type hostAuth struct {
	host *store.Host
	key  *publicKey
	tok  *hostToken
}

// hostAccess says which hosts an endpoint admits.
type hostAccess uint8

const (
	// hostKnownActive admits only active hosts.
	hostKnownActive hostAccess = iota
	// hostKnownOrPending also admits pending hosts: their agents poll
	// status and may be revoked while they wait.
	hostKnownOrPending
	// hostAny also admits a host the provider has never seen:
	// registration.
	hostAny
)

func invalidHostToken(cause error) *agentcap.Error {
	return agentcap.NewError(agentcap.CodeInvalidJWT, msgInvalidHostToken).WithCause(cause)
}

// verifyHost authenticates a host-authenticated request (protocol
// §4.5.1). The checks run in this order, the first failure answering:
//
//  1. An Authorization: Bearer header (else 401 authentication_required).
//  2. Syntax and header: at most agentauth.MaxTokenBytes, three base64url
//     segments; header members only alg, typ and kid; typ exactly
//     host+jwt (an agent+jwt here is token confusion); alg exactly EdDSA.
//  3. Claims syntax: a JSON object without duplicate members, each
//     registered claim of its JSON type, iss present.
//  4. aud is the issuer.
//  5. The host: by iss (the current key's thumbprint); else by
//     host_jwks_url, a JWKS host that rotated its key, whose new key is
//     fetched, must have iss as thumbprint, and is then stored; else, only
//     where access is hostAny, a new host whose presented key
//     (host_public_key, or the host_jwks_url key named by kid) must have
//     iss as its thumbprint.
//  6. The signature, with that key.
//  7. iat, exp and lifetime, as for agent JWTs.
//  8. jti replay, recorded last so that a token failing another check
//     does not use up its id.
//  9. Host status: revoked or rejected is 403 host_revoked; pending is
//     403 host_pending unless access admits it.
func (p *Provider) verifyHost(ctx context.Context, r *http.Request, access hostAccess) (*hostAuth, error) {
	token, ok := auth.BearerToken(r.Header.Get("Authorization"))
	switch {
	case !ok:
		return nil, agentcap.NewError(agentcap.CodeAuthenticationRequired, "a host JWT is required")
	case token == "":
		return nil, errMalformedBearer
	}
	tok, err := parseHostToken(token)
	if err != nil {
		return nil, err
	}
	if !containsString(tok.aud, p.issuer) {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgHostAudience).
			WithCause(fmt.Errorf("aud %q is not %q", tok.aud, p.issuer))
	}
	host, key, err := p.resolveHost(ctx, r, tok, access)
	if err != nil {
		return nil, err
	}
	// The signature is checked over the bytes parseHostToken read, so
	// the token is read once, by agentauth.ParseHostJWT.
	if !ed25519.Verify(key.key, tok.signingInput, tok.signature) {
		return nil, invalidHostToken(errors.New("the signature does not verify"))
	}
	if err := p.checkTimes(tok); err != nil {
		return nil, err
	}
	fresh, err := p.recordHostJTI(ctx, host, tok)
	if err != nil {
		return nil, err
	}
	if !fresh {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, msgHostReplayed)
	}
	if host != nil {
		switch host.Status {
		case agentcap.StatusActive:
		case agentcap.StatusPending:
			if access == hostKnownActive {
				return nil, agentcap.NewError(agentcap.CodeHostPending, msgHostPending)
			}
		default:
			return nil, agentcap.NewError(agentcap.CodeHostRevoked, msgHostRevoked)
		}
		if host.JWKSURL != "" && host.Thumbprint != tok.iss {
			// A JWKS host signed with a new key: remember it, so that
			// the next token is found by iss (protocol §8.7).
			if err := p.store.RotateHostKey(ctx, host.ID, host.Thumbprint, nil, tok.iss); err != nil && !errors.Is(err, store.ErrConflict) {
				return nil, internalError(err)
			}
		}
		if err := p.store.TouchHost(ctx, host.ID, p.now()); err != nil {
			return nil, internalError(err)
		}
	}
	return &hostAuth{host: host, key: key, tok: tok}, nil
}

// storeDown refuses a request whose host or agent record could not be
// read or updated on the way in: the store did not answer (503
// temporarily_unavailable, Retry-After).
func storeDown(err error) error {
	return agentauth.Unavailable("the provider's records cannot be reached now; retry later", err)
}

// resolveHost finds the host a token names and the key to verify it with.
// A new host's host_jwks_url is fetched, if its key set is not cached,
// only within the key fetch budgets of r's address and of the URL
// (RateLimits.KeyFetchPerIP, KeyFetchPerURL).
func (p *Provider) resolveHost(ctx context.Context, r *http.Request, tok *hostToken, access hostAccess) (*store.Host, *publicKey, error) {
	host, err := p.store.HostByThumbprint(ctx, tok.iss)
	switch {
	case err == nil:
	case !errors.Is(err, store.ErrNotFound):
		return nil, nil, storeDown(fmt.Errorf("host lookup: %w", err))
	case tok.hostJWKSURL != "":
		host, err = p.store.HostByJWKSURL(ctx, tok.hostJWKSURL)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, nil, storeDown(fmt.Errorf("host lookup: %w", err))
		}
	}
	if host != nil {
		if len(host.PublicKey) > 0 {
			key, err := parseJWK(host.PublicKey)
			if err != nil {
				return nil, nil, internalError(fmt.Errorf("host %s: stored key: %w", host.ID, err))
			}
			return host, key, nil
		}
		// The JWKS of a host this endpoint will refuse is not fetched:
		// its token can only be refused, whatever its signature.
		admitted := host.Status == agentcap.StatusActive || (host.Status == agentcap.StatusPending && access != hostKnownActive)
		key, err := p.jwksKey(host.JWKSURL, tok, admitted, nil)
		if err != nil {
			return nil, nil, err
		}
		return host, key, nil
	}
	if access != hostAny {
		return nil, nil, invalidHostToken(fmt.Errorf("no host has thumbprint %q", tok.iss))
	}
	switch {
	case len(tok.hostKey) > 0 && tok.hostJWKSURL != "":
		return nil, nil, badRequest("a host JWT carries host_public_key or host_jwks_url, not both")
	case len(tok.hostKey) > 0:
		key, err := parseJWK(tok.hostKey)
		if err != nil {
			if errors.Is(err, errUnsupportedKey) {
				return nil, nil, agentcap.NewError(agentcap.CodeUnsupportedAlgorithm, "host_public_key: "+err.Error())
			}
			return nil, nil, badRequest("host_public_key: " + err.Error())
		}
		if key.thumbprint != tok.iss {
			return nil, nil, invalidHostToken(fmt.Errorf("iss %q is not the thumbprint %q of host_public_key", tok.iss, key.thumbprint))
		}
		return nil, key, nil
	case tok.hostJWKSURL != "":
		if err := p.keys.CheckURL(tok.hostJWKSURL); err != nil {
			return nil, nil, badRequest("host_jwks_url cannot be fetched: " + err.Error())
		}
		key, err := p.jwksKey(tok.hostJWKSURL, tok, true, func() error { return p.limits.keyFetch(r, tok.hostJWKSURL) })
		if err != nil {
			return nil, nil, err
		}
		return nil, key, nil
	default:
		return nil, nil, badRequest("a new host's JWT must carry host_public_key or host_jwks_url")
	}
}

// jwksKey returns the key a JWKS host signed tok with, the key its kid
// names in the key set of url; its thumbprint must be the token's iss.
// The key set is the verifier's (see remotekeys): one cache, one refresh
// floor and one memory bound for agent and host keys, so that forged
// host JWTs, whose iss is public, cannot make the provider fetch a
// host's URL more than once per floor. Unless fetch is set, only a key
// set already cached is read; beforeFetch is as in
// remotekeys.Cache.Key.
func (p *Provider) jwksKey(url string, tok *hostToken, fetch bool, beforeFetch func() error) (*publicKey, error) {
	if tok.kid == "" {
		return nil, invalidHostToken(errors.New("a JWKS host's token has no kid"))
	}
	var pub ed25519.PublicKey
	var err error
	if fetch {
		pub, err = p.keys.Key(url, tok.kid, beforeFetch)
	} else {
		pub, err = p.keys.CachedKey(url, tok.kid)
	}
	if err != nil {
		var ae *agentcap.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, invalidHostToken(err)
	}
	key, err := newPublicKey(pub)
	if err != nil {
		return nil, invalidHostToken(err)
	}
	if key.thumbprint != tok.iss {
		return nil, invalidHostToken(fmt.Errorf("iss %q is not the thumbprint %q of JWKS key %q", tok.iss, key.thumbprint, tok.kid))
	}
	return key, nil
}

func (p *Provider) checkTimes(tok *hostToken) error {
	now := p.now()
	switch {
	case !tok.hasIat || !tok.hasExp || tok.jti == "":
		return agentcap.NewError(agentcap.CodeInvalidJWT, "host JWT lacks iat, exp or jti")
	case tok.iat.After(now.Add(p.skew)):
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgHostNotYetValid)
	case now.Sub(tok.iat) > p.maxAge+p.skew:
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgHostTooOld)
	}
	if life := tok.exp.Sub(tok.iat); life <= 0 || life > p.maxAge {
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgHostLifetime)
	}
	// As for agent JWTs, exp is honoured as written, with no skew.
	if !now.Before(tok.exp) {
		return agentcap.NewError(agentcap.CodeInvalidJWT, msgHostExpired)
	}
	return nil
}

// parseHostToken runs the syntax, header and claim-type checks
// (agentauth.ParseHostJWT) and reads the claims registration needs.
func parseHostToken(token string) (*hostToken, error) {
	j, err := agentauth.ParseHostJWT(token)
	if err != nil {
		return nil, err
	}
	tok := &hostToken{
		raw: token, kid: j.Kid,
		signingInput: j.SigningInput, signature: j.Signature,
		iss: j.Issuer, jti: j.ID, aud: j.Audience,
		iat: j.IssuedAt, exp: j.Expiry, hasIat: j.HasIssuedAt, hasExp: j.HasExpiry,
	}
	c := j.Claims
	for _, s := range []struct {
		name string
		dst  *string
	}{
		{"host_jwks_url", &tok.hostJWKSURL}, {"agent_jwks_url", &tok.agentJWKSURL},
		{"agent_kid", &tok.agentKID}, {"host_name", &tok.hostNameClaim},
	} {
		v, err := optString(c, s.name)
		if err != nil {
			return nil, invalidHostToken(fmt.Errorf("claim %q has the wrong type", s.name))
		}
		*s.dst = v
	}
	for _, k := range []struct {
		name string
		dst  *json.RawMessage
	}{{"host_public_key", &tok.hostKey}, {"agent_public_key", &tok.agentKey}} {
		raw, ok := c[k.name]
		if !ok || string(raw) == "null" {
			continue
		}
		if len(raw) == 0 || raw[0] != '{' {
			return nil, invalidHostToken(fmt.Errorf("claim %q has the wrong type", k.name))
		}
		*k.dst = raw
	}
	return tok, nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// recordHostJTI records the jti of a verified host JWT, charged to its
// host (to its key, for a host not yet registered) when the replay cache
// shares itself out among owners: past the host's share the token is 429
// rate_limited, and other hosts are not refused.
func (p *Provider) recordHostJTI(ctx context.Context, host *store.Host, tok *hostToken) (bool, error) {
	key, ttl := agentauth.ReplayKey(hostReplayKeyPrefix, tok.iss, tok.jti), p.maxAge+2*p.skew
	var (
		fresh bool
		err   error
	)
	if oc, ok := p.replay.(agentauth.OwnerReplayCache); ok {
		owner := tok.iss
		if host != nil {
			owner = host.ID
		}
		fresh, err = oc.CheckAndSetFor(ctx, key, ttl, "", owner)
	} else {
		fresh, err = p.replay.CheckAndSet(ctx, key, ttl)
	}
	switch {
	case errors.Is(err, agentauth.ErrReplayShare):
		return false, ratelimit.Error(ratelimit.Decision{RetryAfter: agentcap.UnavailableRetryAfter},
			"too many unexpired tokens of this host; retry later").WithCause(err)
	case err != nil:
		return false, agentauth.Unavailable("used tokens cannot be checked now; retry later", fmt.Errorf("replay cache: %w", err))
	}
	return fresh, nil
}
