// Package conformance_test runs one table of HTTP exchanges against the
// capability surface served by net/http, Gin, Echo and Fiber, and requires
// byte-identical answers from all four.
package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// principal is what the test authenticator verifies.
type principal struct {
	Name  string
	Admin bool
}

// app is the application context: the tenant comes from a value the
// framework's own middleware put on the request.
type app struct {
	User   string
	Tenant string
}

// tenantKey is the net/http middleware's context key. Gin, Echo and Fiber
// middleware store the tenant under the string key "tenant" with their own
// APIs (c.Set, c.Locals).
type tenantKey struct{}

func tenantOf(ctx context.Context) string {
	if v, ok := ctx.Value(tenantKey{}).(string); ok {
		return v
	}
	if v, ok := ctx.Value("tenant").(string); ok {
		return v
	}
	return ""
}

type echoIn struct {
	Text string `json:"text" minLength:"1"`
}

type echoOut struct {
	Text   string `json:"text"`
	User   string `json:"user"`
	Tenant string `json:"tenant"`
}

type taskIn struct {
	Title    string   `json:"title" minLength:"1"`
	Priority int      `json:"priority" minimum:"1"`
	Labels   []string `json:"labels,omitempty"`
}

type taskOut struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type payIn struct {
	Amount   int    `json:"amount"`
	Currency string `json:"currency"`
}

type payOut struct {
	Paid int `json:"paid"`
}

type countOut struct {
	N int `json:"n"`
}

// lingering receives the context of each "linger" call, so a test can use
// it after the request is over.
var lingering = make(chan context.Context, 16)

// capabilities is the test capability set.
func capabilities() []core.Definer {
	noop := func(n int) core.Handler[app, core.NoInput, countOut] {
		return func(context.Context, app, core.NoInput) (countOut, error) { return countOut{N: n}, nil }
	}
	return []core.Definer{
		core.MustDefine("echo", "Echo text with the caller and tenant",
			func(_ context.Context, a app, in echoIn) (echoOut, error) {
				return echoOut{Text: in.Text, User: a.User, Tenant: a.Tenant}, nil
			}, core.WithTags("demo"), core.WithScope("demo:read")),
		core.MustDefine("tasks.create", "Create a task",
			func(_ context.Context, _ app, in taskIn) (taskOut, error) {
				return taskOut{ID: "t-1", Title: in.Title}, nil
			}, core.WithRisk(core.RiskMedium), core.WithApproval(core.ApprovalSession)),
		core.MustDefine("tasks.count", "Count tasks", noop(3)),
		core.MustDefine("payments.send", "Send a payment",
			func(_ context.Context, _ app, in payIn) (payOut, error) { return payOut{Paid: in.Amount}, nil },
			core.WithRequiredConstraints("amount", "currency"), core.WithRisk(core.RiskHigh)),
		core.MustDefine("admin.report", "Administrative report", noop(7),
			core.VisibleTo(func(_ context.Context, p principal) bool { return p.Admin })),
		core.MustDefine("conflict", "Fails with an application error",
			func(context.Context, app, core.NoInput) (countOut, error) {
				return countOut{}, core.Conflict("task_locked", "the task is locked by another editor").
					With("retry_after", 5).With("resource", map[string]string{"kind": "task", "id": "t-1"})
			}),
		core.MustDefine("expired", "Fails with an application 401",
			func(context.Context, app, core.NoInput) (countOut, error) {
				return countOut{}, core.Unauthorized("session_expired", "sign in again")
			}),
		core.MustDefine("panics", "Panics", func(context.Context, app, core.NoInput) (countOut, error) {
			panic("database password is hunter2")
		}),
		core.MustDefine("fails", "Fails with a plain error", func(context.Context, app, core.NoInput) (countOut, error) {
			return countOut{}, errors.New("connection to 10.0.0.7 refused")
		}),
		core.MustDefine("bad_output", "Returns output its schema refuses", noop(1),
			core.WithOutputSchema([]byte(`{"type":"object","properties":{"n":{"type":"integer","minimum":10}},"required":["n"],"additionalProperties":false}`))),
		core.MustDefine("slow", "Never finishes in time",
			func(ctx context.Context, _ app, _ core.NoInput) (countOut, error) {
				<-ctx.Done()
				return countOut{}, ctx.Err()
			}, core.WithTimeout(20*time.Millisecond)),
		core.MustDefine("linger", "Hands its context to the test",
			func(ctx context.Context, _ app, _ core.NoInput) (countOut, error) {
				lingering <- ctx
				return countOut{N: 1}, nil
			}),
	}
}

// started and stopped let the cancellation test watch "wait".
var (
	waitStarted = make(chan struct{}, 4)
	waitEnded   = make(chan error, 4)
)

func waitCapability() core.Definer {
	return core.MustDefine("wait", "Blocks until its context ends",
		func(ctx context.Context, _ app, _ core.NoInput) (countOut, error) {
			waitStarted <- struct{}{}
			<-ctx.Done()
			waitEnded <- ctx.Err()
			return countOut{}, ctx.Err()
		})
}

func authenticate(_ context.Context, req *httpx.Request) (principal, error) {
	switch req.Header("Authorization") {
	case "":
		return principal{}, httpx.ErrNoCredentials
	case "Bearer alice":
		return principal{Name: "alice"}, nil
	case "Bearer admin":
		return principal{Name: "root", Admin: true}, nil
	case "Bearer blocked":
		return principal{}, httpx.ErrNotAllowed
	case "Bearer nocode":
		// An application error that forgot its code.
		return principal{}, &core.AppError{Status: http.StatusForbidden, Message: "this token may not be used here"}
	default:
		return principal{}, fmt.Errorf("%w: unknown token", httpx.ErrBadCredentials)
	}
}

// authorize stands in for grant checks: amounts over 100 are refused
// generically, other currencies than EUR with an application error, and
// the currency XXX with one that forgot its code.
func authorize(_ context.Context, _ principal, inv *core.Invocation) error {
	in, ok := inv.Input.(payIn)
	if !ok {
		return nil
	}
	if in.Amount > 100 {
		return core.ErrForbidden
	}
	if in.Currency == "XXX" {
		return &core.AppError{Status: http.StatusUnprocessableEntity, Message: "no payments in the test currency"}
	}
	if in.Currency != "EUR" {
		return core.Forbidden("constraint_violated", "the arguments are outside the grant").
			With("violations", []map[string]any{{"field": "currency", "constraint": map[string]any{"in": []string{"EUR"}}, "actual": in.Currency}})
	}
	return nil
}

func grantStatus(_ context.Context, _ principal, d *core.Definition) string {
	if strings.HasPrefix(d.Name(), "tasks.") || d.Name() == "echo" {
		return "granted"
	}
	return "not_granted"
}

// maxBody keeps the large-body cases quick.
const maxBody = 64 << 10

func newHandler() (*httpx.Handler[app, principal], error) {
	defs := append(capabilities(), waitCapability())
	exec, err := core.NewExecutor(core.MustRegistry(defs...), core.ExecutorConfig[app, principal]{
		CreateContext: func(ctx context.Context, p principal, _ *core.Definition, _ any) (app, error) {
			return app{User: p.Name, Tenant: tenantOf(ctx)}, nil
		},
		Timeout: 10 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return httpx.New(exec, httpx.Config[principal]{
		Authenticate:            authenticate,
		Challenge:               `Bearer realm="conformance"`,
		AllowAnonymousDiscovery: true,
		MaxBodyBytes:            maxBody,
		DefaultListLimit:        5,
		MaxListLimit:            20,
		Authorize:               authorize,
		GrantStatus:             grantStatus,
	})
}
