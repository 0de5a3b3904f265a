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

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

type user struct {
	ID    string
	Admin bool
}

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

func fixture(t testing.TB, probe *waitProbe) *core.Executor[appCtx, user] {
	t.Helper()
	echo := core.MustDefine("echo", "Echo text back to the caller",
		func(_ context.Context, app appCtx, in echoIn) (echoOut, error) {
			return echoOut{Text: in.Text, User: app.User}, nil
		}, core.WithTags("demo"), core.WithScope("demo:read"))
	secret := core.MustDefine("admin.secret", "Admins only",
		func(_ context.Context, _ appCtx, _ core.NoInput) (outN, error) { return outN{N: 42}, nil },
		core.VisibleTo(func(_ context.Context, u user) bool { return u.Admin }))
	boom := core.MustDefine("boom", "Panics",
		func(_ context.Context, _ appCtx, _ core.NoInput) (outN, error) { panic("secret detail") })
	appErr := core.MustDefine("app_error", "Fails in its own words",
		func(_ context.Context, _ appCtx, _ core.NoInput) (outN, error) {
			return outN{}, core.Conflict("already_done", "the thing is already done").With("retry", false)
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
	exec, err := core.NewExecutor(core.MustRegistry(defs...), core.ExecutorConfig[appCtx, user]{
		CreateContext: func(_ context.Context, u user, _ *core.Definition, _ any) (appCtx, error) {
			return appCtx{User: u.ID}, nil
		},
		Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

func authenticate(_ context.Context, req *httpx.Request) (user, error) {
	switch h := req.Header("Authorization"); h {
	case "":
		return user{}, httpx.ErrNoCredentials
	case "Bearer alice":
		return user{ID: "alice"}, nil
	case "Bearer admin":
		return user{ID: "root", Admin: true}, nil
	case "Bearer banned":
		return user{}, httpx.ErrNotAllowed
	case "Bearer revoked":
		return user{}, core.Unauthorized("token_revoked", "the token was revoked").With("revoked_at", "2024-01-01")
	case "Bearer crash":
		return user{}, errors.New("session store unreachable")
	default:
		return user{}, httpx.ErrBadCredentials
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

func newHandler(t testing.TB, mutate func(*httpx.Config[user])) (*httpx.Handler[appCtx, user], *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cfg := httpx.Config[user]{
		Authenticate: authenticate,
		Challenge:    `Bearer realm="test"`,
		Logger:       slog.New(slog.NewTextHandler(logs, nil)),
		Authorize: func(_ context.Context, u user, inv *core.Invocation) error {
			if in, ok := inv.Input.(echoIn); ok && in.Text == "forbidden" {
				return core.ErrForbidden
			}
			return nil
		},
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
