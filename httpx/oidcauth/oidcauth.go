// Package oidcauth authenticates httpx requests with OpenID Connect ID
// tokens sent as bearer tokens, verified by go-oidc.
package oidcauth

import (
	"context"
	"fmt"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/agentcap/agentcap/httpx"
)

// New returns an httpx authenticator. It reads the bearer token from the
// Authorization header, verifies it with verifier (signature, issuer,
// audience, expiry, as the verifier's configuration says) and turns the
// verified token into the application's principal.
//
// A request without a bearer token fails with httpx.ErrNoCredentials; a
// token the verifier rejects fails with httpx.ErrBadCredentials wrapping
// the verifier's error, so the cause can be logged while the caller only
// learns that the token is invalid. Errors from principal are returned as
// they are: return a *core.AppError or one of the httpx errors to choose
// the answer.
func New[P any](verifier *oidc.IDTokenVerifier, principal func(ctx context.Context, tok *oidc.IDToken) (P, error)) func(ctx context.Context, req *httpx.Request) (P, error) {
	return func(ctx context.Context, req *httpx.Request) (P, error) {
		var zero P
		raw, ok := bearer(header(req, "Authorization"))
		if !ok {
			return zero, httpx.ErrNoCredentials
		}
		if raw == "" {
			return zero, fmt.Errorf("%w: empty bearer token", httpx.ErrBadCredentials)
		}
		tok, err := verifier.Verify(ctx, raw)
		if err != nil {
			return zero, fmt.Errorf("%w: %w", httpx.ErrBadCredentials, err)
		}
		return principal(ctx, tok)
	}
}

func header(req *httpx.Request, name string) string {
	if req.Header == nil {
		return ""
	}
	return req.Header(name)
}

// bearer extracts the token of a Bearer authorization. The scheme is
// case-insensitive (RFC 9110). ok is false when the header holds no Bearer
// credentials at all; a Bearer scheme with nothing after it is reported as
// an empty token, which is a bad credential rather than a missing one.
func bearer(h string) (token string, ok bool) {
	h = strings.TrimSpace(h)
	const scheme = "bearer"
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	rest := h[len(scheme):]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	return strings.TrimSpace(rest), true
}
