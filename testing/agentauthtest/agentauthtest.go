// Package agentauthtest provides Agent Auth test identities: Ed25519 hosts
// and agents, their directory records, agent and host JWTs (valid ones and
// deliberately broken ones), and directory fixtures, for unit tests of code
// that sits behind package agentauth.
//
// Hosts, agents and tokens are described by struct literals whose zero
// fields mean the usual thing, in the manner of net/http: NewHost makes a
// Host, Host.NewAgent an Agent, and Agent.Token and Host.Token mint the
// token a Token describes (by default the one the published client sends;
// set a field for an unusual or broken one).
//
// Everything is deterministic when it can be: give a host a seeded random
// source (Host.Rand) and a clock (Host.Clock), and its keys, its agents'
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

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
)

// Host is a test host: an Ed25519 identity that signs host+jwt tokens and
// owns agents. Describe one with a literal and make it with NewHost; its
// exported fields become its directory record and may be changed before
// the record is taken. A Host is safe for concurrent use once set up.
type Host struct {
	// ID is the host's identifier in the directory.
	ID string
	// Key is the host's signing key. NewHost draws one from Rand when it
	// is nil.
	Key ed25519.PrivateKey
	// UserID is the user the host is linked to; empty for none.
	UserID string
	// Status is the host state; NewHost sets agentcap.StatusActive when
	// it is empty.
	Status string
	// DefaultCapabilities are the host's default capability names.
	DefaultCapabilities []string
	// JWKSURL, when set, makes the record name this URL instead of
	// carrying the public key inline. Serve JWKS() there.
	JWKSURL string
	// Rand is the source of key seeds and token ids for the host and its
	// agents. A seeded source, such as math/rand/v2's ChaCha8, makes keys
	// and tokens the same bytes on every run. Nil means crypto/rand.
	Rand io.Reader
	// Clock gives the iat of the tokens the host and its agents mint. Nil
	// means time.Now.
	Clock func() time.Time
}

// Agent is a test agent under a Host, with its own Ed25519 key. Describe
// one with a literal and make it with Host.NewAgent; its exported fields
// become its directory record. Grant changes the agent and must not run
// concurrently with its other methods; Token and Record may run
// concurrently with each other.
type Agent struct {
	// ID is the agent's identifier (the "sub" of its tokens).
	ID string
	// Key is the agent's signing key. NewAgent draws one from the host's
	// Rand when it is nil.
	Key ed25519.PrivateKey
	// Host is the agent's host, set by NewAgent.
	Host *Host
	// UserID is the user the agent acts for. NewAgent gives a delegated
	// agent its host's user when it is empty; clear it afterwards for a
	// delegated agent that acts for its host's user without naming one.
	UserID string
	// Mode is agentcap.ModeDelegated or agentcap.ModeAutonomous; NewAgent
	// sets ModeDelegated when it is empty.
	Mode string
	// Status is the agent state; NewAgent sets agentcap.StatusActive when
	// it is empty.
	Status string
	// Grants are the agent's capability grants, as they are: Grant adds
	// active ones, a literal may hold pending, denied or expiring ones.
	Grants []agentauth.Grant
	// JWKSURL, when set, makes the record name this URL and the key's
	// thumbprint as kid instead of carrying the public key inline. Serve
	// JWKS() there.
	JWKSURL string
}

// NewHost returns a copy of h ready to mint tokens: active unless its
// Status says otherwise, with a fresh key drawn from h.Rand unless it has
// one.
//
//	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "user_alice"})
func NewHost(h Host) *Host {
	if h.Status == "" {
		h.Status = agentcap.StatusActive
	}
	h.DefaultCapabilities = slices.Clone(h.DefaultCapabilities)
	if h.Key == nil {
		h.Key = h.newKey()
	}
	return &h
}

// NewAgent returns a copy of a as an agent of h: delegated and active
// unless its Mode and Status say otherwise, acting for h's user when it is
// delegated and names no user, with a fresh key drawn from h.Rand unless
// it has one.
//
//	robot := host.NewAgent(agentauthtest.Agent{ID: "agt_robot", Mode: agentcap.ModeAutonomous})
func (h *Host) NewAgent(a Agent) *Agent {
	a.Host = h
	if a.Mode == "" {
		a.Mode = agentcap.ModeDelegated
	}
	if a.Status == "" {
		a.Status = agentcap.StatusActive
	}
	if a.UserID == "" && a.Mode == agentcap.ModeDelegated {
		a.UserID = h.UserID
	}
	a.Grants = cloneGrants(a.Grants)
	if a.Key == nil {
		a.Key = h.newKey()
	}
	return &a
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
	g := agentauth.Grant{Capability: capability, Status: agentcap.StatusActive}
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

// randMu serializes reads of the hosts' random sources, which need not be
// safe for concurrent use (a ChaCha8 is not) and may be shared by hosts.
var randMu sync.Mutex

// randomBytes reads n bytes from h's random source.
func (h *Host) randomBytes(n int) []byte {
	b := make([]byte, n)
	r := h.Rand
	if r == nil {
		r = rand.Reader
	}
	randMu.Lock()
	defer randMu.Unlock()
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
	if h.Clock != nil {
		return h.Clock()
	}
	return time.Now()
}
