package mcpx_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gin-gonic/gin"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/gofiber/fiber/v2"
	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/auth/oidcauth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/echox"
	"github.com/agentcap/agentcap/fiberx"
	"github.com/agentcap/agentcap/ginx"
	"github.com/agentcap/agentcap/internal/oidctest"
	"github.com/agentcap/agentcap/mcpx"
)

// app is the application context: the user the call acts for.
type app struct{ user string }

// newApp is the executor's context function: the user the caller acts
// for, none for an anonymous caller.
func newApp(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (app, error) {
	if id == nil {
		return app{}, nil
	}
	return app{user: id.UserID}, nil
}

// person is the identity of a user who acts for themself, as the OIDC
// verifier and the stdio server make it.
func person(name string) *auth.Identity {
	return &auth.Identity{Subject: name, UserID: name}
}

// Application codes of the fixture.
var (
	codeInsufficientFunds = agentcap.NewCode("insufficient_funds", agentcap.CodeConflict)
	codeAccountSuspended  = agentcap.NewCode("account_suspended", agentcap.CodeUnauthorized)
)

type echoIn struct {
	Message string `json:"message" minLength:"1" description:"What to say back."`
}

type echoOut struct {
	Message string `json:"message"`
	By      string `json:"by"`
}

type item struct {
	Name string `json:"name"`
}

type transferIn struct {
	Amount int `json:"amount" minimum:"1"`
}

type transferOut struct {
	Status string `json:"status"`
}

type slowOut struct {
	Done bool `json:"done"`
}

// probe lets a test watch the slow capability: started receives when a
// call begins, ended the context error it ended with.
type probe struct {
	started chan struct{}
	ended   chan error
}

func newProbe() *probe {
	return &probe{started: make(chan struct{}, 4), ended: make(chan error, 4)}
}

// capabilities returns a fresh set of the fixture's capabilities; secret
// is visible as visible says.
func capabilities(pr *probe, visible core.Option) []core.Definer {
	return []core.Definer{
		core.MustDefine("echo", "Say the message back.",
			func(ctx context.Context, a app, in echoIn) (echoOut, error) {
				core.ReportProgress(ctx, core.Progress{Progress: 1, Total: 2, Message: "heard"})
				core.ReportProgress(ctx, core.Progress{Progress: 2, Total: 2, Message: "said"})
				return echoOut{Message: in.Message, By: a.user}, nil
			}, core.WithReadOnly(), core.WithTitle("Echo a message")),
		core.MustDefine("list_items", "List the items.",
			func(context.Context, app, core.NoInput) ([]item, error) {
				return []item{{Name: "a"}, {Name: "b"}}, nil
			}, core.WithReadOnly()),
		core.MustDefine("transfer", "Move an amount.",
			func(_ context.Context, _ app, in transferIn) (transferOut, error) {
				if in.Amount > 100 {
					return transferOut{}, agentcap.NewError(codeInsufficientFunds, "the balance is too low").With("balance", 100)
				}
				return transferOut{Status: "completed"}, nil
			}, core.WithRisk(core.RiskHigh)),
		core.MustDefine("slow", "Wait until canceled.",
			func(ctx context.Context, _ app, _ core.NoInput) (slowOut, error) {
				pr.started <- struct{}{}
				<-ctx.Done()
				pr.ended <- ctx.Err()
				return slowOut{}, ctx.Err()
			}, core.WithRisk(core.RiskMedium)),
		core.MustDefine("secret", "Only for administrators.",
			func(context.Context, app, core.NoInput) (slowOut, error) { return slowOut{Done: true}, nil },
			visible),
	}
}

func newExecutor(t testing.TB, pr *probe, visible core.Option) *core.Executor {
	t.Helper()
	reg, err := core.NewRegistry(capabilities(pr, visible)...)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(reg, newApp, core.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// issuer is a minimal OpenID provider on loopback.
type issuer struct{ *oidctest.Issuer }

func newIssuer(t testing.TB) *issuer { return &issuer{oidctest.NewIssuer(t)} }

// token signs an ID token for subject with audience aud, valid from now
// for d (negative d: expired).
func (iss *issuer) token(t testing.TB, subject, aud string, d time.Duration) string {
	t.Helper()
	now := time.Now()
	return iss.Token(t, jwt.Claims{Issuer: iss.URL, Subject: subject, Audience: jwt.Audience{aud},
		IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), Expiry: jwt.NewNumericDate(now.Add(d))})
}

// router mounts an MCP endpoint at /mcp, with its metadata, on one kind
// of router, serving on ln.
type router struct {
	name  string
	serve func(t testing.TB, ln net.Listener, e mcpEndpoint)
}

// mcpEndpoint is what every mount takes.
type mcpEndpoint interface {
	http.Handler
	MetadataPaths() []string
	Metadata() http.Handler
}

var routers = []router{
	{"nethttp", func(t testing.TB, ln net.Listener, e mcpEndpoint) {
		mux := http.NewServeMux()
		mux.Handle("/mcp", e)
		for _, p := range e.MetadataPaths() {
			mux.Handle(p, e.Metadata())
		}
		serveHTTP(t, ln, mux)
	}},
	{"gin", func(t testing.TB, ln net.Listener, e mcpEndpoint) {
		gin.SetMode(gin.ReleaseMode)
		r := gin.New()
		ginx.MountMCP(r, "/mcp", e)
		serveHTTP(t, ln, r)
	}},
	{"echo", func(t testing.TB, ln net.Listener, e mcpEndpoint) {
		r := echo.New()
		echox.MountMCP(r, "/mcp", e)
		serveHTTP(t, ln, r)
	}},
	{"fiber", func(t testing.TB, ln net.Listener, e mcpEndpoint) {
		app := fiber.New(fiber.Config{DisableStartupMessage: true})
		fiberx.MountMCP(app, "/mcp", e)
		done := make(chan error, 1)
		go func() { done <- app.Listener(ln) }()
		t.Cleanup(func() {
			_ = app.ShutdownWithTimeout(5 * time.Second)
			<-done
		})
	}},
}

func serveHTTP(t testing.TB, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
}

// listen opens a loopback listener and returns it with its base URL.
func listen(t testing.TB) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

// oidcFixture is an MCP endpoint for OIDC users on one router.
type oidcFixture struct {
	iss      *issuer
	base     string
	resource string
	probe    *probe
}

// adminOnly shows a capability to the administrator, root, alone.
var adminOnly = core.WithVisibility(func(_ context.Context, id *auth.Identity, _ bool) bool {
	return id != nil && id.Subject == "root"
})

func newOIDCFixture(t testing.TB, r router, cfg func(*mcpx.Config)) *oidcFixture {
	t.Helper()
	f := &oidcFixture{iss: newIssuer(t), probe: newProbe()}
	ln, base := listen(t)
	f.base, f.resource = base, base+"/mcp"
	provider, err := oidc.NewProvider(context.Background(), f.iss.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Strict audience: tokens must be issued for this endpoint.
	verifier := provider.Verifier(&oidc.Config{ClientID: f.resource, SupportedSigningAlgs: []string{oidc.ES256}})
	exec := newExecutor(t, f.probe, adminOnly)
	c := mcpx.Config{
		Name:    "fixture",
		Version: "1.0.0",
		Verifier: oidcauth.New(verifier, func(_ context.Context, tok *oidc.IDToken) (*auth.Identity, error) {
			if tok.Subject == "suspended" {
				return nil, agentcap.NewError(codeAccountSuspended, "the account is suspended")
			}
			return person(tok.Subject), nil
		}),
		Resource:             f.resource,
		AuthorizationServers: []string{f.iss.URL},
		ScopesSupported:      []string{"tools"},
		ResourceName:         "fixture",
		PageSize:             2,
	}
	if cfg != nil {
		cfg(&c)
	}
	s, err := mcpx.New(exec, c)
	if err != nil {
		t.Fatal(err)
	}
	r.serve(t, ln, s)
	return f
}

// bearer returns an HTTP client that sends a fresh Authorization value,
// made by token, with every request.
func bearer(token func() string) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token())
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// cancelsSlowCall starts the slow capability on cs, cancels the call's
// context once it runs, and checks that the handler saw the
// cancellation and the client got an error.
func cancelsSlowCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, pr *probe) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		done <- err
	}()
	select {
	case <-pr.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow call did not start")
	}
	cancel()
	select {
	case err := <-pr.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the handler ended with %v, want canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not canceled")
	}
	if err := <-done; err == nil {
		t.Error("the canceled call returned no error")
	}
}
