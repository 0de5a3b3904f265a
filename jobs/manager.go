package jobs

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/core"
)

// Defaults of Config.
const (
	defaultTimeout          = 15 * time.Minute
	defaultRetention        = 24 * time.Hour
	defaultLease            = 30 * time.Second
	defaultSweepInterval    = time.Minute
	defaultPollInterval     = time.Second
	defaultProgressInterval = 250 * time.Millisecond
)

// Config configures a Manager. Every field has a usable zero value.
type Config struct {
	// Store keeps the records. Nil means a new MemoryStore.
	Store Store
	// Instance names this process in the records it runs; instances
	// sharing a Store must use different names. Empty means a random one.
	Instance string
	// Timeout bounds each job, from its start (default 15 min). A
	// capability's own core.WithTimeout applies too.
	Timeout time.Duration
	// Retention is how long a finished job stays readable (default 24 h).
	Retention time.Duration
	// Lease is how long a pending job stays pending without its instance
	// renewing it (default 30 s). Instances renew every Lease/3, and every
	// instance fails the jobs whose lease ran out with instance_lost.
	Lease time.Duration
	// SweepInterval is how often finished jobs past their retention are
	// deleted (default 1 min).
	SweepInterval time.Duration
	// PollInterval is how long a poller is told to wait between polls
	// of a pending job (default 1 s); transports send it as Retry-After.
	PollInterval time.Duration
	// ProgressInterval is the least time between two writes of a job's
	// progress to the Store (default 250 ms); reports in between are
	// merged, the latest kept.
	ProgressInterval time.Duration
	// MaxPendingPerOwner bounds the jobs of one owner running at once,
	// MaxPerOwner the jobs it has, running or finished and not yet past
	// their retention: past either, Admit refuses another one with
	// ErrTooManyJobs (httpx: 429 rate_limited), so that one caller can
	// neither run any number of jobs at once nor fill the store with
	// results kept for Retention. Zero means 8 pending and 100 in
	// all; negative, no bound.
	MaxPendingPerOwner, MaxPerOwner int
	// MaxResultBytes bounds the result a completed job keeps: a longer
	// one is not kept, and the job fails with FailureResultTooLarge. Zero
	// means 1 MiB; negative, no bound.
	MaxResultBytes int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Logger receives store failures of the background work. Nil
	// discards them.
	Logger *slog.Logger
}

// Defaults of Config's bounds: with them one owner's finished jobs hold
// at most about 100 MiB of results.
const (
	defaultMaxPendingPerOwner = 8
	defaultMaxPerOwner        = 100
	defaultMaxResultBytes     = 1 << 20
)

// Manager runs calls as jobs: detached from the request that started
// them, each with its own deadline, their records in a Store. It is
// transport-neutral: httpx uses it for 202 answers and status polling,
// and any other transport can. It is safe for concurrent use.
type Manager struct {
	store    Store
	instance string
	timeout  time.Duration
	retain   time.Duration
	lease    time.Duration
	sweep    time.Duration
	poll     time.Duration
	progress time.Duration
	now      func() time.Time
	logger   *slog.Logger

	maxPending, maxKept, maxResult int

	mu      sync.Mutex
	running map[string]*Call
	// owners holds, per owner, the places Admit granted and the calls
	// not yet in the store, which Admit counts beside the store's
	// figures (see ownerUse).
	owners map[string]*ownerUse

	stop   chan struct{}
	done   chan struct{}
	closed atomic.Bool
}

