// Package agentauthtest provides Agent Auth test identities: Ed25519 hosts
// and agents, their directory records, agent and host JWTs (valid ones and
// deliberately broken ones), and directory fixtures, for unit tests of code
// that sits behind package agentauth.
//
// Everything is deterministic when it can be: give a host a seeded random
// source (WithRandom) and a clock (WithClock), and its keys, its agents'
// keys and every token it mints are the same bytes on every run.
//
// Server and Execute run the whole Agent Auth execute path of an executor
// in the manner of net/http/httptest: a loopback server with a verifier
// over an in-memory directory, fresh test agents holding the grants under
// test, real tokens and real requests.
//
// The functions in this package panic instead of returning errors where a
// failure can only come from a broken test (an unreadable random source, a
// claim value that cannot be encoded), in the manner of net/http/httptest.
package agentauthtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/agentcap/agentcap/agentauth"
)

// Host is a test host: an Ed25519 identity that signs host+jwt tokens and
// owns agents. Its exported fields become its directory record and may be
// changed before the record is taken. A Host is safe for concurrent use
// once set up.
type Host struct {
	// ID is the host's identifier in the directory.
	ID string
	// Key is the host's signing key.
	Key ed25519.PrivateKey
	// UserID is the user the host is linked to; empty for none.
	UserID string
	// Status is the host state; StatusActive unless set.
	Status string
	// DefaultCapabilities are the host's default capability names.
	DefaultCapabilities []string
	// JWKSURL, when set, makes the record name this URL instead of
	// carrying the public key inline.
	JWKSURL string

	mu    sync.Mutex // guards rand
	rand  io.Reader
	clock func() time.Time
}

// Agent is a test agent under a Host, with its own Ed25519 key. Its
// exported fields become its directory record. Grant and AddGrant change
// the agent and must not run concurrently with its other methods; Token
// and Record may run concurrently with each other.
type Agent struct {
	// ID is the agent's identifier (the "sub" of its tokens).
	ID string
	// Key is the agent's signing key.
	Key ed25519.PrivateKey
	// Host is the agent's host.
	Host *Host
	// UserID is the user the agent acts for. For a delegated agent it
	// defaults to the host's user.
	UserID string
	// Mode is ModeDelegated unless set.
	Mode string
	// Status is StatusActive unless set.
	Status string
	// Grants are the agent's capability grants.
	Grants []agentauth.Grant
	// JWKSURL, when set, makes the record name this URL and the key's
	// thumbprint as kid instead of carrying the public key inline.
	JWKSURL string

	userSet bool
}

// HostOption configures NewHost.
type HostOption interface{ applyHost(*Host) }

// AgentOption configures Host.NewAgent.
type AgentOption interface{ applyAgent(*Agent) }

// Option configures either a host or an agent.
type Option struct {
	host  func(*Host)
	agent func(*Agent)
}

func (o Option) applyHost(h *Host) {
	if o.host != nil {
		o.host(h)
	}
}

func (o Option) applyAgent(a *Agent) {
	if o.agent != nil {
		o.agent(a)
	}
}

type hostOption func(*Host)

func (f hostOption) applyHost(h *Host) { f(h) }

type agentOption func(*Agent)

func (f agentOption) applyAgent(a *Agent) { f(a) }

// WithStatus sets the state of a host or an agent, for example
// agentauth.StatusRevoked.
func WithStatus(status string) Option {
	return Option{
		host:  func(h *Host) { h.Status = status },
		agent: func(a *Agent) { a.Status = status },
	}
}

// WithUser links a host or an agent to a user id.
func WithUser(userID string) Option {
	return Option{
		host:  func(h *Host) { h.UserID = userID },
		agent: func(a *Agent) { a.UserID, a.userSet = userID, true },
	}
}

// WithKey gives a host or an agent a fixed key instead of a generated one.
func WithKey(key ed25519.PrivateKey) Option {
	return Option{
		host:  func(h *Host) { h.Key = key },
		agent: func(a *Agent) { a.Key = key },
	}
}

