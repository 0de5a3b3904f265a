// Package oidcauth verifies OpenID Connect ID tokens sent as bearer
// tokens (RFC 6750), with go-oidc: [New] returns the auth.Verifier that
// httpx, its router mounts and mcpx take.
//
// The security boundary is go-oidc's IDTokenVerifier: a token is accepted
// only with the signature, issuer, audience and expiry its configuration
// asks for. The application's identify function then says which caller a
// verified token is, and may refuse it; the executor's context function
// still re-reads what that caller may do from the application's own
// records.
//
// The verifier admits no anonymous caller, and names no authentication
// challenge of its own: wrap it in a type with a Challenge method
// (auth.Challenger) to send WWW-Authenticate with httpx's 401 answers
// (mcpx sends its own).
package oidcauth

import (
	"context"
	"errors"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
)

// New returns a verifier of the bearer token of each request: verifier
// checks it (signature, issuer, audience, expiry, as its configuration
// says), and identify turns the verified token into the caller's
// identity.
//
// A request without bearer credentials is refused with
// auth.ErrNoCredentials. A token that does not verify is refused with
// invalid_jwt, "the credentials are invalid", the verifier's reason kept
// as the error's hidden cause, for logs only. An *agentcap.Error from
// identify refuses the request in its own words; any other error of
// identify, or a nil identity, is a redacted internal_error.
//
// New panics when verifier or identify is nil.
func New(verifier *oidc.IDTokenVerifier, identify func(ctx context.Context, tok *oidc.IDToken) (*auth.Identity, error)) auth.Verifier {
	if verifier == nil || identify == nil {
		panic("oidcauth: New needs a token verifier and an identify function")
	}
	return &tokenVerifier{verifier: verifier, identify: identify}
}

type tokenVerifier struct {
	verifier *oidc.IDTokenVerifier
	identify func(ctx context.Context, tok *oidc.IDToken) (*auth.Identity, error)
}

// errInvalid refuses a token that does not verify, whatever the reason:
// the caller learns nothing of which check failed.
var errInvalid = agentcap.NewError(agentcap.CodeInvalidJWT, "the credentials are invalid")

var (
	errEmptyToken = errors.New("oidcauth: the Bearer credentials hold no single token")
	errNoIdentity = errors.New("oidcauth: identify returned no identity and no error")
)

func (v *tokenVerifier) Verify(ctx context.Context, req *auth.Request) (*auth.Identity, error) {
	raw, ok := auth.BearerToken(req.Authorization)
	if !ok {
		return nil, auth.ErrNoCredentials
	}
	if raw == "" {
		return nil, errInvalid.WithCause(errEmptyToken)
	}
	tok, err := v.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, errInvalid.WithCause(err)
	}
	id, err := v.identify(ctx, tok)
	switch {
	case err != nil && agentcap.As(err) != nil:
		return nil, err
	case err != nil:
		return nil, agentcap.Internal(err)
	case id == nil:
		return nil, agentcap.Internal(errNoIdentity)
	}
	return id, nil
}
