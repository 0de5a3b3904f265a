package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
)

// LongRunning configures the answers of calls that do not fit one quick
// request: event streams, async jobs and idempotency keys. Jobs and
// idempotency keys belong to the caller's identity (auth.Identity's
// Subject): another caller polling a job gets 404, and each caller's keys
// are its own.
type LongRunning struct {
	// Jobs runs async capabilities (core.WithAsync) and serves their
	// status route. Nil refuses to build a handler for a registry that
	// has async capabilities.
	Jobs *jobs.Manager
	// BaseURL is the absolute http(s) URL of the mount point, ending in
	// "/", under which status URLs are built:
	// BaseURL + "capability/status?id=" + job id. Required with Jobs.
	BaseURL string
	// AsyncAfter, when positive (and Jobs is set), turns any execution
	// that has not finished after it into a job: the caller gets 202 and
	// polls, and the execution goes on detached. Zero answers every
	// capability that is not async synchronously.
	AsyncAfter time.Duration

	// Idempotency honours the Idempotency-Key header of execute. Nil
	// ignores the header.
	Idempotency *idempotency.Guard

	// StreamMaxDuration ends a stream after this long, with an error
	// event stream_expired (default 15 min; negative: no limit).
	StreamMaxDuration time.Duration
	// RecheckInterval is how often an open stream asks the caller's
	// Authorizer whether it may still act (auth.Authorizer.Recheck): a
	// refusal ends the stream with an error event rendering it (a
	// revoked agent or host, say). Default 60 s.
	RecheckInterval time.Duration
	// KeepAlive is how often an idle stream sends a comment line, so
	// that proxies do not close it (default 15 s; negative: never).
	KeepAlive time.Duration
	// MaxStreamsPerOwner bounds the streams of one caller (identity
	// Subject) running at once in this handler: each holds a goroutine
	// and its execution for up to StreamMaxDuration, so a caller past it
	// gets 429 rate_limited with Retry-After until one of its streams
	// ends. Default 8; negative: no bound.
	MaxStreamsPerOwner int
}

// Defaults of LongRunning.
const (
	defaultStreamMaxDuration = 15 * time.Minute
	defaultRecheckInterval   = time.Minute
	defaultKeepAlive         = 15 * time.Second
	defaultMaxStreams        = 8
)

// longRunning is the checked LongRunning of a handler.
type longRunning struct {
	LongRunning
	jobs      *jobs.Manager
	idem      *idempotency.Guard
	statusURL string
	// special holds the capabilities that never take the fast path.
	special map[string]bool
	streams *ownerSlots
}

// ownerSlots counts the streams each caller has running, up to max.
type ownerSlots struct {
	mu   sync.Mutex
	max  int
	open map[string]int
}

// take reserves a slot for owner, unless it holds max of them.
func (o *ownerSlots) take(owner string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open[owner] >= o.max {
		return false
	}
	o.open[owner]++
	return true
}

// put gives back a slot of owner.
func (o *ownerSlots) put(owner string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open[owner]--; o.open[owner] <= 0 {
		delete(o.open, owner)
	}
}

func (l *longRunning) configure(c LongRunning, reg *core.Registry) error {
	l.LongRunning = c
	l.jobs, l.idem = c.Jobs, c.Idempotency
	if c.AsyncAfter < 0 || c.RecheckInterval < 0 {
		return errors.New("httpx: negative AsyncAfter or RecheckInterval")
	}
	if l.StreamMaxDuration == 0 {
		l.StreamMaxDuration = defaultStreamMaxDuration
	}
	if l.RecheckInterval == 0 {
		l.RecheckInterval = defaultRecheckInterval
	}
	if l.KeepAlive == 0 {
		l.KeepAlive = defaultKeepAlive
	}
	switch {
	case l.MaxStreamsPerOwner == 0:
		l.streams = &ownerSlots{max: defaultMaxStreams, open: make(map[string]int)}
	case l.MaxStreamsPerOwner > 0:
		l.streams = &ownerSlots{max: l.MaxStreamsPerOwner, open: make(map[string]int)}
	}
	if l.jobs != nil {
		u, err := url.Parse(c.BaseURL)
		if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(u.Path, "/") || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("httpx: LongRunning.BaseURL %q must be an absolute http(s) URL ending in / without query", c.BaseURL)
		}
		l.statusURL = c.BaseURL + agentcap.RouteStatus + "?id="
	}
	l.special = make(map[string]bool)
	for _, d := range reg.All() {
		if d.Async() && l.jobs == nil {
			return fmt.Errorf("httpx: capability %q is async: set LongRunning.Jobs", d.Name())
		}
		if d.Async() || d.Streams() {
			l.special[d.Name()] = true
		}
	}
	return nil
}

