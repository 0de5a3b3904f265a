package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/agentcap/agentcap"
)

// ErrTimeout is the cause of a request that ran past
// Config.RequestTimeout.
var ErrTimeout = errors.New("client: request timed out")

// Result is the outcome of a successful execution: Data for a
// synchronous answer or a completed asynchronous one, or Stream for an
// answer that is an event stream.
type Result struct {
	// Data is the capability's result as JSON (null when the location
	// sent none).
	Data json.RawMessage
	// Stream is set when the location answered with an event stream. The
	// caller must read it to its end or Close it.
	Stream *Stream
}

// ExecuteOption adjusts one execution.
type ExecuteOption func(*executeConfig)

type executeConfig struct {
	idempotencyKey    string
	confirmationToken string
	// onApproval, when set, makes Execute wait for a person's
	// confirmation (WithConfirmationWait).
	onApproval func(Approval)
}

// WithIdempotencyKey sends key as the Idempotency-Key header, so that a
// location that honours it runs a retried call only once. Retries reuse
// it: those of a 429 or 503 temporarily_unavailable answer, and those of
// a call whose connection failed before its answer came, which the
// client makes only for calls with a key (each with a fresh agent JWT).
func WithIdempotencyKey(key string) ExecuteOption {
	return func(c *executeConfig) { c.idempotencyKey = key }
}

// executeBody is the body of POST /capability/execute.
type executeBody struct {
	Capability        string          `json:"capability"`
	Arguments         json.RawMessage `json:"arguments,omitempty"`
	ConfirmationToken string          `json:"confirmation_token,omitempty"`
}

// asyncAnswer is an execute answer: data, 202 pending (a job, or a
// person's confirmation), or a polling answer with a job's final state.
type asyncAnswer struct {
	// pendingAnswer holds status, status_url and error, and the members
	// of a confirmation_pending answer.
	pendingAnswer
	Data       json.RawMessage `json:"data"`
	Result     json.RawMessage `json:"result"`
	RetryAfter json.Number     `json:"retry_after"`
}

// encodeArguments turns args into a JSON object: nil (and an empty
// json.RawMessage or []byte) stays absent; a json.RawMessage or []byte is
// used as it is; anything else is encoded with encoding/json. The result
// must be a JSON object.
func encodeArguments(args any) (json.RawMessage, error) {
	var raw []byte
	switch v := args.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("client: encode arguments: %w", err)
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	if raw[0] != '{' || !json.Valid(raw) {
		return nil, errors.New("client: arguments must be a JSON object")
	}
	return raw, nil
}

// Execute runs capability with args (see encodeArguments) at the
// capability's location, or the provider's default location, signing a
// fresh agent JWT whose aud is that location and whose capabilities claim
// names only this capability.
//
// A 202 answer is polled at its status_url (which must be on the origin
// of the issuer or of the location) with backoff until it completes; if
// ctx ends first, the job is cancelled with DELETE on its status_url. An
// event stream is returned as Result.Stream. Failures are *Error values;
// a failed asynchronous result has Status 0. A capability that needs a
// confirmation fails without one (WithConfirmationToken) with a
// *ConfirmationRequired carrying the preview and a fresh token. A call
// that waits for a person's confirmation (202 confirmation_pending) fails
// with a *ConfirmationPending, unless WithConfirmationWait makes Execute
// wait for the decision and then run the call with the token it gives.
// ctx bounds the whole call, polling and waiting included.
func (a *Agent) Execute(ctx context.Context, capability string, args any, opts ...ExecuteOption) (*Result, error) {
	var cfg executeConfig
	for _, o := range opts {
		o(&cfg)
	}
	arguments, err := encodeArguments(args)
	if err != nil {
		return nil, err
	}
	res, err := a.execute(ctx, capability, arguments, cfg)
	var pending *ConfirmationPending
	if cfg.onApproval == nil || !errors.As(err, &pending) {
		return res, err
	}
	c, err := a.AwaitConfirmation(ctx, pending, cfg.onApproval)
	if err != nil {
		return nil, err
	}
	// Once: a location that asks again gets a *ConfirmationPending.
	cfg.confirmationToken, cfg.onApproval = c.Token, nil
	return a.execute(ctx, capability, arguments, cfg)
}

