package provider

import (
	"time"

	"github.com/agentcap/agentcap/agentauth"
)

// OAuthConfig configures the provider's OAuth 2.1 authorization server
// (Config.OAuth). A consent made through it creates, under the user who
// gave it, a host for the client and a delegated agent holding exactly
// the grants the user chose; the client's access tokens act as that
// agent at the MCP endpoints (Config.Endpoints) and nowhere else.
type OAuthConfig struct {
	// Enabled serves the authorization server: its metadata (RFC 8414),
	// the authorization, token and revocation endpoints, and access
	// tokens at the MCP endpoints. It needs Config.Endpoints,
	// Config.SignedInUser and, behind several instances, a shared
	// Config.PageSecret. Clients identify themselves by a Client ID
	// Metadata Document (an https URL), by one of Clients, or by a
	// dynamic registration when DynamicRegistration is set.
	Enabled bool
	// Clients are clients the application registered itself.
	Clients []OAuthClient
	// DynamicRegistration serves Dynamic Client Registration (RFC 7591)
	// for clients that cannot publish a metadata document: public
	// clients only, no secrets issued, rate limited per address.
	DynamicRegistration bool
	// RegistrationLifetime is how long a dynamic registration may start
	// authorizations while no user has consented to it. Zero means 24
	// hours.
	RegistrationLifetime time.Duration
	// RegistrationsPerMinute bounds dynamic registrations per client
	// address. Zero means 10.
	RegistrationsPerMinute int
	// MetadataFetch bounds the fetches of Client ID Metadata Documents,
	// which go through the same SSRF-safe fetcher as JWKS (private
	// addresses refused unless AllowLoopback, size and time bounded).
	MetadataFetch agentauth.FetchPolicy
	// AccessTokenLifetime is how long an access token is good. Zero
	// means 10 minutes.
	AccessTokenLifetime time.Duration
	// RefreshTokenLifetime is how long a refresh token is good; each use
	// hands out a new one and spends the old. Zero means 30 days.
	RefreshTokenLifetime time.Duration
}

// OAuthClient is a client the application registered itself.
type OAuthClient struct {
	// ID is the client_id the client sends.
	ID string
	// Name is shown on the consent page.
	Name string
	// RedirectURIs are the client's redirect URIs, compared exactly
	// (loopback http redirects on any port, RFC 8252).
	RedirectURIs []string
}
