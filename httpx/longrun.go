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
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/idempotency"
	"github.com/agentcap/agentcap/jobs"
)

// LongRunning configures the answers of calls that do not fit one quick
// request: event streams, async jobs and idempotency keys. P is the
// principal type.
type LongRunning[P any] struct {
	// Owner names the caller behind a principal, for example its agent
	// id. Jobs belong to it (another caller polling a job gets 404) and
	// idempotency keys are scoped to it. Required with Jobs or
	// Idempotency; a principal it names "" can use neither.
	Owner func(principal P) string

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
	// Recheck, when set, is called every RecheckInterval while a stream
	// is open; an error ends the stream with an error event rendering it
	// (a revoked agent or host, say). agentauth.HTTPConfig sets it.
	Recheck func(ctx context.Context, principal P) error
	// RecheckInterval is how often Recheck runs (default 60 s).
	RecheckInterval time.Duration
	// KeepAlive is how often an idle stream sends a comment line, so
	// that proxies do not close it (default 15 s; negative: never).
	KeepAlive time.Duration
}

// Defaults of LongRunning.
const (
	DefaultStreamMaxDuration = 15 * time.Minute
	DefaultRecheckInterval   = time.Minute
	DefaultKeepAlive         = 15 * time.Second
)

// longRunning is the checked LongRunning of a handler.
type longRunning[P any] struct {
	LongRunning[P]
	jobs      *jobs.Manager
	idem      *idempotency.Guard
	statusURL string
	// special holds the capabilities that never take the fast path.
	special map[string]bool
}

func (l *longRunning[P]) configure(c LongRunning[P], reg *core.Registry) error {
	l.LongRunning = c
	l.jobs, l.idem = c.Jobs, c.Idempotency
	if c.AsyncAfter < 0 || c.RecheckInterval < 0 {
		return errors.New("httpx: negative AsyncAfter or RecheckInterval")
	}
	if l.StreamMaxDuration == 0 {
		l.StreamMaxDuration = DefaultStreamMaxDuration
	}
	if l.RecheckInterval == 0 {
		l.RecheckInterval = DefaultRecheckInterval
	}
	if l.KeepAlive == 0 {
		l.KeepAlive = DefaultKeepAlive
	}
	if (l.jobs != nil || l.idem != nil) && c.Owner == nil {
		return errors.New("httpx: LongRunning.Owner is required with Jobs or Idempotency")
	}
	if l.jobs != nil {
		u, err := url.Parse(c.BaseURL)
		if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.HasSuffix(u.Path, "/") || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("httpx: LongRunning.BaseURL %q must be an absolute http(s) URL ending in / without query", c.BaseURL)
		}
		l.statusURL = c.BaseURL + RouteStatus + "?id="
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
func (l *longRunning[P]) applies(req *Request, name string) bool {
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
		http.StatusPreconditionRequired, core.StatusClientClosedRequest:
		return false
	}
	return m.status < 500
}

// idempotencyUnavailable answers a call whose key could not be claimed
// because the idempotency store did not answer: the call did not run,
// and the same key may be sent again (503 temporarily_unavailable, with
// Retry-After).
var idempotencyUnavailable = envelope{status: http.StatusServiceUnavailable, code: wireUnavailable,
	message: "idempotency keys cannot be checked now; the call did not run; retry later", retryAfter: unavailableRetry}

func idempotencyError(err error) *core.Error {
	switch {
	case errors.Is(err, idempotency.ErrInvalidKey):
		return core.NewError(core.CodeInvalidIdempotencyKey, core.StageInput,
			fmt.Sprintf("the Idempotency-Key must be 1 to %d printable ASCII characters", idempotency.MaxKeyLength), nil)
	case errors.Is(err, idempotency.ErrKeyReused):
		return core.NewError(core.CodeIdempotencyKeyReused, core.StageInput,
			"this Idempotency-Key was used for another capability or other arguments", nil)
	case errors.Is(err, idempotency.ErrInProgress):
		return core.NewError(core.CodeIdempotencyInProgress, core.StageInput,
			"the first call with this Idempotency-Key is still running; retry later", nil)
	case errors.Is(err, context.DeadlineExceeded):
		return core.NewError(core.CodeTimeout, core.StageInput, "the request ended while waiting for the first call with this Idempotency-Key", nil)
	case errors.Is(err, context.Canceled):
		return core.NewError(core.CodeCanceled, core.StageInput, "the request was canceled", nil)
	}
	return nil
}