// execute is one execution request of Execute, with its polling.
func (a *Agent) execute(ctx context.Context, capability string, arguments json.RawMessage, cfg executeConfig) (*Result, error) {
	loc, err := a.location(ctx, capability)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(executeBody{Capability: capability, Arguments: arguments, ConfirmationToken: cfg.confirmationToken})
	if err != nil {
		return nil, fmt.Errorf("client: encode request: %w", err)
	}
	names := []string{capability}
	build := func() (*http.Request, error) {
		tok, err := a.agentSigner.agentToken(a.conn.HostID, a.conn.AgentID, loc, names)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequest(http.MethodPost, loc, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if cfg.idempotencyKey != "" {
			req.Header.Set("Idempotency-Key", cfg.idempotencyKey)
		}
		return req, nil
	}

	rctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(a.c.cfg.RequestTimeout, func() { cancel(ErrTimeout) })
	resp, err := a.c.send(rctx, build)
	if err != nil {
		timer.Stop()
		cancel(nil)
		return nil, timeoutCause(rctx, err)
	}
	if resp.StatusCode == http.StatusOK && isEventStream(resp.Header.Get("Content-Type")) {
		// The stream may last longer than one request's timeout; the
		// caller's context and Close end it.
		timer.Stop()
		return &Result{Stream: newStream(resp.Body, func() { cancel(nil) })}, nil
	}
	defer cancel(nil)
	defer timer.Stop()
	defer resp.Body.Close()

	var ans asyncAnswer
	if err := a.c.readJSON(resp, &ans); err != nil {
		a.forgetStale(capability, err)
		return nil, confirmationRequired(capability, timeoutCause(rctx, err))
	}
	switch {
	case ans.pending():
		return nil, a.confirmationPending(capability, loc, ans.pendingAnswer)
	case resp.StatusCode == http.StatusAccepted || (ans.Status == "pending" && ans.StatusURL != ""):
		timer.Stop()
		return a.pollAsync(ctx, capability, loc, ans)
	case ans.Status == "completed" || ans.Status == "failed":
		return asyncOutcome(capability, ans)
	case ans.Data == nil:
		return &Result{Data: json.RawMessage("null")}, nil
	default:
		return &Result{Data: ans.Data}, nil
	}
}

// forgetStale drops the cached location of a capability after an answer
// saying the client's view of it is stale (protocol §10.6).
func (a *Agent) forgetStale(capability string, err error) {
	if IsCode(err, agentcap.CodeCapabilityNotFound) || IsCode(err, agentcap.CodeInvalidRequest) {
		a.forgetLocation(capability)
	}
}

func timeoutCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrTimeout) {
		return ErrTimeout
	}
	return err
}

func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// asyncOutcome turns a completed or failed asynchronous answer into a
// result or an error.
func asyncOutcome(capability string, ans asyncAnswer) (*Result, error) {
	if ans.Status == "failed" {
		e := decodeErrorObject(ans.Error)
		if e.Code == "" && e.Message == "" {
			e.Message = "asynchronous execution failed"
		}
		return nil, confirmationRequired(capability, e)
	}
	if ans.Result == nil {
		return &Result{Data: json.RawMessage("null")}, nil
	}
	return &Result{Data: ans.Result}, nil
}

// pollAsync polls a pending execution's status_url with a fresh agent JWT
// per poll, waiting 1 s (or the server's retry_after) and doubling up to
// MaxPollInterval, until the execution completes or fails or ctx ends.
func (a *Agent) pollAsync(ctx context.Context, capability, loc string, ans asyncAnswer) (*Result, error) {
	statusURL, err := a.checkStatusURL(loc, ans.StatusURL)
	if err != nil {
		return nil, err
	}
	wait := time.Second
	if d, ok := parseRetryAfter(ans.RetryAfter.String(), time.Time{}); ok && d > wait {
		wait = d
	}
	wait = min(wait, a.c.cfg.MaxPollInterval)
	names := []string{capability}
	token := func() (string, error) {
		return a.agentSigner.agentToken(a.conn.HostID, a.conn.AgentID, loc, names)
	}
	for {
		if err := a.c.cfg.Sleep(ctx, wait); err != nil {
			a.cancelAsync(ctx, statusURL, token)
			return nil, err
		}
		var next asyncAnswer
		_, header, err := a.c.do(ctx, call{method: http.MethodGet, url: statusURL, token: token}, &next)
		if err != nil {
			a.cancelAsync(ctx, statusURL, token)
			return nil, err
		}
		switch next.Status {
		case "completed", "failed":
			return asyncOutcome(capability, next)
		case "pending", "":
		default:
			return nil, fmt.Errorf("client: unknown async status %q", next.Status)
		}
		wait = min(wait*2, a.c.cfg.MaxPollInterval)
		if d, ok := parseRetryAfter(header.Get("Retry-After"), a.c.cfg.Now()); ok && d > wait {
			wait = min(d, max(a.c.cfg.MaxPollInterval, wait))
		}
	}
}

// cancelAsync asks the location to cancel a job whose caller gave up
// waiting (its context ended: Ctrl-C in the CLI, say) with DELETE on the
// status_url, as agentcap's own locations accept. It does nothing while
// ctx is still live, and is best effort: a location that does not cancel
// jobs just lets it run.
func (a *Agent) cancelAsync(ctx context.Context, statusURL string, token func() (string, error)) {
	if ctx.Err() == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelAsyncTimeout)
	defer cancel()
	_, _, _ = a.c.do(dctx, call{method: http.MethodDelete, url: statusURL, token: token}, nil)
}

// cancelAsyncTimeout bounds the DELETE that cancels an abandoned job.
const cancelAsyncTimeout = 5 * time.Second

// checkStatusURL accepts a status_url on the origin of the issuer or of
// the location that accepted the call: polling sends an agent JWT, which
// must not go to a server the agent never chose.
func (a *Agent) checkStatusURL(loc, raw string) (string, error) {
	if raw == "" {
		return "", errors.New("client: 202 answer without status_url")
	}
	u, err := a.c.checkURL(raw)
	if err != nil {
		return "", fmt.Errorf("client: status_url: %w", err)
	}
	iss, err := url.Parse(a.conn.Issuer)
	if err != nil {
		return "", fmt.Errorf("client: issuer: %w", err)
	}
	l, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("client: location: %w", err)
	}
	if o := origin(u); o != origin(iss) && o != origin(l) {
		return "", fmt.Errorf("client: status_url %s is not on the issuer's origin %s", raw, origin(iss))
	}
	return raw, nil
}