// New returns a Manager and starts its background work (lease renewal,
// expiry of lost jobs, sweeping), which Close stops.
func New(cfg Config) (*Manager, error) {
	if cfg.Timeout < 0 || cfg.Retention < 0 || cfg.Lease < 0 || cfg.SweepInterval < 0 || cfg.PollInterval < 0 || cfg.ProgressInterval < 0 {
		return nil, errors.New("jobs: negative duration in Config")
	}
	m := &Manager{
		store:    cfg.Store,
		instance: cfg.Instance,
		timeout:  orDefault(cfg.Timeout, defaultTimeout),
		retain:   orDefault(cfg.Retention, defaultRetention),
		lease:    orDefault(cfg.Lease, defaultLease),
		sweep:    orDefault(cfg.SweepInterval, defaultSweepInterval),
		poll:     orDefault(cfg.PollInterval, defaultPollInterval),
		progress: orDefault(cfg.ProgressInterval, defaultProgressInterval),
		now:      cfg.Now,
		logger:   cfg.Logger,
		running:  make(map[string]*Call),
		owners:   make(map[string]*ownerUse),

		maxPending: bound(cfg.MaxPendingPerOwner, defaultMaxPendingPerOwner),
		maxKept:    bound(cfg.MaxPerOwner, defaultMaxPerOwner),
		maxResult:  bound(cfg.MaxResultBytes, defaultMaxResultBytes),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	if m.store == nil {
		m.store = NewMemoryStore()
	}
	if m.instance == "" {
		m.instance = "inst_" + randomID(9)
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	go m.loop()
	return m, nil
}

// bound is a configured bound: def for zero, none (0) for a negative one.
func bound(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// randomID returns n random bytes in unpadded base64url.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// Store returns the manager's store.
func (m *Manager) Store() Store { return m.store }

// Instance returns the name of this instance in job records.
func (m *Manager) Instance() string { return m.instance }

// PollInterval returns the wait a poller of a pending job is told.
func (m *Manager) PollInterval() time.Duration { return m.poll }

// Failures of jobs that did not end by themselves.
var (
	// FailureCancelled is the failure of a job cancelled by its owner.
	FailureCancelled = Failure{Code: string(agentcap.CodeCancelled), Message: "the job was cancelled", Status: agentcap.CodeCancelled.HTTPStatus()}
	// FailureInstanceLost is the failure of a job whose instance stopped.
	FailureInstanceLost = Failure{Code: string(agentcap.CodeInstanceLost), Message: "the instance running the job stopped before it finished", Status: agentcap.CodeInstanceLost.HTTPStatus()}
	// FailureResultTooLarge is the failure of a job whose result was
	// longer than Config.MaxResultBytes: it ran, and its result was not
	// kept.
	FailureResultTooLarge = Failure{Code: string(agentcap.CodeInternalError), Message: "the job ran, but its result was too large to keep", Status: agentcap.CodeInternalError.HTTPStatus()}
)

// ErrTooManyJobs is Admit's refusal of an owner at one of its bounds
// (Config.MaxPendingPerOwner, Config.MaxPerOwner).
var ErrTooManyJobs = errors.New("jobs: the owner has too many jobs")

var errCancelled = errors.New("jobs: cancelled by the owner")

// Admit reports whether owner may start another job: ErrTooManyJobs when
// it has MaxPendingPerOwner jobs running or MaxPerOwner jobs in all, or
// the Store's error. A transport asks before it starts a call that is to
// be a job, and starts it with [Manager.Call] right away.
//
// Jobs are counted in the Store, so across every instance sharing it,
// and this manager adds what the Store cannot see yet: the calls it
// started that are not recorded (still attached to their request) and
// the places it granted whose Call has not come (each held for at most
// grantHold). A burst of calls through one instance therefore cannot
// pass a bound together; calls admitted at the same moment by different
// instances still can, by at most one each.
func (m *Manager) Admit(ctx context.Context, owner string) error {
	if m.maxPending == 0 && m.maxKept == 0 {
		return nil
	}
	pending, kept, err := m.store.CountOwner(ctx, owner, m.now())
	if err != nil {
		return fmt.Errorf("jobs: counting the owner's jobs: %w", err)
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.owners[owner]
	if u == nil {
		u = &ownerUse{}
	}
	u.expire(now)
	local := len(u.grants) + u.unrecorded
	switch {
	case m.maxPending > 0 && pending+local >= m.maxPending:
		m.forget(owner, u)
		return fmt.Errorf("%w: %d running", ErrTooManyJobs, pending+local)
	case m.maxKept > 0 && kept+local >= m.maxKept:
		m.forget(owner, u)
		return fmt.Errorf("%w: %d kept", ErrTooManyJobs, kept+local)
	}
	u.grants = append(u.grants, now.Add(grantHold))
	m.owners[owner] = u
	return nil
}

// grantHold is how long a place granted by Admit is held for the Call
// that is to follow it.
const grantHold = 5 * time.Second

// ownerUse is what a manager knows of an owner's jobs beyond the Store:
// the expiry times of places granted by Admit and not yet taken by a
// Call (oldest first), and the calls started and not yet recorded.
type ownerUse struct {
	grants     []time.Time
	unrecorded int
}

// expire drops the grants past their hold.
func (u *ownerUse) expire(now time.Time) {
	i := 0
	for i < len(u.grants) && !now.Before(u.grants[i]) {
		i++
	}
	u.grants = u.grants[i:]
}

// forget removes an owner's entry once it holds nothing. m.mu is held.
func (m *Manager) forget(owner string, u *ownerUse) {
	if len(u.grants) == 0 && u.unrecorded == 0 {
		delete(m.owners, owner)
	}
}

// started counts a call of owner as not yet recorded, taking the oldest
// place Admit granted it, if any.
func (m *Manager) started(owner string) {
	m.mu.Lock()
	u := m.owners[owner]
	if u == nil {
		u = &ownerUse{}
		m.owners[owner] = u
	}
	if len(u.grants) > 0 {
		u.grants = u.grants[1:]
	}
	u.unrecorded++
	m.mu.Unlock()
}

// settled ends the count of a call started by owner: it is recorded in
// the Store, failed to be, or ended without becoming a job.
func (m *Manager) settled(owner string) {
	m.mu.Lock()
	if u := m.owners[owner]; u != nil {
		u.unrecorded--
		m.forget(owner, u)
	}
	m.mu.Unlock()
}

// FailureOf turns a call's error into the public failure of a job: the
// code, message and extra members of an *agentcap.Error; anything else is
// an internal error.
func FailureOf(err error) Failure {
	if ce := agentcap.As(err); ce != nil {
		f := Failure{Code: string(ce.Code), Message: ce.Message, Status: ce.HTTPStatus()}
		if len(ce.Fields) > 0 {
			f.Fields = ce.Fields
		}
		return f
	}
	return Failure{Code: string(agentcap.CodeInternalError), Message: "internal error", Status: agentcap.CodeInternalError.HTTPStatus()}
}

// Call is one execution that may become a job. [Manager.Call] starts it;
// the transport then either waits for it like a synchronous call or
// detaches it with [Call.Detach].
type Call struct {
	m          *Manager
	id         string
	owner      string
	capability string

	ctx    context.Context
	cancel context.CancelCauseFunc

	started   chan struct{}
	startOnce sync.Once
	done      chan struct{}
	result    json.RawMessage
	err       error

	mu       sync.Mutex
	detached bool
	// created is closed once a detached call's record is written;
	// createErr then says whether that failed.
	created   chan struct{}
	createErr error

	progMu     sync.Mutex
	prog       *core.Progress
	progDirty  bool
	progLatest time.Time
}

// Call starts run in a goroutine of its own, under a context that keeps
// ctx's values but not its cancellation or deadline, bounded by the job
// timeout. That context carries a core.OnHandlerStart notice (see
// [Call.Started]) and a core.WithProgress listener that records progress
// in the job. run is typically an executor call.
func (m *Manager) Call(ctx context.Context, owner, capability string, run func(ctx context.Context) (json.RawMessage, error)) *Call {
	c := &Call{
		m:          m,
		id:         "job_" + randomID(18),
		owner:      owner,
		capability: capability,
		started:    make(chan struct{}),
		done:       make(chan struct{}),
		created:    make(chan struct{}),
	}
	base, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	tctx, tcancel := context.WithTimeout(base, m.timeout)
	c.cancel = func(cause error) { cancel(cause); tcancel() }
	tctx = core.OnHandlerStart(tctx, func() { c.startOnce.Do(func() { close(c.started) }) })
	c.ctx = core.WithProgress(tctx, c.report)
	m.started(owner)
	go c.run(run)
	return c
}

func (c *Call) run(run func(ctx context.Context) (json.RawMessage, error)) {
	data, err := run(c.ctx)
	c.mu.Lock()
	c.result, c.err = data, err
	detached := c.detached
	if !detached {
		// A call that ends attached is either no job or recorded whole
		// by a later Detach; either way it is no longer unrecorded. It
		// is settled before Done is closed, so that whoever sees the
		// call end also sees its place free.
		c.m.settled(c.owner)
	}
	close(c.done)
	c.mu.Unlock()
	if detached {
		<-c.created
		if c.createErr == nil {
			c.m.finish(c, data, err)
		}
		c.m.untrack(c)
	}
	c.cancel(nil)
}

// ID returns the id the job has (or will have, once detached).
func (c *Call) ID() string { return c.id }

// Started is closed when the capability's handler starts: the call passed
// validation, authorization and context construction.
func (c *Call) Started() <-chan struct{} { return c.started }

// Done is closed when the call has ended.
func (c *Call) Done() <-chan struct{} { return c.done }

// Result returns the call's output and error. Call it after Done is
// closed.
func (c *Call) Result() (json.RawMessage, error) {
	<-c.done
	return c.result, c.err
}

// Cancel cancels a call that is not detached, for a caller that went
// away while waiting for it. It does nothing to a detached call: only
// [Manager.Cancel] ends a job.
func (c *Call) Cancel() {
	c.mu.Lock()
	detached := c.detached
	c.mu.Unlock()
	if !detached {
		c.cancel(context.Canceled)
	}
}

// Detach turns the call into a job and returns its record as written: a
// pending job whose outcome the call writes when it ends, or, if the call
// had already ended, a finished one. ctx bounds the write. When the write
// fails the call is cancelled and the error returned.
func (c *Call) Detach(ctx context.Context) (*Record, error) {
	m := c.m
	c.mu.Lock()
	finished := false
	select {
	case <-c.done:
		finished = true
	default:
		c.detached = true
	}
	c.mu.Unlock()
	now := m.now()
	rec := &Record{
		ID: c.id, Owner: c.owner, Capability: c.capability, State: StatePending,
		Instance: m.instance, LeaseUntil: now.Add(m.lease), Created: now, Updated: now,
	}
	c.progMu.Lock()
	if c.prog != nil {
		p := *c.prog
		rec.Progress = &p
		c.progDirty = false
	}
	c.progMu.Unlock()
	if finished {
		rec.apply(m.outcome(c.result, c.err, now), now)
		if err := m.store.Create(ctx, rec); err != nil {
			return nil, fmt.Errorf("jobs: recording job: %w", err)
		}
		return rec, nil
	}
	err := m.store.Create(ctx, rec)
	if err == nil {
		m.track(c)
	} else {
		c.createErr = err
		c.cancel(err)
	}
	m.settled(c.owner)
	close(c.created)
	if err != nil {
		return nil, fmt.Errorf("jobs: recording job: %w", err)
	}
	// Progress reported while the record was being written is written
	// now rather than at the next renewal.
	c.flushProgress(m.now())
	return rec, nil
}

// report is the call's core.ProgressFunc.
func (c *Call) report(p core.Progress) {
	c.progMu.Lock()
	c.prog = &p
	c.progDirty = true
	now := c.m.now()
	write := now.Sub(c.progLatest) >= c.m.progress
	c.progMu.Unlock()
	if !write {
		return
	}
	c.flushProgress(now)
}

// flushProgress writes the latest unwritten progress of a detached call.
func (c *Call) flushProgress(now time.Time) {
	c.mu.Lock()
	detached := c.detached
	c.mu.Unlock()
	if !detached {
		return
	}
	select {
	case <-c.created:
	default:
		return
	}
	if c.createErr != nil {
		return
	}
	c.progMu.Lock()
	if !c.progDirty || c.prog == nil {
		c.progMu.Unlock()
		return
	}
	p := *c.prog
	c.progDirty = false
	c.progLatest = now
	c.progMu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), c.m.lease)
	defer cancel()
	if err := c.m.store.SetProgress(ctx, c.id, p, now); err != nil {
		c.m.logger.LogAttrs(ctx, slog.LevelWarn, "jobs: recording progress failed",
			slog.String("job", c.id), slog.String("error", err.Error()))
	}
}

func (m *Manager) outcome(data json.RawMessage, err error, now time.Time) Outcome {
	out := Outcome{State: StateCompleted, Result: data, Expires: now.Add(m.retain)}
	switch {
	case err != nil:
		f := FailureOf(err)
		out = Outcome{State: StateFailed, Failure: &f, Expires: now.Add(m.retain)}
	case m.maxResult > 0 && len(data) > m.maxResult:
		f := FailureResultTooLarge
		out = Outcome{State: StateFailed, Failure: &f, Expires: now.Add(m.retain)}
	}
	return out
}

func (m *Manager) finish(c *Call, data json.RawMessage, err error) {
	now := m.now()
	ctx, cancel := context.WithTimeout(context.Background(), m.lease)
	defer cancel()
	if _, ferr := m.store.Finish(ctx, c.id, m.outcome(data, err, now), now); ferr != nil {
		m.logger.LogAttrs(ctx, slog.LevelError, "jobs: recording the outcome failed; the job will be reported lost",
			slog.String("job", c.id), slog.String("error", ferr.Error()))
	}
}

func (m *Manager) track(c *Call) {
	m.mu.Lock()
	m.running[c.id] = c
	m.mu.Unlock()
}

func (m *Manager) untrack(c *Call) {
	m.mu.Lock()
	delete(m.running, c.id)
	m.mu.Unlock()
}

func (m *Manager) local(id string) *Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running[id]
}

// Get returns the job id if owner started it. A job of another owner is
// ErrNotFound, exactly like one that does not exist, so that job ids
// cannot be probed.
func (m *Manager) Get(ctx context.Context, owner, id string) (*Record, error) {
	rec, err := m.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.Owner != owner || owner == "" {
		return nil, ErrNotFound
	}
	return rec, nil
}

// Cancel ends a pending job of owner as failed with FailureCancelled and
// cancels its handler's context (on this instance at once; on another
// one when it next renews its leases). A job that already ended is left
// as it is. It returns the record after the attempt.
func (m *Manager) Cancel(ctx context.Context, owner, id string) (*Record, error) {
	rec, err := m.Get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if rec.State != StatePending {
		return rec, nil
	}
	now := m.now()
	f := FailureCancelled
	won, err := m.store.Finish(ctx, id, Outcome{State: StateFailed, Failure: &f, Expires: now.Add(m.retain)}, now)
	if err != nil {
		return nil, err
	}
	if won {
		if c := m.local(id); c != nil {
			c.cancel(errCancelled)
		}
	}
	return m.store.Get(ctx, id)
}

// Close stops the background work, and fails the jobs still running here
// with FailureInstanceLost, cancelling their handlers: a job cannot
// outlive its instance. It does not close the Store.
func (m *Manager) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	close(m.stop)
	<-m.done
	m.mu.Lock()
	calls := make([]*Call, 0, len(m.running))
	for _, c := range m.running {
		calls = append(calls, c)
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.lease)
	defer cancel()
	var errs []error
	for _, c := range calls {
		now := m.now()
		f := FailureInstanceLost
		if _, err := m.store.Finish(ctx, c.id, Outcome{State: StateFailed, Failure: &f, Expires: now.Add(m.retain)}, now); err != nil {
			errs = append(errs, err)
		}
		c.cancel(errors.New("jobs: the manager closed"))
	}
	return errors.Join(errs...)
}