// applies reports an execute that leaves the synchronous fast path.
func (l *longRunning) applies(req *Request, name string) bool {
	return l.special[name] || (l.AsyncAfter > 0 && l.jobs != nil) ||
		(l.idem != nil && req.header("Idempotency-Key") != "")
}

// storable reports an answer that an idempotency key keeps: successes and
// definitive errors. Server errors, timeouts, conflicts, early data and
// rate limits are transient, so a retry of them runs again. So are the
// refusals of the confirmation stage, whatever their status (428
// confirmation_required, 409 confirmation_mismatch, _expired and _used,
// 403 invalid_confirmation): they judge the token a call carried, not the
// call, so a call retried with its key and a good token runs, and a
// replay of a confirmed call returns its stored answer without consuming
// another token.
func storable(m replyMeta) bool {
	if m.unkept {
		return false
	}
	switch m.status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusPreconditionRequired, agentcap.StatusClientClosedRequest:
		return false
	}
	return m.status < 500
}

// idempotencyUnavailable answers a call whose key could not be claimed
// because the idempotency store did not answer: the call did not run,
// and the same key may be sent again (503 temporarily_unavailable, with
// Retry-After).
var idempotencyUnavailable = agentcap.Unavailable("idempotency keys cannot be checked now; the call did not run; retry later", nil)

// jobsUnavailable answers an async call whose owner's jobs could not be
// counted because the job store did not answer: the call did not run.
var jobsUnavailable = agentcap.Unavailable("jobs cannot be started now; the call did not run; retry later", nil)

// errAnswerNotKept is what an Idempotency-Key keeps, and a repeat gets,
// for a call whose answer was longer than the guard keeps
// (idempotency.Config.MaxAnswerBytes).
var errAnswerNotKept = &agentcap.Error{Code: agentcap.CodeConflict, Stage: agentcap.StageInput,
	Message: "the call with this Idempotency-Key ran, but its answer was too large to keep for a repeat"}

// boundRetry is the Retry-After of a caller at its bound of
// Idempotency-Keys or jobs: its keys and finished jobs go with their
// retention, hours away, and its running jobs when they end, so this
// only spaces out the retries of a caller that keeps asking for more.
const boundRetry = time.Minute

// limited is a 429 rate_limited refusal of the input stage, with its
// Retry-After and the same seconds in a retry_after member, as rate
// limits answer.
func limited(message string, retry time.Duration) *agentcap.Error {
	secs := max(int((retry+time.Second-1)/time.Second), 1)
	return inputError(agentcap.CodeRateLimited, message).WithRetryAfter(time.Duration(secs)*time.Second).With("retry_after", secs)
}

// inputError is a refusal of the input stage that the handler answers
// before the executor runs.
func inputError(code agentcap.Code, message string) *agentcap.Error {
	return &agentcap.Error{Code: code, Stage: agentcap.StageInput, Message: message}
}

func idempotencyError(err error) *agentcap.Error {
	switch {
	case errors.Is(err, idempotency.ErrInvalidKey):
		return inputError(agentcap.CodeInvalidIdempotencyKey,
			fmt.Sprintf("the Idempotency-Key must be 1 to %d printable ASCII characters", idempotency.MaxKeyLength))
	case errors.Is(err, idempotency.ErrKeyReused):
		return inputError(agentcap.CodeIdempotencyKeyReused,
			"this Idempotency-Key was used for another capability or other arguments")
	case errors.Is(err, idempotency.ErrInProgress):
		return inputError(agentcap.CodeIdempotencyInProgress,
			"the first call with this Idempotency-Key is still running; retry later")
	case errors.Is(err, idempotency.ErrTooManyKeys):
		return limited("this caller holds too many unexpired Idempotency-Keys; the call did not run; retry later, or without a key", boundRetry)
	case errors.Is(err, context.DeadlineExceeded):
		return inputError(agentcap.CodeTimeout, "the request ended while waiting for the first call with this Idempotency-Key")
	case errors.Is(err, context.Canceled):
		return inputError(agentcap.CodeCancelled, "the request was canceled")
	}
	return nil
}

