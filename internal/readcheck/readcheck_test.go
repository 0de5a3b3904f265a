package readcheck_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentcap/agentcap/internal/readcheck"
)

type count struct {
	n   uint64
	err error
}

func (c *count) Count(context.Context) (uint64, error) { return c.n, c.err }

func TestCheck(t *testing.T) {
	ctx := context.Background()
	if readcheck.From(ctx) != nil {
		t.Fatal("From of a context without a check")
	}
	var none *readcheck.Check
	if none.Defer(&count{}, 1) {
		t.Fatal("a nil check deferred a question")
	}
	if err := none.Verify(ctx); err != nil {
		t.Fatalf("Verify of a nil check: %v", err)
	}
	cctx, chk := readcheck.With(ctx)
	if readcheck.From(cctx) != chk {
		t.Fatal("From does not return the check With made")
	}
	if err := chk.Verify(ctx); err != nil {
		t.Fatalf("Verify with nothing pending: %v", err)
	}
	a, b := &count{n: 5}, &count{n: 5}
	if !chk.Defer(a, 5) {
		t.Fatal("Defer refused a question")
	}
	if !chk.Defer(a, 5) {
		t.Fatal("Defer refused the same question again")
	}
	if chk.Defer(a, 4) || chk.Defer(b, 5) {
		t.Fatal("Defer took a second question on another value or another count")
	}
	if src, gen, ok := chk.Pending(); !ok || src != readcheck.Counter(a) || gen != 5 {
		t.Fatalf("Pending = %v, %d, %v", src, gen, ok)
	}
	if err := chk.Verify(ctx); err != nil {
		t.Fatalf("Verify, count unmoved: %v", err)
	}
	if _, _, ok := chk.Pending(); ok {
		t.Fatal("still pending after Verify")
	}
	// Settled, no question may be deferred any more.
	if chk.Defer(b, 5) {
		t.Fatal("Defer after the question was settled")
	}
	_, chk = readcheck.With(ctx)
	chk.Defer(b, 6)
	if err := chk.Verify(ctx); !errors.Is(err, readcheck.ErrMoved) {
		t.Fatalf("Verify, count moved: %v", err)
	}
	_, chk = readcheck.With(ctx)
	if chk.Defer(uncomparable{1}, 1) {
		t.Fatal("Defer took a count that cannot be compared")
	}
	down := errors.New("down")
	_, chk = readcheck.With(ctx)
	chk.Defer(&count{n: 1, err: down}, 1)
	if err := chk.Verify(ctx); !errors.Is(err, readcheck.ErrMoved) || !errors.Is(err, down) {
		t.Fatalf("Verify, count unreadable: %v; want ErrMoved with the cause", err)
	}
	_, chk = readcheck.With(ctx)
	chk.Defer(a, 5)
	chk.Settle()
	if _, _, ok := chk.Pending(); ok || chk.Defer(a, 5) {
		t.Fatal("pending after Settle, or deferring again")
	}
}

// uncomparable is a count whose values cannot be compared.
type uncomparable []uint64

func (u uncomparable) Count(context.Context) (uint64, error) { return u[0], nil }

type settler struct{}

func TestSettles(t *testing.T) {
	readcheck.DeclareSettler(&settler{})
	if !readcheck.Settles(&settler{}) || readcheck.Settles(settler{}) || readcheck.Settles(&count{}) || readcheck.Settles(nil) {
		t.Fatal("Settles")
	}
}