// WithJWKSURL makes the directory record of a host or an agent point at a
// JWKS URL instead of carrying the public key inline. Serve JWKS() there.
func WithJWKSURL(url string) Option {
	return Option{
		host:  func(h *Host) { h.JWKSURL = url },
		agent: func(a *Agent) { a.JWKSURL = url },
	}
}

// WithDefaultCapabilities sets a host's default capabilities.
func WithDefaultCapabilities(names ...string) HostOption {
	return hostOption(func(h *Host) { h.DefaultCapabilities = slices.Clone(names) })
}

// WithRandom sets the source of key seeds and token ids for a host and its
// agents. A seeded source, such as math/rand/v2's ChaCha8, makes keys and
// tokens reproducible. The default is crypto/rand.
func WithRandom(r io.Reader) HostOption {
	return hostOption(func(h *Host) { h.rand = r })
}

// WithClock sets the clock used for the iat of tokens minted by a host and
// its agents. The default is time.Now.
func WithClock(now func() time.Time) HostOption {
	return hostOption(func(h *Host) { h.clock = now })
}

// WithMode sets an agent's mode, agentauth.ModeDelegated or
// agentauth.ModeAutonomous. An autonomous agent has no user unless
// WithUser says otherwise.
func WithMode(mode string) AgentOption {
	return agentOption(func(a *Agent) { a.Mode = mode })
}

// WithGrants gives an agent grants as they are, for grants that Grant does
// not make: pending, denied or expiring ones.
func WithGrants(grants ...agentauth.Grant) AgentOption {
	return agentOption(func(a *Agent) { a.Grants = append(a.Grants, grants...) })
}

// NewHost returns a test host with id, an active status and a fresh key
// (unless WithKey is given).
func NewHost(id string, opts ...HostOption) *Host {
	h := &Host{ID: id, Status: agentauth.StatusActive}
	for _, o := range opts {
		o.applyHost(h)
	}
	if h.Key == nil {
		h.Key = h.newKey()
	}
	return h
}

// NewAgent returns a test agent of h with id: delegated, active, acting
// for h's user, with a fresh key drawn from h's random source (unless
// WithKey is given) and no grants.
func (h *Host) NewAgent(id string, opts ...AgentOption) *Agent {
	a := &Agent{ID: id, Host: h, Mode: agentauth.ModeDelegated, Status: agentauth.StatusActive}
	for _, o := range opts {
		o.applyAgent(a)
	}
	if !a.userSet && a.Mode == agentauth.ModeDelegated {
		a.UserID = h.UserID
	}
	if a.Key == nil {
		a.Key = h.newKey()
	}
	return a
}

// Record returns the directory record of h: its public key as an inline
// JWK, or its JWKS URL.
func (h *Host) Record() *agentauth.Host {
	r := &agentauth.Host{
		ID:                  h.ID,
		UserID:              h.UserID,
		Status:              h.Status,
		DefaultCapabilities: slices.Clone(h.DefaultCapabilities),
	}
	if h.JWKSURL != "" {
		r.JWKSURL = h.JWKSURL
	} else {
		r.PublicKey = h.PublicJWK()
	}
	return r
}

// Thumbprint returns the RFC 7638 thumbprint of h's public key: the
// base64url SHA-256 of {"crv","kty","x"}. It is the "iss" of host JWTs and
// the "kid" of tokens h signs.
func (h *Host) Thumbprint() string { return Thumbprint(h.Key.Public().(ed25519.PublicKey)) }

// PublicJWK returns h's public key as a JWK with its thumbprint as kid.
func (h *Host) PublicJWK() json.RawMessage { return PublicJWK(h.Key.Public().(ed25519.PublicKey)) }

// JWKS returns a JWK Set holding h's public key, to serve at h.JWKSURL.
func (h *Host) JWKS() []byte { return jwks(h.PublicJWK()) }

