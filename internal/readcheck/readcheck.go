// Package readcheck lets a store serve the records it keeps without
// first asking whether another instance has changed them, and have that
// question asked later in a request, in a round trip the request makes
// anyway.
//
// A store that keeps records under a shared count of changes (sqlstore
// with DB.SetChanges) reads the count before it serves a kept record, so
// that a write another instance has finished is never missed. When the
// request's context carries a Check (With), the store may instead serve
// records kept at count g at once and defer the question to the Check
// (Defer). Before the request is given effect (its token's id recorded,
// its call run), the Check must be settled: by a replay cache that compares the count with g in the same
// round trip that records the token's id (DeclareSettler names such
// caches), or by Verify, one read of the count. Either way, a count that
// moved means the records may be stale: the caller gets ErrMoved and
// must verify the request again with a context without a Check, which
// reads the count first.
//
// A Check belongs to one request and is used by one goroutine at a time.
package readcheck

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
)

// ErrMoved reports that the shared count of changes moved between the
// read of the records a request was served and the check of that count:
// the request must be verified again from fresh records.
var ErrMoved = errors.New("the records read for this request may have changed since: verify it again")

// Check is the deferred question of one request: whether the shared count
// of changes still has the value its kept records were read at.
type Check struct {
	pending, settled bool
	source           Counter
	gen              uint64
}

// Counter is a shared count of changes (sqlstore.Changes).
type Counter interface {
	Count(ctx context.Context) (uint64, error)
}

type key struct{}

// With returns ctx carrying a new Check, and that Check.
func With(ctx context.Context) (context.Context, *Check) {
	c := &Check{}
	return context.WithValue(ctx, key{}, c), c
}

// From returns the Check ctx carries, or nil.
func From(ctx context.Context) *Check {
	c, _ := ctx.Value(key{}).(*Check)
	return c
}

// Defer records that records kept at value gen of source (the store's
// count of changes, compared by identity) are about to be served
// unchecked. It reports whether they may be: false when c is nil or was
// settled already (a request defers one question, asked once), when
// source is not comparable, or when c already defers a question about
// another count or another value of it. The caller then reads the count
// first, as without a Check.
func (c *Check) Defer(source Counter, gen uint64) bool {
	switch {
	case c == nil || c.settled || !reflect.TypeOf(source).Comparable():
		return false
	case c.pending:
		return c.source == source && c.gen == gen
	}
	c.pending, c.source, c.gen = true, source, gen
	return true
}

// Pending returns the count and value the question is about, when one is
// deferred and not yet settled.
func (c *Check) Pending() (source Counter, gen uint64, ok bool) {
	if c == nil || !c.pending {
		return nil, 0, false
	}
	return c.source, c.gen, true
}

// Settle marks the question answered: the count was found unmoved, in
// a round trip of the caller's.
func (c *Check) Settle() {
	if c != nil && c.pending {
		c.pending, c.settled = false, true
	}
}

// Verify answers a deferred question by reading the count now: nil when
// none is pending or the count has not moved, ErrMoved when it has or
// cannot be read (verifying again then reads the records from the
// database, as a store does when its count cannot be read).
func (c *Check) Verify(ctx context.Context) error {
	if c == nil || !c.pending {
		return nil
	}
	n, err := c.source.Count(ctx)
	if err != nil {
		return fmt.Errorf("%w (%w)", ErrMoved, err)
	}
	if n != c.gen {
		return ErrMoved
	}
	c.pending, c.settled = false, true
	return nil
}

// settlers are the types of the replay caches that settle read checks
// themselves (DeclareSettler).
var settlers sync.Map

// DeclareSettler declares that the replay caches of v's type settle a
// pending Check of the context they are given before they record an id,
// and record none when the count moved (returning an error that wraps
// ErrMoved). A replay cache of another type is preceded by Verify. Call
// it from the declaring package's init.
func DeclareSettler(v any) { settlers.Store(reflect.TypeOf(v), struct{}{}) }

// Settles reports whether v is of a type declared by DeclareSettler.
func Settles(v any) bool {
	_, ok := settlers.Load(reflect.TypeOf(v))
	return ok
}
