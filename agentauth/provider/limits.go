package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
)

// RateLimits are the provider's request limits (protocol §8.13). Zero
// limits take the defaults named on each field; Off turns limiting off.
type RateLimits struct {
	// Limiter decides; nil means ratelimit.NewMemory(0). Applications on
	// several machines share one through package redisstore.
	Limiter ratelimit.Limiter
	// Off disables every limit, for tests that measure something else.
	Off bool
	// PerIP limits every request per client address: 300 a minute.
	PerIP ratelimit.Limit
	// NewHostPerIP limits registrations by hosts the provider has not
	// seen, per client address, the protocol's most abusable request:
	// 20 an hour.
	NewHostPerIP ratelimit.Limit
	// KeyFetchPerIP and KeyFetchPerURL limit the fetches of a new host's
	// host_jwks_url that registrations cause, per client address (20 an
	// hour) and per URL (10 an hour, the URL counted by its SHA-256):
	// the fetch comes before the signature is checked, so an
	// unauthenticated caller chooses both the URL and how often. A
	// registration answered from the cached key set is not counted. Past
	// either, the registration is 429 rate_limited, and nothing is
	// fetched.
	KeyFetchPerIP  ratelimit.Limit
	KeyFetchPerURL ratelimit.Limit
	// PerHost limits host-authenticated requests of one host, and the
	// agent-authenticated requests of all its agents: 600 a minute.
	PerHost ratelimit.Limit
	// PerAgent limits one agent's requests: 120 a minute.
	PerAgent ratelimit.Limit
	// PerUser limits the requests of all agents acting for one user:
	// 1200 a minute.
	PerUser ratelimit.Limit
	// PerCapability limits executions of a capability per agent, by
	// capability name: tighter limits for riskier capabilities. Absent
	// names are limited only by the other dimensions.
	PerCapability map[string]ratelimit.Limit
	// CIBAPerHost limits the CIBA approval requests of one host, each of
	// which may interrupt a person (CIBA Core §14): 30 an hour. Past it
	// the request is 429 rate_limited.
	CIBAPerHost ratelimit.Limit
	// NotifyPerUser limits the CIBA notifications sent to one user: 10 an
	// hour. Past it a request is still made and listed on the user's
	// page, but not announced (notification fatigue).
	NotifyPerUser ratelimit.Limit
	// UserAPIPerUser limits the signed-in user's API and page requests:
	// 300 a minute.
	UserAPIPerUser ratelimit.Limit
	// ClientIP returns a request's client address. Nil means its
	// RemoteAddr; behind a proxy, read the proxy's header here.
	ClientIP func(r *http.Request) string
}

type limits struct {
	cfg RateLimits
}

func newLimits(c RateLimits, now func() time.Time) (*limits, error) {
	if c.Limiter == nil {
		c.Limiter = ratelimit.NewMemory(0).WithClock(now)
	}
	defaults := []struct {
		l   *ratelimit.Limit
		def ratelimit.Limit
	}{
		{&c.PerIP, ratelimit.PerMinute(300)},
		{&c.NewHostPerIP, ratelimit.PerHour(20)},
		{&c.KeyFetchPerIP, ratelimit.PerHour(20)},
		{&c.KeyFetchPerURL, ratelimit.PerHour(10)},
		{&c.PerHost, ratelimit.PerMinute(600)},
		{&c.PerAgent, ratelimit.PerMinute(120)},
		{&c.PerUser, ratelimit.PerMinute(1200)},
		{&c.CIBAPerHost, ratelimit.PerHour(30)},
		{&c.NotifyPerUser, ratelimit.PerHour(10)},
		{&c.UserAPIPerUser, ratelimit.PerMinute(300)},
	}
	for _, d := range defaults {
		if *d.l == (ratelimit.Limit{}) {
			*d.l = d.def
		}
		if err := d.l.Validate(); err != nil {
			return nil, fmt.Errorf("provider: RateLimits: %w", err)
		}
	}
	for name, l := range c.PerCapability {
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("provider: RateLimits.PerCapability[%q]: %w", name, err)
		}
	}
	if c.ClientIP == nil {
		c.ClientIP = func(r *http.Request) string { return r.RemoteAddr }
	}
	return &limits{cfg: c}, nil
}