// loop renews the leases of this instance's jobs, fails lost jobs of any
// instance and sweeps expired records.
func (m *Manager) loop() {
	defer close(m.done)
	renew := time.NewTicker(max(m.lease/3, time.Millisecond))
	defer renew.Stop()
	sweep := time.NewTicker(m.sweep)
	defer sweep.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-renew.C:
			m.Maintain(context.Background())
		case <-sweep.C:
			m.Sweep(context.Background())
		}
	}
}

// Maintain renews the leases of the jobs running here, cancels those
// that ended elsewhere (cancelled through another instance), writes
// pending progress, and fails every job whose lease ran out with
// FailureInstanceLost. The background work calls it every Lease/3; it is
// exported for tests and for applications that drive time themselves.
func (m *Manager) Maintain(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.lease)
	defer cancel()
	m.mu.Lock()
	ids := make([]string, 0, len(m.running))
	calls := make([]*Call, 0, len(m.running))
	for id, c := range m.running {
		ids = append(ids, id)
		calls = append(calls, c)
	}
	m.mu.Unlock()
	now := m.now()
	if len(ids) > 0 {
		gone, err := m.store.Renew(ctx, m.instance, ids, now.Add(m.lease), now)
		if err != nil {
			m.logger.LogAttrs(ctx, slog.LevelError, "jobs: renewing leases failed", slog.String("error", err.Error()))
		}
		for _, id := range gone {
			if c := m.local(id); c != nil {
				c.cancel(errCancelled)
			}
		}
		for _, c := range calls {
			c.flushProgress(now)
		}
	}
	f := FailureInstanceLost
	if _, err := m.store.ExpireLeases(ctx, now, Outcome{State: StateFailed, Failure: &f, Expires: now.Add(m.retain)}); err != nil {
		m.logger.LogAttrs(ctx, slog.LevelError, "jobs: expiring lost jobs failed", slog.String("error", err.Error()))
	}
}

// Sweep deletes finished jobs past their retention. The background work
// calls it every SweepInterval.
func (m *Manager) Sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.lease)
	defer cancel()
	if _, err := m.store.Sweep(ctx, m.now()); err != nil {
		m.logger.LogAttrs(ctx, slog.LevelError, "jobs: sweeping failed", slog.String("error", err.Error()))
	}
}