// executeLong runs an execute that streams, runs as a job or carries an
// idempotency key.
func (h *Handler[C, P]) executeLong(ctx context.Context, exec *core.Executor[C, P], req *Request, name string, args []byte, principal P, buf *buffer) replyMeta {
	def, _ := h.reg.Lookup(name)
	key := ""
	if h.long.idem != nil {
		key = req.header("Idempotency-Key")
	}
	if def != nil && def.Streams() {
		if key != "" {
			return h.fail(ctx, buf, envelopeOf(core.NewError(core.CodeInvalidIdempotencyKey, core.StageInput,
				"a streaming capability takes no Idempotency-Key: a stream cannot be replayed", nil)))
		}
		return h.startStream(ctx, exec, name, args, principal, buf)
	}
	owner := ""
	if h.long.Owner != nil {
		owner = h.long.Owner(principal)
	}
	var claim *idempotency.Claim
	if key != "" {
		if owner == "" {
			return h.fail(ctx, buf, envelopeOf(core.NewError(core.CodeInvalidIdempotencyKey, core.StageInput,
				"this caller cannot use idempotency keys", nil)))
		}
		c, rec, err := h.long.idem.Begin(ctx, owner, key, idempotency.Fingerprint(name, args))
		if err != nil {
			if ce := idempotencyError(err); ce != nil {
				return h.fail(ctx, buf, envelopeOf(ce))
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
	case def != nil && def.Async() && owner == "":
		meta = h.fail(ctx, buf, envelope{status: http.StatusForbidden, code: core.WireUnauthorized,
			message: "this caller cannot start jobs"})
	case def != nil && def.Async(), h.long.jobs != nil && h.long.AsyncAfter > 0:
		meta = h.runJob(ctx, exec, name, def, args, principal, owner, buf)
	default:
		data, err := exec.ExecuteDynamic(ctx, name, principal, args, h.authorizer(principal))
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
func (h *Handler[C, P]) runJob(ctx context.Context, exec *core.Executor[C, P], name string, def *core.Definition, args []byte, principal P, owner string, buf *buffer) replyMeta {
	// The body is handed back once the answer is rendered; the job keeps
	// its own copy of the arguments.
	args = slices.Clone(args)
	authorize := h.authorizer(principal)
	call := h.long.jobs.Call(ctx, owner, name, func(jctx context.Context) (json.RawMessage, error) {
		return exec.ExecuteDynamic(jctx, name, principal, args, authorize)
	})
	async := def != nil && def.Async()
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
		if owner == "" {
			// A caller without an owner cannot poll: its long call is
			// awaited instead.
			<-call.Done()
		} else {
			rec, err := call.Detach(ctx)
			if err != nil {
				h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: recording a job failed",
					slog.String("capability", name), slog.String("error", err.Error()))
				return h.fail(ctx, buf, internalEnvelope)
			}
			if async || rec.State == jobs.StatePending {
				return h.pending(rec, buf, http.StatusAccepted)
			}
		}
	}
	data, err := call.Result()
	return h.answer(ctx, name, data, err, buf)
}

// pending renders {"status":"pending","status_url":...}.
func (h *Handler[C, P]) pending(rec *jobs.Record, buf *buffer, status int) replyMeta {
	wait := retryAfterSeconds(h.long.jobs.PollInterval())
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
// another caller is answered exactly like one that does not exist.
func (h *Handler[C, P]) status(ctx context.Context, req *Request, principal P, buf *buffer) replyMeta {
	vals, err := url.ParseQuery(req.RawQuery)
	id := vals.Get("id")
	owner := h.long.Owner(principal)
	if err != nil || id == "" || owner == "" {
		return h.fail(ctx, buf, envelopeOf(jobNotFound()))
	}
	var rec *jobs.Record
	if req.Method == http.MethodDelete {
		rec, err = h.long.jobs.Cancel(ctx, owner, id)
	} else {
		rec, err = h.long.jobs.Get(ctx, owner, id)
	}
	switch {
	case errors.Is(err, jobs.ErrNotFound):
		return h.fail(ctx, buf, envelopeOf(jobNotFound()))
	case err != nil:
		h.logger.LogAttrs(ctx, slog.LevelError, "agentcap: reading a job failed",
			slog.String("job", id), slog.String("error", err.Error()))
		return h.fail(ctx, buf, internalEnvelope)
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
		f := jobs.Failure{Code: core.WireInternalError, Message: "internal error"}
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
		fields["code"] = f.Code
		b := append(buf.b[:0], `{"status":"failed","error":`...)
		b = h.appendEnvelope(ctx, b, envelope{code: f.Code, message: f.Message, fields: fields}, "error")
		buf.b = append(b, '}', '\n')
	default:
		return h.pending(rec, buf, http.StatusOK)
	}
	return replyMeta{status: http.StatusOK, cache: cacheNoStore}
}

func jobNotFound() *core.Error {
	return core.NewError(core.CodeJobNotFound, core.StageLookup, "no such job", nil)
}

// appendFloat writes a progress figure; a value JSON cannot hold is 0.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