// executeLong runs an execute that streams, runs as a job or carries an
// idempotency key.
func (h *Handler) executeLong(ctx context.Context, exec *core.Executor, req *Request, name string, args []byte, id *auth.Identity, buf *buffer) replyMeta {
	// A capability the caller may not see is answered like an unknown
	// one before anything is decided from it.
	def, registered := h.reg.Lookup(name)
	if registered && !def.Visible(ctx, id, true) {
		return h.fail(ctx, buf, core.ErrUnknownCapability)
	}
	key := ""
	if h.long.idem != nil {
		key = req.header("Idempotency-Key")
	}
	if def != nil && def.Streams() {
		if key != "" {
			return h.fail(ctx, buf, inputError(agentcap.CodeInvalidIdempotencyKey,
				"a streaming capability takes no Idempotency-Key: a stream cannot be replayed"))
		}
		return h.startStream(ctx, exec, name, args, id, buf)
	}
	owner := id.Subject
	var claim *idempotency.Claim
	if key != "" {
		c, rec, err := h.long.idem.Begin(ctx, owner, key, idempotency.Fingerprint(name, args))
		if err != nil {
			if ce := idempotencyError(err); ce != nil {
				return h.fail(ctx, buf, ce)
			}
			h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: idempotency store failed",
				slog.String("capability", name), slog.String("error", err.Error()))
			return h.fail(ctx, buf, idempotencyUnavailable)
		}
		if rec != nil {
			buf.b = append(buf.b[:0], rec.Body...)
			meta := replyMeta{status: rec.Status, cache: cacheNoStore, replayed: true}
			if v := rec.Header["Retry-After"]; v != "" {
				meta.retryAfter = []string{v}
			}
			return meta
		}
		claim = c
	}
	var meta replyMeta
	switch {
	case def != nil && def.Async(), h.long.jobs != nil && h.long.AsyncAfter > 0:
		meta = h.runJob(ctx, exec, name, def, args, id, buf)
	default:
		data, err := exec.Execute(ctx, name, id, args)
		meta = h.answer(ctx, name, data, err, buf)
	}
	if claim != nil {
		// The call ran: its answer is stored (or the key released) even
		// if the caller has gone. The store's own timeouts bound it.
		sctx := context.WithoutCancel(ctx)
		var err error
		if storable(meta) {
			var header map[string]string
			if meta.retryAfter != nil {
				header = map[string]string{"Retry-After": meta.retryAfter[0]}
			}
			err = claim.Complete(sctx, meta.status, header, buf.b)
			if errors.Is(err, idempotency.ErrAnswerTooLarge) {
				// The call ran: a repeat must not run it again, so the
				// key keeps a refusal that says so in place of the
				// answer.
				b := append(h.appendError(ctx, nil, errAnswerNotKept, agentcap.KeyError), '\n')
				err = claim.Complete(sctx, errAnswerNotKept.HTTPStatus(), nil, b)
			}
		} else {
			err = claim.Release(sctx)
		}
		if err != nil {
			h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: recording an idempotent answer failed",
				slog.String("capability", name), slog.String("error", err.Error()))
		}
	}
	return meta
}

// runJob runs a call that may become a job: an async capability is
// detached as soon as its handler starts; any other call once it has run
// for AsyncAfter. A call refused before its handler starts is answered at
// once, and a caller that goes away before the call is detached cancels
// it.
func (h *Handler) runJob(ctx context.Context, exec *core.Executor, name string, def *core.Definition, args []byte, id *auth.Identity, buf *buffer) replyMeta {
	async := def != nil && def.Async()
	// A caller at its bound of jobs (jobs.Config.MaxPendingPerOwner,
	// MaxPerOwner) starts no other: an async call is refused, any other
	// runs without becoming a job.
	if err := h.long.jobs.Admit(ctx, id.Subject); err != nil {
		if !async {
			data, err := exec.Execute(ctx, name, id, args)
			return h.answer(ctx, name, data, err, buf)
		}
		if errors.Is(err, jobs.ErrTooManyJobs) {
			return h.fail(ctx, buf, limited("this caller has too many jobs running or kept; the call did not run; retry later", boundRetry))
		}
		h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: counting jobs failed",
			slog.String("capability", name), slog.String("error", err.Error()))
		return h.fail(ctx, buf, jobsUnavailable)
	}
	// The body is handed back once the answer is rendered; the job keeps
	// its own copy of the arguments.
	args = slices.Clone(args)
	call := h.long.jobs.Call(ctx, id.Subject, name, func(jctx context.Context) (json.RawMessage, error) {
		return exec.Execute(jctx, name, id, args)
	})
	var started <-chan struct{}
	var after <-chan time.Time
	if async {
		started = call.Started()
	} else {
		t := time.NewTimer(h.long.AsyncAfter)
		defer t.Stop()
		after = t.C
	}
	detach := false
	select {
	case <-started:
		detach = true
	case <-after:
		detach = true
	case <-call.Done():
		// An async call whose handler started and ended at once is still
		// answered as a job, so that the answer's shape does not depend
		// on timing.
		select {
		case <-call.Started():
			detach = async
		default:
		}
	case <-ctx.Done():
		call.Cancel()
	}
	if detach {
		rec, err := call.Detach(ctx)
		if err != nil {
			h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: recording a job failed",
				slog.String("capability", name), slog.String("error", err.Error()))
			return h.fail(ctx, buf, errInternal)
		}
		if async || rec.State == jobs.StatePending {
			return h.pending(rec, buf, http.StatusAccepted)
		}
	}
	data, err := call.Result()
	return h.answer(ctx, name, data, err, buf)
}

