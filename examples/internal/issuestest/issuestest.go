// Package issuestest runs the calls of examples/README.md against a
// running example server, so every framework example is checked the same
// way.
package issuestest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Call is one request of the walkthrough and what it must answer.
type Call struct {
	Name   string
	Method string
	Path   string // below the server root
	Token  string
	Body   string
	Status int
	// Error is the expected wire code of a failure, Check a substring the
	// body must contain.
	Error string
	Check string
	// Challenge is the WWW-Authenticate header a 401 must carry.
	Challenge string
}

// Walkthrough is the sequence of examples/README.md. Order matters: the
// list after the create sees the new issue.
var Walkthrough = []Call{
	{Name: "health", Method: "GET", Path: "/healthz", Status: 200},
	{Name: "list capabilities", Method: "GET", Path: "/agent/capability/list", Token: "alice-token", Status: 200, Check: `"name":"create_issue"`},
	{Name: "describe", Method: "GET", Path: "/agent/capability/describe?name=create_issue", Token: "alice-token", Status: 200, Check: `"workspace_id"`},
	{Name: "create as owner", Method: "POST", Path: "/agent/capability/execute", Token: "alice-token", Status: 200,
		Body: `{"capability":"create_issue","arguments":{"workspace_id":"acme","title":"Login page is slow"}}`, Check: `"id":"ISS-1"`},
	{Name: "list as owner", Method: "POST", Path: "/agent/capability/execute", Token: "alice-token", Status: 200,
		Body: `{"capability":"list_issues","arguments":{"workspace_id":"acme"}}`, Check: `"title":"Login page is slow"`},
	{Name: "not a member", Method: "POST", Path: "/agent/capability/execute", Token: "alice-token", Status: 403,
		Body: `{"capability":"list_issues","arguments":{"workspace_id":"globex"}}`, Error: "not_a_member"},
	{Name: "viewer cannot create", Method: "POST", Path: "/agent/capability/execute", Token: "bob-token", Status: 403,
		Body: `{"capability":"create_issue","arguments":{"workspace_id":"acme","title":"x"}}`, Error: "read_only_member"},
	{Name: "a sent role is refused", Method: "POST", Path: "/agent/capability/execute", Token: "bob-token", Status: 400,
		Body: `{"capability":"create_issue","arguments":{"workspace_id":"acme","title":"x","role":"owner"}}`, Error: "invalid_request"},
	{Name: "no token", Method: "POST", Path: "/agent/capability/execute", Status: 401,
		Body: `{"capability":"list_issues","arguments":{"workspace_id":"acme"}}`, Error: "authentication_required", Challenge: `Bearer realm="issues"`},
	{Name: "batch", Method: "POST", Path: "/agent/capability/batch-execute", Token: "bob-token", Status: 200,
		Body:  `{"requests":[{"id":"mine","capability":"list_issues","arguments":{"workspace_id":"globex"}},{"id":"theirs","capability":"list_issues","arguments":{"workspace_id":"nowhere"}}]}`,
		Check: `{"id":"theirs","status":"failed","error":{"code":"not_a_member"`},
}

// Run performs the walkthrough against the server at base (for example
// "http://127.0.0.1:8080").
func Run(t *testing.T, base string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	for _, c := range Walkthrough {
		var body io.Reader
		if c.Body != "" {
			body = strings.NewReader(c.Body)
		}
		req, err := http.NewRequest(c.Method, base+c.Path, body)
		if err != nil {
			t.Fatal(err)
		}
		if c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		if c.Body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.Status {
			t.Errorf("%s: status %d, want %d: %s", c.Name, resp.StatusCode, c.Status, data)
			continue
		}
		if c.Error != "" {
			var env struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(data, &env); err != nil || env.Error != c.Error {
				t.Errorf("%s: error %q, want %q: %s", c.Name, env.Error, c.Error, data)
			}
		}
		if c.Challenge != "" && resp.Header.Get("WWW-Authenticate") != c.Challenge {
			t.Errorf("%s: WWW-Authenticate %q, want %q", c.Name, resp.Header.Values("WWW-Authenticate"), c.Challenge)
		}
		if c.Check != "" && !strings.Contains(string(data), c.Check) {
			t.Errorf("%s: body lacks %s: %s", c.Name, c.Check, data)
		}
	}
}
