package core

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type ctxKey struct{}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func waitClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("Done was not closed")
	}
}

func TestDeadlineContextReportsDeadlineAtOnce(t *testing.T) {
	d := time.Now().Add(time.Hour)
	c := newDeadlineContext(context.Background(), d)
	defer c.end(time.Now())
	if got, ok := c.Deadline(); !ok || !got.Equal(d) {
		t.Errorf("Deadline = %v, %v; want %v", got, ok, d)
	}
	if c.state.Load() != nil {
		t.Error("Deadline armed the timer")
	}

	// A parent with an earlier deadline keeps it.
	early := time.Now().Add(time.Minute)
	parent, cancel := context.WithDeadline(context.Background(), early)
	defer cancel()
	c2 := newDeadlineContext(parent, d)
	defer c2.end(time.Now())
	if got, _ := c2.Deadline(); !got.Equal(early) {
		t.Errorf("Deadline = %v, want the parent's %v", got, early)
	}
}

func TestDeadlineContextErrWithoutTimer(t *testing.T) {
	c := newDeadlineContext(context.Background(), time.Now().Add(20*time.Millisecond))
	defer c.end(time.Now())
	if err := c.Err(); err != nil {
		t.Fatalf("Err = %v before the deadline", err)
	}
	if c.state.Load() != nil {
		t.Fatal("Err armed the timer while nothing was wrong")
	}
	time.Sleep(30 * time.Millisecond)
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err = %v after the deadline, want DeadlineExceeded", err)
	}
	if !isClosed(c.Done()) {
		t.Error("Done is open after Err reported the deadline")
	}
	if cause := context.Cause(c); !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("Cause = %v, want DeadlineExceeded", cause)
	}
	c.end(time.Now())
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err = %v after the end, want DeadlineExceeded to stay", err)
	}
}

func TestDeadlineContextDoneArmsTheTimer(t *testing.T) {
	c := newDeadlineContext(context.Background(), time.Now().Add(20*time.Millisecond))
	defer c.end(time.Now())
	done := c.Done()
	if c.state.Load() == nil {
		t.Fatal("Done did not arm the timer")
	}
	if c.Done() != done {
		t.Error("Done returned another channel the second time")
	}
	if isClosed(done) || c.Err() != nil {
		t.Fatal("done before the deadline")
	}
	waitClosed(t, done)
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err = %v, want DeadlineExceeded", err)
	}
}

func TestDeadlineContextParentCanceled(t *testing.T) {
	for _, armed := range []bool{false, true} {
		parent, cancel := context.WithCancelCause(context.Background())
		c := newDeadlineContext(parent, time.Now().Add(time.Hour))
		var done <-chan struct{}
		if armed {
			done = c.Done()
		}
		cause := errors.New("client went away")
		cancel(cause)
		if armed {
			waitClosed(t, done)
		}
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("armed=%v: Err = %v, want Canceled", armed, err)
		}
		if !isClosed(c.Done()) {
			t.Errorf("armed=%v: Done is open after the parent was canceled", armed)
		}
		if got := context.Cause(c); got != cause {
			t.Errorf("armed=%v: Cause = %v, want the parent's", armed, got)
		}
		c.end(time.Now())
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("armed=%v: Err = %v after the end", armed, err)
		}
	}
}

func TestDeadlineContextEnd(t *testing.T) {
	for _, armed := range []bool{false, true} {
		c := newDeadlineContext(context.Background(), time.Now().Add(time.Hour))
		var done <-chan struct{}
		if armed {
			done = c.Done()
		}
		c.end(time.Now())
		if armed {
			waitClosed(t, done)
		}
		if !isClosed(c.Done()) {
			t.Errorf("armed=%v: Done is open after the end", armed)
		}
		if err := c.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("armed=%v: Err = %v after the end, want Canceled", armed, err)
		}
	}

	// The deadline passed before the end: the end does not hide it.
	c := newDeadlineContext(context.Background(), time.Now().Add(-time.Second))
	c.end(time.Now())
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err = %v, want DeadlineExceeded", err)
	}
}

func TestDeadlineContextValue(t *testing.T) {
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	c := newDeadlineContext(parent, time.Now().Add(time.Hour))
	if got := c.Value(ctxKey{}); got != "v" {
		t.Errorf("Value = %v before arming", got)
	}
	c.Done()
	if got := c.Value(ctxKey{}); got != "v" {
		t.Errorf("Value = %v after arming", got)
	}
	c.end(time.Now())
	if got := c.Value(ctxKey{}); got != "v" {
		t.Errorf("Value = %v after the end", got)
	}
	if c.Value("other") != nil {
		t.Error("Value of an unknown key is not nil")
	}
}

// TestDeadlineContextDerived checks that contexts derived from the
// execution's context, and AfterFunc callbacks, follow it.
func TestDeadlineContextDerived(t *testing.T) {
	c := newDeadlineContext(context.Background(), time.Now().Add(time.Hour))
	child, cancel := context.WithCancel(c)
	defer cancel()
	ran := make(chan struct{})
	context.AfterFunc(c, func() { close(ran) })
	if child.Err() != nil {
		t.Fatal("child done early")
	}
	c.end(time.Now())
	waitClosed(t, child.Done())
	waitClosed(t, ran)
	if !errors.Is(child.Err(), context.Canceled) {
		t.Errorf("child Err = %v", child.Err())
	}

	short := newDeadlineContext(context.Background(), time.Now().Add(10*time.Millisecond))
	defer short.end(time.Now())
	grandchild, cancel2 := context.WithTimeout(short, time.Hour)
	defer cancel2()
	waitClosed(t, grandchild.Done())
	if !errors.Is(grandchild.Err(), context.DeadlineExceeded) {
		t.Errorf("grandchild Err = %v, want DeadlineExceeded", grandchild.Err())
	}
}

// TestDeadlineContextConcurrent runs every method at once with the end of
// the execution, for the race detector.
func TestDeadlineContextConcurrent(t *testing.T) {
	for range 50 {
		c := newDeadlineContext(context.Background(), time.Now().Add(time.Millisecond))
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for range 20 {
					switch g % 4 {
					case 0:
						<-c.Done()
					case 1:
						_ = c.Err()
					case 2:
						_ = c.Value(ctxKey{})
					case 3:
						_, _ = c.Deadline()
					}
				}
			})
		}
		wg.Go(func() { c.end(time.Now()) })
		wg.Wait()
		if c.Err() == nil || !isClosed(c.Done()) {
			t.Fatal("context not done after the end")
		}
	}
}
