// Package remotekeys gives the packages under agentauth the remote key
// sets of an agentauth.Verifier: its cache of fetched JWK Sets, with the
// verifier's fetch policy, refresh floor and memory bound. The provider
// checks the JWKS URLs it is given, and verifies the host JWTs of JWKS
// hosts, through it rather than with a fetcher of its own, so that one
// cache bounds what both keep and one floor bounds how often a URL is
// fetched.
package remotekeys

import "crypto/ed25519"

// Cache is the remote key set cache of a Verifier.
type Cache interface {
	// CheckURL returns why url may not be fetched under the verifier's
	// fetch policy (its scheme, credentials, an address literal that is
	// not public, a length over 2048 bytes), or nil. Addresses a host
	// name resolves to are checked when it is fetched.
	CheckURL(url string) error
	// Key returns the Ed25519 public key named kid in the key set of
	// url. A set that is not cached, or that holds no such key, is
	// fetched if the refresh floor allows: beforeFetch, when not nil,
	// is called right before the fetch, and its error is returned
	// instead of fetching. A fetch cannot be cancelled by one caller,
	// since its result is shared.
	Key(url, kid string, beforeFetch func() error) (ed25519.PublicKey, error)
	// CachedKey is Key that never fetches and never makes a set, for a
	// signer whose token can only be refused: a host that may not act.
	CachedKey(url, kid string) (ed25519.PublicKey, error)
}

// Of returns the Cache of verifier, an *agentauth.Verifier. Package
// agentauth sets it when it is initialized.
var Of func(verifier any) Cache
