// Package ratelimit limits request rates per agent, host, user, capability
// and client address, as the Agent Auth protocol requires of providers and
// locations (§8.13), and turns a refusal into the protocol's answer: 429
// rate_limited with Retry-After.
//
// A Limiter decides for one key at a time. Memory decides in process;
// the Limiter of package redisstore shares the decisions of several
// instances through Redis. Both use the generic cell rate algorithm (GCRA): a limit of N
// requests per Window lets a burst of N through, then one request every
// Window/N: over any span of time t, at most N + t*N/Window requests pass,
// and never more than N at one instant (a fixed window counter lets 2N
// through at a window boundary). It keeps one timestamp per key and needs
// no background work.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Limit allows N requests per Window.
type Limit struct {
	N      int
	Window time.Duration
}

// PerMinute returns a limit of n requests a minute.
func PerMinute(n int) Limit { return Limit{N: n, Window: time.Minute} }

// PerHour returns a limit of n requests an hour.
func PerHour(n int) Limit { return Limit{N: n, Window: time.Hour} }

// String implements fmt.Stringer: "60/1m0s".
func (l Limit) String() string { return fmt.Sprintf("%d/%v", l.N, l.Window) }

// Validate reports a limit no request could be counted against: N or
// Window not positive, or a Window too short to share out among N
// requests at nanosecond resolution.
func (l Limit) Validate() error {
	switch {
	case l.N <= 0:
		return fmt.Errorf("ratelimit: limit %v: N must be positive", l)
	case l.Window <= 0:
		return fmt.Errorf("ratelimit: limit %v: Window must be positive", l)
	case l.Window/time.Duration(l.N) <= 0:
		return fmt.Errorf("ratelimit: limit %v: Window is shorter than N nanoseconds", l)
	}
	return nil
}

// period is the time one request uses up: Window/N.
func (l Limit) period() time.Duration { return l.Window / time.Duration(l.N) }

// Decision is a Limiter's answer for one request.
type Decision struct {
	// Allowed reports whether the request may proceed. A refused request
	// is not counted.
	Allowed bool
	// Remaining is how many more requests would be allowed right now.
	Remaining int
	// RetryAfter is, for a refused request, how long until one would be
	// allowed; zero when allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the full burst of N is available again.
	ResetAfter time.Duration
}

// Limiter decides whether one more request under key fits limit. A key
// should always be used with the same limit: its state is the time its
// bucket is next empty, which another limit reads differently.
//
// An error means no decision was made (the limiter is full, Redis is
// unreachable). Whether to refuse or admit then is the caller's policy;
// refusing with 503 keeps the limit, admitting keeps the service.
type Limiter interface {
	Allow(ctx context.Context, key string, limit Limit) (Decision, error)
}

// gcra decides a request at now for a key whose theoretical arrival time
// is tat (zero or past for a key at rest), and returns the new tat to
// store when the request is allowed. All times are in one unit (the
// caller's clock resolution); period and window are in the same unit.
func gcra(tat, now, period, window int64) (int64, Decision) {
	if tat < now {
		tat = now
	}
	next := tat + period
	if allowAt := next - window; now < allowAt {
		return tat, Decision{RetryAfter: time.Duration(allowAt - now), ResetAfter: time.Duration(tat - now)}
	}
	return next, Decision{
		Allowed:    true,
		Remaining:  int((window - (next - now)) / period),
		ResetAfter: time.Duration(next - now),
	}
}

// Rule is one limit on one key, for AllowAll.
type Rule struct {
	Key   string
	Limit Limit
}

// AllowAll checks rules in order, for a request counted in several
// dimensions at once (its agent, its host, its capability). It stops at
// the first refusal and returns it; rules after it are not counted, rules
// before it are. When all allow, the decision has the smallest Remaining
// and the largest ResetAfter among them.
func AllowAll(ctx context.Context, l Limiter, rules ...Rule) (Decision, error) {
	if len(rules) == 0 {
		return Decision{}, errors.New("ratelimit: AllowAll needs at least one rule")
	}
	var out Decision
	for i, r := range rules {
		d, err := l.Allow(ctx, r.Key, r.Limit)
		if err != nil || !d.Allowed {
			return d, err
		}
		if i == 0 || d.Remaining < out.Remaining {
			out.Remaining = d.Remaining
		}
		out.ResetAfter = max(out.ResetAfter, d.ResetAfter)
	}
	out.Allowed = true
	return out, nil
}
