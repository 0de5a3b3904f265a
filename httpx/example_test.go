package httpx_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// demoTokens is a verifier that knows one bearer token, "demo".
type demoTokens struct{}

func (demoTokens) Verify(_ context.Context, req *auth.Request) (*auth.Identity, error) {
	tok, ok := auth.BearerToken(req.Authorization)
	if !ok {
		return nil, auth.ErrNoCredentials
	}
	if tok != "demo" {
		return nil, agentcap.NewError(agentcap.CodeInvalidJWT, "the credentials are invalid")
	}
	return &auth.Identity{Subject: tok}, nil
}

// Challenge makes every 401 answer name the scheme (auth.Challenger).
func (demoTokens) Challenge() string { return `Bearer realm="example"` }

// Example serves one capability under /agent/ on a standard mux, next to
// the application's own routes.
func Example() {
	type account struct{ ID string }
	type greetIn struct {
		Name string `json:"name" minLength:"1"`
	}
	type greetOut struct {
		Greeting string `json:"greeting"`
	}
	greet := core.MustDefine("greet", "Greet someone on behalf of the account",
		func(_ context.Context, acct account, in greetIn) (greetOut, error) {
			return greetOut{Greeting: "Hello " + in.Name + " from " + acct.ID}, nil
		})
	// The application, not the caller, decides what the caller may do.
	exec := core.MustExecutor(core.MustRegistry(greet),
		func(_ context.Context, id *auth.Identity, _ *core.Definition, _ any) (account, error) {
			return account{ID: "acct-" + id.Subject}, nil
		}, core.Config{})
	h, err := httpx.New(exec, httpx.Config{Verifier: demoTokens{}})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("/agent/", http.StripPrefix("/agent", h))

	req := httptest.NewRequest("POST", "/agent/capability/execute",
		strings.NewReader(`{"capability":"greet","arguments":{"name":"Ada"}}`))
	req.Header.Set("Authorization", "Bearer demo")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body.String())

	req = httptest.NewRequest("POST", "/agent/capability/execute", strings.NewReader(`{}`))
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Header().Get("WWW-Authenticate"), " ", rec.Body.String())
	// Output:
	// 200 {"data":{"greeting":"Hello Ada from acct-demo"}}
	// 401 Bearer realm="example" {"error":"authentication_required","message":"authentication is required"}
}

// ExampleHandler_Serve answers through the transport-neutral pair, the way
// a mount for another router does: fill a Request from the router's own
// request, write the Response back, then release it.
func ExampleHandler_Serve() {
	ping := core.MustDefine("ping", "Answer pong",
		func(context.Context, struct{}, core.NoInput) (struct {
			Pong bool `json:"pong"`
		}, error) {
			return struct {
				Pong bool `json:"pong"`
			}{true}, nil
		})
	exec := core.MustExecutor(core.MustRegistry(ping),
		func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{})
	h, err := httpx.New(exec, httpx.Config{Verifier: demoTokens{}})
	if err != nil {
		panic(err)
	}
	headers := map[string]string{"Authorization": "Bearer demo", "Content-Type": "application/json"}
	resp := h.Serve(&httpx.Request{
		Method: "POST",
		Path:   "capability/execute",
		Header: func(name string) string { return headers[name] },
		Body:   []byte(`{"capability":"ping"}`),
	})
	// Write Status, Header and Body to the router's response here; the
	// body is valid until Release.
	fmt.Print(resp.Status, " ", resp.Header.Get("Cache-Control"), " ", string(resp.Body))
	resp.Release()
	// Output:
	// 200 no-store {"data":{"pong":true}}
}
