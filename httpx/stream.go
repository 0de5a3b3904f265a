package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
)

var (
	hdrEventStream = []string{"text/event-stream"}
	hdrNoCache     = []string{"no-cache"}
	hdrNoBuffering = []string{"no"}
)

var (
	// errStreamExpired is the cause of a stream cut at its maximum
	// duration.
	errStreamExpired = errors.New("httpx: the stream reached its maximum duration")
	// errClientGone is the cause of a stream whose client went away.
	errClientGone = errors.New("httpx: the client went away")
)

// streamEvent is one event on its way to the client.
type streamEvent struct {
	typ  string
	data []byte
}

// eventStream carries a streaming execution from the goroutine running it
// to the writer of the response. The execution's chunks are validated by
// core before they get here.
type eventStream struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	events chan streamEvent
	// gone is closed when the writer stops; nothing is sent after that.
	gone     chan struct{}
	goneOnce sync.Once

	recheck   func(ctx context.Context) error
	interval  time.Duration
	keepAlive time.Duration
}

// startStream runs a streaming capability. Until its handler starts, the
// call can still be refused like any other (400, 403, ...); once it has
// started the answer is 200 text/event-stream, and everything else,
// failures included, travels as events.
func (h *Handler) startStream(ctx context.Context, exec *core.Executor, name string, args []byte, id *auth.Identity, buf *buffer) replyMeta {
	release := func() {}
	if slots := h.long.streams; slots != nil {
		if !slots.take(id.Subject) {
			return h.fail(ctx, buf, limited("this caller has too many streams open; retry later", streamRetry))
		}
		release = func() { slots.put(id.Subject) }
	}
	args = slices.Clone(args)
	sctx, cancel := context.WithCancelCause(ctx)
	if d := h.long.StreamMaxDuration; d > 0 {
		var stop context.CancelFunc
		sctx, stop = context.WithTimeoutCause(sctx, d, errStreamExpired)
		inner := cancel
		cancel = func(cause error) { inner(cause); stop() }
	}
	s := &eventStream{
		ctx:       sctx,
		cancel:    cancel,
		events:    make(chan streamEvent, 16),
		gone:      make(chan struct{}),
		interval:  h.long.RecheckInterval,
		keepAlive: h.long.KeepAlive,
	}
	if id.Authorizer != nil {
		s.recheck = id.Authorizer.Recheck
	}
	started := make(chan struct{})
	var once sync.Once
	xctx := core.OnHandlerStart(core.WithStream(sctx, s.sink), func() { once.Do(func() { close(started) }) })
	type outcome struct {
		data []byte
		err  error
	}
	early := make(chan outcome, 1)
	go func() {
		// The slot is held while the execution runs and its last
		// events are handed over.
		defer release()
		data, err := exec.Execute(xctx, name, id, args)
		select {
		case <-started:
			s.finish(&h.handlerBase, ctx, name, data, err)
		default:
			early <- outcome{data, err}
		}
	}()
	select {
	case <-started:
		return replyMeta{status: http.StatusOK, stream: s}
	case o := <-early:
		cancel(nil)
		return h.answer(ctx, name, o.data, o.err, buf)
	}
}

// streamRetry is the Retry-After of a caller at its bound of streams:
// one ends when its client goes away or its execution does.
const streamRetry = 5 * time.Second

// errStreamExpiredAnswer tells a caller that its stream was cut at its
// maximum duration.
var errStreamExpiredAnswer = &agentcap.Error{Code: agentcap.CodeStreamExpired, Stage: agentcap.StageHandler,
	Message: "the stream reached its maximum duration"}

// sink is the stream's core.StreamSink.
func (s *eventStream) sink(chunk json.RawMessage) error {
	if err := s.ctx.Err(); err != nil {
		return context.Cause(s.ctx)
	}
	select {
	case s.events <- streamEvent{typ: agentcap.EventData, data: chunk}:
		return nil
	case <-s.gone:
		return errClientGone
	case <-s.ctx.Done():
		return context.Cause(s.ctx)
	}
}

