// Package remotekeys gives the packages under agentauth the remote key
// sets of an agentauth.Verifier: its cache of fetched JWK Sets, with the
// verifier's fetch policy, refresh floor and memory bound. The provider
// checks the JWKS URLs it is given, and verifies the host JWTs of JWKS
// hosts, through it rather than with a fetcher of its own, so that one
// cache bounds what both keep and one floor bounds how often a URL is
// fetched.
package remotekeys

// Cache is the remote key set cache of a Verifier.
type Cache interface {
	// CheckURL returns why url may not be fetched under the verifier's
	// fetch policy (its scheme, credentials, an address literal that is
	// not public, a length over 2048 bytes), or nil. Addresses a host
	// name resolves to are checked when it is fetched.
	CheckURL(url string) error
}

// Of returns the Cache of verifier, an *agentauth.Verifier. Package
// agentauth sets it when it is initialized.
var Of func(verifier any) Cache