// pending renders {"status":"pending","status_url":...}.
func (h *Handler) pending(rec *jobs.Record, buf *buffer, status int) replyMeta {
	wait := agentcap.RetryAfterHeader(h.long.jobs.PollInterval())
	b := append(buf.b[:0], `{"status":"pending","status_url":`...)
	b = appendString(b, h.long.statusURL+url.QueryEscape(rec.ID))
	b = append(b, `,"retry_after":`...)
	b = append(b, wait...)
	if p := rec.Progress; p != nil {
		b = appendProgress(b, p)
	}
	buf.b = append(b, '}', '\n')
	return replyMeta{status: status, cache: cacheNoStore, retryAfter: []string{wait}}
}

func appendProgress(b []byte, p *core.Progress) []byte {
	b = append(b, `,"progress":{"progress":`...)
	b = appendFloat(b, p.Progress)
	if p.Total > 0 {
		b = append(b, `,"total":`...)
		b = appendFloat(b, p.Total)
	}
	if p.Message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, p.Message)
	}
	return append(b, '}')
}

// status serves a job's status_url: GET polls, DELETE cancels. A job of
// another caller is answered exactly like one that does not exist. The
// status URL is a resource of the location that ran the job: a caller
// whose Authorizer binds its credentials to a location
// (auth.JobAuthorizer) must present ones made for the job's capability,
// as an execution of it would.
func (h *Handler) status(ctx context.Context, req *Request, caller *auth.Identity, buf *buffer) replyMeta {
	vals, err := url.ParseQuery(req.RawQuery)
	id := vals.Get("id")
	if err != nil || id == "" || caller == nil || caller.Subject == "" {
		return h.fail(ctx, buf, errJobNotFound)
	}
	owner := caller.Subject
	rec, err := h.long.jobs.Get(ctx, owner, id)
	if err == nil {
		if ja, ok := caller.Authorizer.(auth.JobAuthorizer); ok {
			if aerr := ja.AuthorizeJob(ctx, rec.Capability); aerr != nil {
				return h.fail(ctx, buf, jobRefusal(aerr))
			}
		}
		if req.Method == http.MethodDelete {
			rec, err = h.long.jobs.Cancel(ctx, owner, id)
		}
	}
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return h.fail(ctx, buf, errJobNotFound)
	case err != nil:
		h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: reading a job failed",
			slog.String("job", id), slog.String("error", err.Error()))
		return h.fail(ctx, buf, errInternal)
	}
	switch rec.State {
	case jobs.StateCompleted:
		b := append(buf.b[:0], `{"status":"completed","result":`...)
		if len(rec.Result) == 0 {
			b = append(b, "null"...)
		}
		b = append(b, rec.Result...)
		buf.b = append(b, '}', '\n')
	case jobs.StateFailed:
		f := jobs.Failure{Code: string(agentcap.CodeInternalError), Message: "internal error"}
		if rec.Failure != nil {
			f = *rec.Failure
		}
		// The error object is the protocol's envelope ("error"); "code"
		// repeats it for clients that read it under that name, as the
		// reference SDK does.
		fields := make(map[string]any, len(f.Fields)+1)
		for k, v := range f.Fields {
			fields[k] = v
		}
		fields[agentcap.KeyCode] = f.Code
		b := append(buf.b[:0], `{"status":"failed","error":`...)
		b = h.appendError(ctx, b, &agentcap.Error{Code: agentcap.Code(f.Code), Message: f.Message, Fields: fields}, agentcap.KeyError)
		buf.b = append(b, '}', '\n')
	default:
		return h.pending(rec, buf, http.StatusOK)
	}
	return replyMeta{status: http.StatusOK, cache: cacheNoStore}
}

// jobRefusal is the answer to a job poll an auth.JobAuthorizer refused:
// its own *agentcap.Error, else unauthorized with the cause hidden.
func jobRefusal(err error) *agentcap.Error {
	if e := agentcap.As(err); e != nil {
		return e
	}
	return agentcap.NewError(agentcap.CodeUnauthorized, "this caller may not read this job").WithCause(err)
}

var errJobNotFound = &agentcap.Error{Code: agentcap.CodeJobNotFound, Stage: agentcap.StageLookup, Message: "no such job"}

// appendFloat writes a progress figure; a value JSON cannot hold is 0.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