// finish sends the last events: done with the result, or error (rendering
// why the stream was cut, when it was) followed by an empty done.
func (s *eventStream) finish(h *handlerBase, ctx context.Context, name string, data []byte, err error) {
	defer close(s.events)
	if err == nil {
		s.send(streamEvent{typ: agentcap.EventDone, data: data})
		return
	}
	var e *agentcap.Error
	cause := context.Cause(s.ctx)
	switch {
	case errors.Is(cause, errStreamExpired):
		e = errStreamExpiredAnswer
	case cause != nil && agentcap.As(cause) != nil:
		e = agentcap.As(cause)
	default:
		e = asError(err)
		h.logFailure(ctx, name, e)
	}
	s.send(streamEvent{typ: agentcap.EventError, data: h.appendError(ctx, nil, e, agentcap.KeyError)})
	s.send(streamEvent{typ: agentcap.EventDone})
}

func (s *eventStream) send(ev streamEvent) {
	// A live writer takes the last events at once; a response that is
	// never written (a Serve caller that dropped it without Release)
	// must not hold this goroutine forever.
	t := time.NewTimer(finalEventWait)
	defer t.Stop()
	select {
	case s.events <- ev:
	case <-s.gone:
	case <-t.C:
	}
}

// finalEventWait bounds how long the last events of a stream wait for a
// writer that does not read them.
const finalEventWait = 30 * time.Second

// abandon stops a stream that will never be written.
func (s *eventStream) abandon() {
	s.goneOnce.Do(func() { close(s.gone) })
	s.cancel(errClientGone)
}

func (s *eventStream) setHeaders(hd http.Header) {
	hd["Content-Type"] = hdrEventStream
	hd["Cache-Control"] = hdrNoCache
	hd["X-Content-Type-Options"] = hdrNoSniff
	// Proxies that buffer answers (nginx) pass this one through as it
	// comes.
	hd["X-Accel-Buffering"] = hdrNoBuffering
}

func (s *eventStream) serveHTTP(w http.ResponseWriter) {
	s.setHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	s.write(w, rc.Flush)
}

// write sends the events to w, flushing after each, until the stream
// ends or a write fails (the client went away), which cancels the
// execution. It also rechecks the caller periodically and keeps an idle
// connection alive with comment lines.
func (s *eventStream) write(w io.Writer, flush func() error) {
	defer s.abandon()
	if flush() != nil {
		return
	}
	var recheck, keepAlive <-chan time.Time
	if s.recheck != nil && s.interval > 0 {
		t := time.NewTicker(s.interval)
		defer t.Stop()
		recheck = t.C
	}
	if s.keepAlive > 0 {
		t := time.NewTicker(s.keepAlive)
		defer t.Stop()
		keepAlive = t.C
	}
	frame := make([]byte, 0, 512)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return
			}
			frame = appendEvent(frame[:0], ev)
		case <-recheck:
			if err := s.recheck(s.ctx); err != nil {
				// The execution ends; its error event says why.
				s.cancel(err)
			}
			continue
		case <-keepAlive:
			frame = append(frame[:0], ": keep-alive\n\n"...)
		}
		if _, err := w.Write(frame); err != nil {
			return
		}
		if flush() != nil {
			return
		}
	}
}

// appendEvent renders one server-sent event. The data is one line: JSON
// as agentcap encodes it holds no line breaks.
func appendEvent(b []byte, ev streamEvent) []byte {
	b = append(b, "event: "...)
	b = append(b, ev.typ...)
	b = append(b, "\ndata: "...)
	b = append(b, ev.data...)
	return append(b, '\n', '\n')
}

// Streaming reports whether the response is an event stream, whose body
// is written with WriteStream rather than taken from Body.
func (r *Response) Streaming() bool { return r.stream != nil }

// WriteStream writes an event stream's body to w, after the status and
// headers have been sent, calling flush after every event so that the
// client sees each as it happens. It returns when the stream ends: after
// its done event, or when a write or flush fails because the client went
// away (which cancels the execution). Call Release afterwards. It is for
// mounts whose framework does not hand out an http.ResponseWriter (see
// WriteResponse for those that do).
func (r *Response) WriteStream(w io.Writer, flush func() error) {
	if r.stream == nil {
		return
	}
	r.stream.write(w, flush)
}

// WriteResponse writes resp to w, streaming it when it is an event stream
// (flushing through http.NewResponseController), and releases it. It is
// what mounts over net/http writers (Gin, Echo) use.
func WriteResponse(w http.ResponseWriter, resp *Response) {
	hd := w.Header()
	for k, v := range resp.Header {
		hd[k] = v
	}
	w.WriteHeader(resp.Status)
	if resp.stream != nil {
		resp.stream.write(w, http.NewResponseController(w).Flush)
	} else {
		// A write error means the client is gone; there is nobody to tell.
		_, _ = w.Write(resp.Body)
	}
	resp.Release()
}
