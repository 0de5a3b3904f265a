package httpx_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

type appCtx struct{ User string }

type echoIn struct {
	Text string `json:"text" minLength:"1"`
}

type echoOut struct {
	Text string `json:"text"`
	User string `json:"user"`
}

type outN struct {
	N int `json:"n"`
}

// started is closed by the "wait" capability once it runs; it then blocks
// until its context ends and reports the context error on canceled.
type waitProbe struct {
	started  chan struct{}
	canceled chan error
}

// codes of the fixture's own refusals.
var (
	codeAlreadyDone  = agentcap.NewCode("already_done", agentcap.CodeConflict)
	codeTokenRevoked = agentcap.NewCode("token_revoked", agentcap.CodeAuthenticationRequired)
)

func fixture(t testing.TB, probe *waitProbe) *core.Executor {
	t.Helper()
	echo := core.MustDefine("echo", "Echo text back to the caller",
		func(_ context.Context, app appCtx, in echoIn) (echoOut, error) {
			return echoOut{Text: in.Text, User: app.User}, nil
		}, core.WithTags("demo"), core.WithScope("demo:read"), core.WithTitle("Echo text"), core.WithReadOnly())
	secret := core.MustDefine("admin.secret", "Admins only",
		func(_ context.Context, _ appCtx, _ core.NoInput) (outN, error) { return outN{N: 42}, nil },
		core.WithVisibility(func(_ context.Context, id *auth.Identity, _ bool) bool { return id != nil && id.Subject == "root" }))
	boom := core.MustDefine("boom", "Panics",
		func(_ context.Context, _ appCtx, _ core.NoInput) (outN, error) { panic("secret detail") })
	appErr := core.MustDefine("app_error", "Fails in its own words",
		func(_ context.Context, _ appCtx, _ core.NoInput) (outN, error) {
			return outN{}, agentcap.NewError(codeAlreadyDone, "the thing is already done").With("retry", false)
		})
	wait := core.MustDefine("wait", "Blocks until canceled",
		func(ctx context.Context, _ appCtx, _ core.NoInput) (outN, error) {
			if probe != nil {
				close(probe.started)
				<-ctx.Done()
				probe.canceled <- ctx.Err()
			}
			return outN{}, ctx.Err()
		})
	defs := []core.Definer{echo, secret, boom, appErr, wait}
	for _, name := range []string{"alpha", "bravo", "charlie", "delta"} {
		defs = append(defs, core.MustDefine("list."+name, "Listing filler "+strings.ToUpper(name),
			func(_ context.Context, _ appCtx, _ core.NoInput) (outN, error) { return outN{}, nil }))
	}
	exec, err := core.NewExecutor(core.MustRegistry(defs...), newAppCtx, core.Config{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

func newAppCtx(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (appCtx, error) {
	return appCtx{User: id.Subject}, nil
}

// authorizer is an auth.Authorizer made of functions; without them it
// allows every call, reports no grant status and never revokes.
type authorizer struct {
	authorize func(ctx context.Context, call *auth.Call) error
	grant     func(capability string) string
	recheck   func(ctx context.Context) error
}

func (a *authorizer) Authorize(ctx context.Context, call *auth.Call) error {
	if a.authorize == nil {
		return nil
	}
	return a.authorize(ctx, call)
}

func (a *authorizer) GrantStatus(capability string) string {
	if a.grant == nil {
		return ""
	}
	return a.grant(capability)
}

func (a *authorizer) Recheck(ctx context.Context) error {
	if a.recheck == nil {
		return nil
	}
	return a.recheck(ctx)
}

// forbidText refuses an echo of the text "forbidden".
func forbidText(_ context.Context, call *auth.Call) error {
	if in, ok := call.Input.(echoIn); ok && in.Text == "forbidden" {
		return core.ErrForbidden
	}
	return nil
}

// tokens is the fixture's verifier: it knows a few bearer tokens, and
// gives the identities it returns authz as their Authorizer.
type tokens struct {
	authz auth.Authorizer
	// anonymous admits list and describe without credentials.
	anonymous bool
}

func (tokens) Challenge() string { return `Bearer realm="test"` }

func (v tokens) Verify(_ context.Context, req *auth.Request) (*auth.Identity, error) {
	switch req.Authorization {
	case "":
		if v.anonymous && req.Discovery {
			return nil, nil
		}
		return nil, auth.ErrNoCredentials
	case "Bearer alice":
		return &auth.Identity{Subject: "alice", Authorizer: v.authz}, nil
	case "Bearer admin":
		return &auth.Identity{Subject: "root", Authorizer: v.authz}, nil
	case "Bearer banned":
		return nil, agentcap.NewError(agentcap.CodeUnauthorized, "the caller may not use this endpoint")
	case "Bearer revoked":
		return nil, agentcap.NewError(codeTokenRevoked, "the token was revoked").With("revoked_at", "2024-01-01")
	case "Bearer crash":
		return nil, errors.New("session store unreachable")
	default:
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, "the credentials are invalid")
	}
}

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newHandler serves the fixture with the tokens verifier, whose callers
// may not echo "forbidden"; mutate changes the configuration first.
func newHandler(t testing.TB, mutate func(*httpx.Config)) (*httpx.Handler, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cfg := httpx.Config{
		Verifier: tokens{authz: &authorizer{authorize: forbidText}},
		Logger:   slog.New(slog.NewTextHandler(logs, nil)),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := httpx.New(fixture(t, nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h, logs
}

type result struct {
	Status int
	Header http.Header
	Body   string
}

func call(t testing.TB, h http.Handler, method, target, auth, contentType, body string) result {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return result{Status: rec.Code, Header: rec.Header(), Body: rec.Body.String()}
}
