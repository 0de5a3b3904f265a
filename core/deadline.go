package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineContext bounds one execution in time without paying for a timer
// that nobody waits on. It reports its deadline at once, and Err compares
// the clock with it, but the timer that closes a Done channel (a
// context.WithDeadline on the parent) is armed only when Done is first
// called, by the handler or by a context derived from this one. Most
// handlers never wait, so most executions cost one small allocation where
// context.WithTimeout costs four and a timer.
//
// It behaves as the context.WithDeadline it stands for: Err is nil, then
// the parent's error or DeadlineExceeded, whichever is seen first; Value is
// the parent's; and once the execution ends (end), the context is
// canceled: an armed timer is stopped, Err reports Canceled unless it
// already reported another error, and Done returns a closed channel. One
// difference remains: context.Cause of a context that was never armed is
// the parent's cause, which after the end is nil rather than Canceled.
//
// It is safe for concurrent use, including by goroutines that outlive the
// execution.
type deadlineContext struct {
	parent   context.Context
	deadline time.Time

	mu    sync.Mutex // serialises arming and ending
	state atomic.Pointer[deadlineState]
}

// deadlineState is set once: when the timer is armed, or when the
// execution ends without one.
type deadlineState struct {
	// ctx and cancel are the armed context; nil when the execution ended
	// unarmed.
	ctx    context.Context
	cancel context.CancelFunc
	done   <-chan struct{}
	// err is the final error of a context that ended unarmed.
	err error
}

// closedChan is the Done channel of every context that ended unarmed.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// The states of contexts that ended unarmed for the usual reasons, shared
// so that ending costs no allocation.
var (
	endedCanceled = &deadlineState{done: closedChan, err: context.Canceled}
	endedDeadline = &deadlineState{done: closedChan, err: context.DeadlineExceeded}
)

// newDeadlineContext bounds parent by d, or by the parent's own deadline if
// that is earlier.
func newDeadlineContext(parent context.Context, d time.Time) *deadlineContext {
	if pd, ok := parent.Deadline(); ok && pd.Before(d) {
		d = pd
	}
	return &deadlineContext{parent: parent, deadline: d}
}

// Deadline returns the execution's deadline.
func (c *deadlineContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done arms the timer on first use.
func (c *deadlineContext) Done() <-chan struct{} { return c.arm().done }

// Err reports why the context is done, without arming the timer while
// nothing has gone wrong.
func (c *deadlineContext) Err() error {
	s := c.state.Load()
	if s == nil {
		// time.Until reads only the monotonic clock when the deadline
		// carries a monotonic reading, as deadlines made from time.Now do.
		if c.parent.Err() == nil && time.Until(c.deadline) > 0 {
			return nil
		}
		// Arming now makes the error, and the cause that the armed
		// context records with it, final.
		s = c.arm()
	}
	if s.ctx != nil {
		return s.ctx.Err()
	}
	return s.err
}

// Value delegates to the armed context, which answers for the parent and
// lets contexts derived from this one attach to its cancellation directly,
// or else to the parent.
func (c *deadlineContext) Value(key any) any {
	if s := c.state.Load(); s != nil && s.ctx != nil {
		return s.ctx.Value(key)
	}
	return c.parent.Value(key)
}

// String describes the context, as the standard library's contexts do.
func (c *deadlineContext) String() string {
	return "agentcap execution deadline " + c.deadline.String()
}

func (c *deadlineContext) arm() *deadlineState {
	if s := c.state.Load(); s != nil {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.state.Load(); s != nil {
		return s
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	s := &deadlineState{ctx: ctx, cancel: cancel, done: ctx.Done()}
	c.state.Store(s)
	return s
}

// end cancels the context when the execution is over, which was at time
// at: the caller has just read the clock.
func (c *deadlineContext) end(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.state.Load(); s != nil {
		if s.cancel != nil {
			s.cancel()
		}
		return
	}
	switch err := c.parent.Err(); {
	case err != nil:
		c.state.Store(&deadlineState{done: closedChan, err: err})
	case !at.Before(c.deadline):
		c.state.Store(endedDeadline)
	default:
		c.state.Store(endedCanceled)
	}
}