// allow checks rules and turns a refusal into 429 rate_limited. A
// limiter that cannot decide refuses with 503: a limit that fails open
// is no limit when its store is down.
func (l *limits) allow(ctx context.Context, what string, rules ...ratelimit.Rule) error {
	if l.cfg.Off || len(rules) == 0 {
		return nil
	}
	d, err := ratelimit.AllowAll(ctx, l.cfg.Limiter, rules...)
	if err != nil {
		return agentcap.NewError(agentcap.CodeTemporarilyUnavailable, "the rate limiter is unavailable; retry later").
			With(ratelimit.RetryAfterField, 1).WithCause(err)
	}
	if !d.Allowed {
		return ratelimit.Error(d, "too many requests for this "+what+"; retry later")
	}
	return nil
}

func (l *limits) ipRule(r *http.Request, limit ratelimit.Limit) []ratelimit.Rule {
	key, err := ratelimit.IPKey(l.cfg.ClientIP(r))
	if err != nil {
		// An address that does not parse still gets a bucket: one
		// shared by every such caller.
		key = ratelimit.Key(ratelimit.DimIP, "unknown")
	}
	return []ratelimit.Rule{{Key: key, Limit: limit}}
}

// wrapIP limits every request of h per client address.
func (l *limits) wrapIP(h http.Handler, p *Provider) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := l.allow(r.Context(), "address", l.ipRule(r, l.cfg.PerIP)...); err != nil {
			p.writeError(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (l *limits) host(ctx context.Context, hostID string) error {
	return l.allow(ctx, "host", ratelimit.Rule{Key: ratelimit.Key(ratelimit.DimHost, hostID), Limit: l.cfg.PerHost})
}

func (l *limits) newHost(r *http.Request) error {
	rules := l.ipRule(r, l.cfg.NewHostPerIP)
	rules[0].Key = ratelimit.Key("new_host", rules[0].Key)
	return l.allow(r.Context(), "address", rules...)
}

// keyFetch charges a fetch of url, caused by the request r, to its
// address and to the URL, in that order, so that one address spends its
// own budget before any URL's.
func (l *limits) keyFetch(r *http.Request, url string) error {
	rules := l.ipRule(r, l.cfg.KeyFetchPerIP)
	rules[0].Key = ratelimit.Key("jwks_fetch", rules[0].Key)
	sum := sha256.Sum256([]byte(url))
	rules = append(rules, ratelimit.Rule{Key: ratelimit.Key("jwks_url", base64.RawURLEncoding.EncodeToString(sum[:])), Limit: l.cfg.KeyFetchPerURL})
	return l.allow(r.Context(), "address or key URL", rules...)
}

func (l *limits) agent(ctx context.Context, agentID, hostID, userID string) error {
	rules := []ratelimit.Rule{
		{Key: ratelimit.Key(ratelimit.DimAgent, agentID), Limit: l.cfg.PerAgent},
		{Key: ratelimit.Key(ratelimit.DimHost, hostID), Limit: l.cfg.PerHost},
	}
	if userID != "" {
		rules = append(rules, ratelimit.Rule{Key: ratelimit.Key(ratelimit.DimUser, userID), Limit: l.cfg.PerUser})
	}
	return l.allow(ctx, "agent", rules...)
}

func (l *limits) capability(ctx context.Context, name, agentID string) error {
	lim, ok := l.cfg.PerCapability[name]
	if !ok {
		return nil
	}
	return l.allow(ctx, "capability", ratelimit.Rule{Key: ratelimit.Key(ratelimit.DimCapability, name, agentID), Limit: lim})
}

func (l *limits) ciba(ctx context.Context, hostID string) error {
	return l.allow(ctx, "host's CIBA requests", ratelimit.Rule{Key: ratelimit.Key("ciba", hostID), Limit: l.cfg.CIBAPerHost})
}

func (l *limits) notify(ctx context.Context, userID string) error {
	return l.allow(ctx, "user's notifications", ratelimit.Rule{Key: ratelimit.Key("notify", userID), Limit: l.cfg.NotifyPerUser})
}

func (l *limits) user(ctx context.Context, userID string) error {
	return l.allow(ctx, "user", ratelimit.Rule{Key: ratelimit.Key(ratelimit.DimUser, "api", userID), Limit: l.cfg.UserAPIPerUser})
}
