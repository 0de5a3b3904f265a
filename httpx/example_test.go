package httpx_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

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
	exec := core.MustExecutor(core.MustRegistry(greet), core.ExecutorConfig[account, string]{
		// The application, not the caller, decides what the principal may do.
		CreateContext: func(_ context.Context, token string, _ *core.Definition, _ any) (account, error) {
			return account{ID: "acct-" + token}, nil
		},
	})
	h, err := httpx.New(exec, httpx.Config[string]{
		Authenticate: func(_ context.Context, req *httpx.Request) (string, error) {
			tok, ok := strings.CutPrefix(req.Header("Authorization"), "Bearer ")
			if !ok {
				return "", httpx.ErrNoCredentials
			}
			if tok != "demo" {
				return "", httpx.ErrBadCredentials
			}
			return tok, nil
		},
		Challenge: `Bearer realm="example"`,
	})
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