// Record returns the directory record of a: its grants, and its public key
// as an inline JWK or its JWKS URL with the key's thumbprint as kid.
func (a *Agent) Record() *agentauth.Agent {
	r := &agentauth.Agent{
		ID:     a.ID,
		HostID: a.Host.ID,
		UserID: a.UserID,
		Mode:   a.Mode,
		Status: a.Status,
		Grants: cloneGrants(a.Grants),
	}
	if a.JWKSURL != "" {
		r.JWKSURL, r.KID = a.JWKSURL, a.Thumbprint()
	} else {
		r.PublicKey = a.PublicJWK()
	}
	return r
}

// Grant adds an active grant of capability to a, with constraints encoded
// as JSON (nil for an unconstrained grant), and returns a. Constraint
// values are exact values or operator objects, as in agentauth:
//
//	agent.Grant("transfer_money", map[string]any{
//		"amount":   map[string]any{"max": 1000},
//		"currency": "USD",
//	})
func (a *Agent) Grant(capability string, constraints map[string]any) *Agent {
	g := agentauth.Grant{Capability: capability, Status: agentauth.StatusActive}
	if constraints != nil {
		g.Constraints = make(map[string]json.RawMessage, len(constraints))
		for field, v := range constraints {
			raw, err := json.Marshal(v)
			if err != nil {
				panic(fmt.Sprintf("agentauthtest: constraint %q of %q: %v", field, capability, err))
			}
			g.Constraints[field] = raw
		}
	}
	return a.AddGrant(g)
}

// AddGrant adds g to a as it is and returns a.
func (a *Agent) AddGrant(g agentauth.Grant) *Agent {
	a.Grants = append(a.Grants, g)
	return a
}

// Thumbprint returns the RFC 7638 thumbprint of a's public key, the kid of
// its tokens.
func (a *Agent) Thumbprint() string { return Thumbprint(a.Key.Public().(ed25519.PublicKey)) }

// PublicJWK returns a's public key as a JWK with its thumbprint as kid.
func (a *Agent) PublicJWK() json.RawMessage { return PublicJWK(a.Key.Public().(ed25519.PublicKey)) }

// JWKS returns a JWK Set holding a's public key, to serve at a.JWKSURL.
func (a *Agent) JWKS() []byte { return jwks(a.PublicJWK()) }

// Thumbprint returns the RFC 7638 thumbprint of an Ed25519 public key: the
// unpadded base64url SHA-256 of its required JWK members in lexicographic
// order, {"crv":"Ed25519","kty":"OKP","x":...}.
func Thumbprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64(pub) + `"}`))
	return b64(sum[:])
}

// PublicJWK returns pub as a JWK: {"crv","kid","kty","x"} with the key's
// thumbprint as kid.
func PublicJWK(pub ed25519.PublicKey) json.RawMessage {
	return json.RawMessage(`{"crv":"Ed25519","kid":"` + Thumbprint(pub) + `","kty":"OKP","x":"` + b64(pub) + `"}`)
}

func jwks(jwk json.RawMessage) []byte {
	return []byte(`{"keys":[` + string(jwk) + `]}`)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func cloneGrants(gs []agentauth.Grant) []agentauth.Grant {
	out := make([]agentauth.Grant, len(gs))
	for i, g := range gs {
		out[i] = g
		if g.Constraints != nil {
			out[i].Constraints = make(map[string]json.RawMessage, len(g.Constraints))
			for k, v := range g.Constraints {
				out[i].Constraints[k] = slices.Clone(v)
			}
		}
		if g.ExpiresAt != nil {
			t := *g.ExpiresAt
			out[i].ExpiresAt = &t
		}
	}
	return out
}

// randomBytes reads n bytes from h's random source.
func (h *Host) randomBytes(n int) []byte {
	b := make([]byte, n)
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rand
	if r == nil {
		r = rand.Reader
	}
	if _, err := io.ReadFull(r, b); err != nil {
		panic("agentauthtest: reading the random source: " + err.Error())
	}
	return b
}

// newKey derives a key from a seed drawn from h's random source, so that a
// seeded source gives the same keys on every run.
func (h *Host) newKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(h.randomBytes(ed25519.SeedSize))
}

func (h *Host) now() time.Time {
	if h.clock != nil {
		return h.clock()
	}
	return time.Now()
}
