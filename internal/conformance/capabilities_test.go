// Package conformance_test runs one table of HTTP exchanges against the
// capability surface served by net/http, Gin, Echo and Fiber, and requires
// byte-identical answers from all four.
package conformance_test

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

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

// Application codes of the test capabilities.
var (
	codeTaskLocked     = agentcap.NewCode("task_locked", agentcap.CodeConflict)
	codeSessionExpired = agentcap.NewCode("session_expired", agentcap.CodeAuthenticationRequired)
)

// capabilities is the test capability set.
func capabilities() []core.Definer {
	noop := func(n int) func(context.Context, app, core.NoInput) (countOut, error) {
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
			core.WithVisibility(func(_ context.Context, id *auth.Identity, _ bool) bool { return id != nil && id.Subject == "root" })),
		core.MustDefine("conflict", "Fails with an application error",
			func(context.Context, app, core.NoInput) (countOut, error) {
				return countOut{}, agentcap.NewError(codeTaskLocked, "the task is locked by another editor").
					With("retry_after", 5).With("resource", map[string]string{"kind": "task", "id": "t-1"})
			}),
		core.MustDefine("expired", "Fails with an application 401",
			func(context.Context, app, core.NoInput) (countOut, error) {
				return countOut{}, agentcap.NewError(codeSessionExpired, "sign in again")
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

// tokens is the test verifier. It knows a few bearer tokens and gives
// each identity the Authorizer that authorizer returns for its subject
// (none when authorizer is nil).
type tokens struct {
	authorizer func(subject string) auth.Authorizer
	// anonymous admits list and describe without credentials.
	anonymous bool
	// challenge is sent with every 401 answer; "" sends none.
	challenge string
}

func (v tokens) Challenge() string { return v.challenge }

func (v tokens) Verify(_ context.Context, req *auth.Request) (*auth.Identity, error) {
	identity := func(subject string) *auth.Identity {
		id := &auth.Identity{Subject: subject}
		if v.authorizer != nil {
			id.Authorizer = v.authorizer(subject)
		}
		return id
	}
	switch req.Authorization {
	case "":
		if v.anonymous && req.Discovery {
			return nil, nil
		}
		return nil, auth.ErrNoCredentials
	case "Bearer alice":
		return identity("alice"), nil
	case "Bearer admin":
		return identity("root"), nil
	case "Bearer blocked":
		return nil, agentcap.NewError(agentcap.CodeUnauthorized, "the caller may not use this endpoint")
	case "Bearer nocode":
		// An error that forgot its code: a mistake of the verifier.
		return nil, &agentcap.Error{Message: "this token may not be used here"}
	default:
		return nil, agentcap.Wrap(agentcap.CodeInvalidJWT, "the credentials are invalid", errors.New("unknown token"))
	}
}

// grants stands in for an agent's grants: amounts over 100 are refused
// generically, the currency XXX with an error that forgot its code, other
// currencies than EUR with the refusal of a grant constraint; the tasks
// and echo are granted, nothing else.
type grants struct{}

func (grants) Authorize(_ context.Context, call *auth.Call) error {
	in, ok := call.Input.(payIn)
	if !ok {
		return nil
	}
	if in.Amount > 100 {
		return core.ErrForbidden
	}
	if in.Currency == "XXX" {
		return &agentcap.Error{Message: "no payments in the test currency"}
	}
	if in.Currency != "EUR" {
		return agentcap.NewError(agentcap.CodeConstraintViolated, "the arguments are outside the grant").
			With("violations", []map[string]any{{"field": "currency", "constraint": map[string]any{"in": []string{"EUR"}}, "actual": in.Currency}})
	}
	return nil
}

func (grants) GrantStatus(capability string) string {
	if strings.HasPrefix(capability, "tasks.") || capability == "echo" {
		return "granted"
	}
	return "not_granted"
}

func (grants) Recheck(context.Context) error { return nil }

// maxBody keeps the large-body cases quick.
const maxBody = 64 << 10

// newContext builds the application context: the caller, and the tenant
// a router's middleware put on the request.
func newContext(ctx context.Context, id *auth.Identity, _ *core.Definition, _ any) (app, error) {
	return app{User: id.Subject, Tenant: tenantOf(ctx)}, nil
}

// config is the handler configuration of the table.
func config() httpx.Config {
	return httpx.Config{
		Verifier: tokens{
			authorizer: func(string) auth.Authorizer { return grants{} },
			anonymous:  true,
			challenge:  `Bearer realm="conformance"`,
		},
		MaxBodyBytes:     maxBody,
		DefaultListLimit: 5,
		MaxListLimit:     20,
	}
}

func newHandler() (*httpx.Handler, error) {
	defs := append(capabilities(), waitCapability())
	exec, err := core.NewExecutor(core.MustRegistry(defs...), newContext, core.Config{Timeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	return httpx.New(exec, config())
}
