package httpx_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentcap/agentcap/httpx"
)

const jsonType = "application/json"

func TestHandlerAnswers(t *testing.T) {
	h, _ := newHandler(t, nil)
	tests := []struct {
		name, method, path, auth, ctype, body string
		status                                int
		want                                  string
		header                                map[string]string
	}{
		{name: "execute", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":"echo","arguments":{"text":"hi"}}`, status: 200,
			want: `{"data":{"text":"hi","user":"alice"}}`, header: map[string]string{"Cache-Control": "no-store"}},
		{name: "path without slash", method: "POST", path: "/api/capability/execute", auth: "Bearer alice", ctype: "application/json; charset=utf-8",
			body: `{"arguments":{"text":"hi"},"capability":"echo"}`, status: 200,
			want: `{"data":{"text":"hi","user":"alice"}}`},
		{name: "plus json type", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: "application/vnd.agent+json",
			body: `{"capability":"echo","arguments":{"text":"hi"}}`, status: 200,
			want: `{"data":{"text":"hi","user":"alice"}}`},
		{name: "unknown path", method: "GET", path: "/capability/nope", auth: "Bearer alice", status: 404,
			want: `{"error":"not_found","message":"no such endpoint"}`},
		{name: "wrong method on list", method: "POST", path: "/capability/list", auth: "Bearer alice", status: 405,
			want: `{"error":"method_not_allowed","message":"use GET for this endpoint"}`, header: map[string]string{"Allow": "GET"}},
		{name: "wrong method on execute", method: "GET", path: "/capability/execute", status: 405,
			want: `{"error":"method_not_allowed","message":"use POST for this endpoint"}`, header: map[string]string{"Allow": "POST"}},
		{name: "no credentials", method: "GET", path: "/capability/list", status: 401,
			want:   `{"error":"authentication_required","message":"authentication is required"}`,
			header: map[string]string{"WWW-Authenticate": `Bearer realm="test"`}},
		{name: "bad credentials", method: "GET", path: "/capability/list", auth: "Bearer nope", status: 401,
			want:   `{"error":"invalid_jwt","message":"the credentials are invalid"}`,
			header: map[string]string{"WWW-Authenticate": `Bearer realm="test"`}},
		{name: "not allowed", method: "GET", path: "/capability/list", auth: "Bearer banned", status: 403,
			want: `{"error":"unauthorized","message":"the caller may not use this endpoint"}`, header: map[string]string{"WWW-Authenticate": ""}},
		{name: "app error from authenticator", method: "GET", path: "/capability/list", auth: "Bearer revoked", status: 401,
			want:   `{"error":"token_revoked","message":"the token was revoked","revoked_at":"2024-01-01"}`,
			header: map[string]string{"WWW-Authenticate": `Bearer realm="test"`}},
		{name: "authenticator crash", method: "GET", path: "/capability/list", auth: "Bearer crash", status: 500,
			want: `{"error":"internal_error","message":"internal error"}`},
		{name: "text content type", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: "text/plain",
			body: `{"capability":"echo"}`, status: 415,
			want: `{"error":"unsupported_media_type","message":"the body must be JSON (Content-Type: application/json)"}`},
		{name: "no content type", method: "POST", path: "/capability/execute", auth: "Bearer alice",
			body: `{"capability":"echo"}`, status: 415,
			want: `{"error":"unsupported_media_type","message":"the body must be JSON (Content-Type: application/json)"}`},
		{name: "auth before content type", method: "POST", path: "/capability/execute", ctype: "text/plain", status: 401,
			want: `{"error":"authentication_required","message":"authentication is required"}`},
		{name: "malformed json", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":`, status: 400,
			want: `{"error":"invalid_request","message":"the request body is invalid","errors":[{"path":"","message":"the body is not valid JSON"}]}`},
		{name: "not an object", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `["echo"]`, status: 400,
			want: `{"error":"invalid_request","message":"the request body is invalid","errors":[{"path":"","message":"must be a JSON object"}]}`},
		{name: "envelope violations", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":"","arguments":[1],"Capability":"echo","a/b~":1}`, status: 400,
			want: `{"error":"invalid_request","message":"the request body is invalid","errors":[` +
				`{"path":"/capability","message":"must be a non-empty string"},{"path":"/arguments","message":"must be a JSON object or null"},` +
				`{"path":"/Capability","message":"unknown member"},{"path":"/a~1b~0","message":"unknown member"}]}`},
		{name: "missing capability", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{}`, status: 400,
			want: `{"error":"invalid_request","message":"the request body is invalid","errors":[{"path":"/capability","message":"must be a non-empty string"}]}`},
		{name: "duplicate capability", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":"echo","capability":"boom"}`, status: 400,
			want: `{"error":"invalid_request","message":"the request body is invalid","errors":[{"path":"/capability","message":"duplicate key"}]}`},
		{name: "escaped capability name", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":"ec\u0068o","arguments":null}`, status: 400,
			want: ""},
		{name: "unknown capability", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":"nope"}`, status: 404,
			want: `{"error":"capability_not_found","message":"unknown capability"}`},
		{name: "invisible capability", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":"admin.secret","arguments":{"bogus":1}}`, status: 404,
			want: `{"error":"capability_not_found","message":"unknown capability"}`},
		{name: "visible to admin", method: "POST", path: "/capability/execute", auth: "Bearer admin", ctype: jsonType,
			body: `{"capability":"admin.secret"}`, status: 200, want: `{"data":{"n":42}}`},
		{name: "forbidden by authorize", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":"echo","arguments":{"text":"forbidden"}}`, status: 403,
			want: `{"error":"unauthorized","message":"the caller may not run this capability"}`},
		{name: "app error", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":"app_error"}`, status: 409,
			want: `{"error":"already_done","message":"the thing is already done","retry":false}`},
		{name: "panic redacted", method: "POST", path: "/capability/execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"capability":"boom"}`, status: 500,
			want: `{"error":"internal_error","message":"internal error"}`},
		{name: "describe", method: "GET", path: "/capability/describe?name=echo", auth: "Bearer alice", status: 200,
			want: `{"name":"echo","description":"Echo text back to the caller","title":"Echo text","read_only":true,` +
				`"input":` + compactSchema(t, h, "echo", true) + `,"output":` + compactSchema(t, h, "echo", false) +
				`,"approval_strength":"none","required_constraints":[],"risk":"low","scope":"demo:read","tags":["demo"],"supports_preview":false,"requires_confirmation":false}`,
			header: map[string]string{"Cache-Control": "private, max-age=300"}},
		{name: "describe hidden", method: "GET", path: "/capability/describe?name=admin.secret", auth: "Bearer alice", status: 404,
			want: `{"error":"capability_not_found","message":"unknown capability"}`, header: map[string]string{"Cache-Control": "no-store"}},
		{name: "describe without name", method: "GET", path: "/capability/describe", auth: "Bearer alice", status: 400,
			want: `{"error":"invalid_request","message":"give exactly one non-empty name parameter"}`},
		{name: "describe two names", method: "GET", path: "/capability/describe?name=echo&name=boom", auth: "Bearer alice", status: 400,
			want: `{"error":"invalid_request","message":"give exactly one non-empty name parameter"}`},
		{name: "bad query escape", method: "GET", path: "/capability/describe?name=%zz", auth: "Bearer alice", status: 400,
			want: `{"error":"invalid_request","message":"the query string is malformed"}`},
		{name: "list page", method: "GET", path: "/capability/list?limit=2", auth: "Bearer alice", status: 200,
			want: `{"capabilities":[{"name":"app_error","description":"Fails in its own words","approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false},` +
				`{"name":"boom","description":"Panics","approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false}],"has_more":true,"next_cursor":"Ym9vbQ"}`,
			header: map[string]string{"Cache-Control": "private, max-age=300"}},
		{name: "list next page", method: "GET", path: "/capability/list?limit=2&cursor=Ym9vbQ", auth: "Bearer alice", status: 200,
			want: `{"capabilities":[{"name":"echo","description":"Echo text back to the caller","title":"Echo text","read_only":true,"approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false},` +
				`{"name":"list.alpha","description":"Listing filler ALPHA","approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false}],"has_more":true,"next_cursor":"bGlzdC5hbHBoYQ"}`},
		{name: "list query", method: "GET", path: "/capability/list?query=FILLER+b", auth: "Bearer alice", status: 200,
			want: `{"capabilities":[{"name":"list.bravo","description":"Listing filler BRAVO","approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false}],"has_more":false,"next_cursor":null}`},
		{name: "list query and cursor", method: "GET", path: "/capability/list?query=list.&cursor=bGlzdC5icmF2bw&limit=1", auth: "Bearer alice", status: 200,
			want: `{"capabilities":[{"name":"list.charlie","description":"Listing filler CHARLIE","approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false}],"has_more":true,"next_cursor":"bGlzdC5jaGFybGll"}`},
		{name: "list limit zero", method: "GET", path: "/capability/list?limit=0", auth: "Bearer alice", status: 400,
			want: `{"error":"invalid_request","message":"limit must be an integer from 1 to 100"}`},
		{name: "list limit too big", method: "GET", path: "/capability/list?limit=101", auth: "Bearer alice", status: 400,
			want: `{"error":"invalid_request","message":"limit must be an integer from 1 to 100"}`},
		{name: "list limit not a number", method: "GET", path: "/capability/list?limit=ten", auth: "Bearer alice", status: 400,
			want: `{"error":"invalid_request","message":"limit must be an integer from 1 to 100"}`},
		{name: "list bad cursor", method: "GET", path: "/capability/list?cursor=***", auth: "Bearer alice", status: 400,
			want: `{"error":"invalid_request","message":"the cursor is invalid"}`},
		{name: "list repeated limit", method: "GET", path: "/capability/list?limit=1&limit=2", auth: "Bearer alice", status: 400,
			want: `{"error":"invalid_request","message":"the limit parameter is repeated"}`},
		{name: "batch mixed", method: "POST", path: "/capability/batch-execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"requests":[{"id":"a","capability":"echo","arguments":{"text":"x"}},{"capability":"nope"},` +
				`{"capability":"admin.secret"},{"id":"d","capability":"app_error"},{"capability":"boom"}]}`, status: 200,
			want: `{"responses":[{"id":"a","status":"completed","data":{"text":"x","user":"alice"}},` +
				`{"id":"1","status":"failed","error":{"code":"capability_not_found","message":"unknown capability"}},` +
				`{"id":"2","status":"failed","error":{"code":"capability_not_found","message":"unknown capability"}},` +
				`{"id":"d","status":"failed","error":{"code":"already_done","message":"the thing is already done","retry":false}},` +
				`{"id":"4","status":"failed","error":{"code":"internal_error","message":"internal error"}}]}`},
		{name: "batch empty", method: "POST", path: "/capability/batch-execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"requests":[]}`, status: 400,
			want: `{"error":"invalid_request","message":"a batch holds 1 to 50 requests","errors":[{"path":"/requests","message":"must hold 1 to 50 items"}]}`},
		{name: "batch too many", method: "POST", path: "/capability/batch-execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"requests":[` + strings.Repeat(`{"capability":"echo"},`, 50) + `{"capability":"echo"}]}`, status: 400,
			want: `{"error":"invalid_request","message":"a batch holds 1 to 50 requests","errors":[{"path":"/requests","message":"must hold 1 to 50 items"}]}`},
		{name: "batch malformed items", method: "POST", path: "/capability/batch-execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"requests":[1,{"id":7,"capability":"echo","extra":true},{"arguments":"x"}]}`, status: 400,
			want: `{"error":"invalid_request","message":"the request body is invalid","errors":[` +
				`{"path":"/requests/0","message":"must be a JSON object"},{"path":"/requests/1/id","message":"must be a string"},` +
				`{"path":"/requests/1/extra","message":"unknown member"},{"path":"/requests/2/arguments","message":"must be a JSON object or null"},` +
				`{"path":"/requests/2/capability","message":"must be a non-empty string"}]}`},
		{name: "batch without requests", method: "POST", path: "/capability/batch-execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"request":[]}`, status: 400,
			want: `{"error":"invalid_request","message":"the request body is invalid","errors":[` +
				`{"path":"/request","message":"unknown member"},{"path":"/requests","message":"is required"}]}`},
		{name: "batch requests not array", method: "POST", path: "/capability/batch-execute", auth: "Bearer alice", ctype: jsonType,
			body: `{"requests":{}}`, status: 400,
			want: `{"error":"invalid_request","message":"the request body is invalid","errors":[{"path":"/requests","message":"must be a JSON array"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var srv http.Handler = h
			if strings.HasPrefix(tc.path, "/api/") {
				srv = http.StripPrefix("/api/", h)
			}
			got := call(t, srv, tc.method, tc.path, tc.auth, tc.ctype, tc.body)
			if got.Status != tc.status {
				t.Errorf("status = %d, want %d (body %s)", got.Status, tc.status, got.Body)
			}
			if tc.want != "" {
				if diff := cmp.Diff(tc.want+"\n", got.Body); diff != "" {
					t.Errorf("body (-want +got):\n%s", diff)
				}
			}
			if ct := got.Header.Get("Content-Type"); ct != jsonType {
				t.Errorf("Content-Type = %q", ct)
			}
			for k, v := range tc.header {
				if g := got.Header.Get(k); g != v {
					t.Errorf("%s = %q, want %q", k, g, v)
				}
			}
		})
	}
}

func compactSchema(t *testing.T, h *httpx.Handler, name string, input bool) string {
	t.Helper()
	d, ok := fixture(t, nil).Registry().Lookup(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	raw := d.OutputSchema()
	if input {
		raw = d.InputSchema()
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestInvalidInputDetails checks the shape of a schema failure without
// depending on the validator's wording.
func TestInvalidInputDetails(t *testing.T) {
	h, _ := newHandler(t, nil)
	got := call(t, h, "POST", "/capability/execute", "Bearer alice", jsonType,
		`{"capability":"echo","arguments":{"text":"","extra":1}}`)
	if got.Status != 400 {
		t.Fatalf("status %d: %s", got.Status, got.Body)
	}
	var env struct {
		Error   string `json:"error"`
		Message string `json:"message"`
		Errors  []struct {
			Path    string `json:"path"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(got.Body), &env); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range env.Errors {
		paths = append(paths, e.Path)
		if e.Message == "" {
			t.Errorf("violation at %q has no message", e.Path)
		}
	}
	if env.Error != "invalid_request" || len(env.Errors) < 2 {
		t.Fatalf("envelope = %+v", env)
	}
	for _, want := range []string{"/text", "/extra"} {
		found := false
		for _, p := range paths {
			found = found || p == want
		}
		if !found {
			t.Errorf("no violation at %s in %v", want, paths)
		}
	}
}

func TestAnonymousDiscovery(t *testing.T) {
	grant := func(capability string) string {
		if capability == "echo" {
			return "granted"
		}
		return "not_granted"
	}
	h, _ := newHandler(t, func(c *httpx.Config) {
		c.Verifier = tokens{authz: &authorizer{authorize: forbidText, grant: grant}, anonymous: true}
		c.DefaultListLimit = 1
	})
	anon := call(t, h, "GET", "/capability/list", "", "", "")
	if want := `{"capabilities":[{"name":"app_error","description":"Fails in its own words","approval_strength":"none","risk":"low","supports_preview":false,"requires_confirmation":false}],"has_more":true,"next_cursor":"YXBwX2Vycm9y"}` + "\n"; anon.Body != want {
		t.Errorf("anonymous list = %s", anon.Body)
	}
	signed := call(t, h, "GET", "/capability/list", "Bearer alice", "", "")
	if !strings.Contains(signed.Body, `"grant_status":"not_granted"`) {
		t.Errorf("authenticated list lacks grant_status: %s", signed.Body)
	}
	d := call(t, h, "GET", "/capability/describe?name=echo", "Bearer alice", "", "")
	if !strings.HasSuffix(d.Body, `"tags":["demo"],"supports_preview":false,"requires_confirmation":false,"grant_status":"granted"}`+"\n") {
		t.Errorf("describe = %s", d.Body)
	}
	if got := call(t, h, "GET", "/capability/describe?name=admin.secret", "", "", ""); got.Status != 404 {
		t.Errorf("anonymous describe of a hidden capability: %d", got.Status)
	}
	// Bad credentials are never downgraded to anonymous access.
	if got := call(t, h, "GET", "/capability/list", "Bearer nope", "", ""); got.Status != 401 {
		t.Errorf("bad credentials: %d", got.Status)
	}
	// Execution always needs credentials.
	if got := call(t, h, "POST", "/capability/execute", "", jsonType, `{"capability":"echo"}`); got.Status != 401 {
		t.Errorf("anonymous execute: %d", got.Status)
	}
}

func TestHiddenLooksUnknown(t *testing.T) {
	h, _ := newHandler(t, nil)
	unknown := call(t, h, "POST", "/capability/execute", "Bearer alice", jsonType, `{"capability":"admin.nothing"}`)
	hidden := call(t, h, "POST", "/capability/execute", "Bearer alice", jsonType, `{"capability":"admin.secret","arguments":{"x":1}}`)
	if diff := cmp.Diff(unknown, hidden); diff != "" {
		t.Errorf("a hidden capability answers differently from an unknown one (-unknown +hidden):\n%s", diff)
	}
}

func TestRedactedErrorsAreLogged(t *testing.T) {
	h, logs := newHandler(t, nil)
	call(t, h, "POST", "/capability/execute", "Bearer alice", jsonType, `{"capability":"boom"}`)
	call(t, h, "GET", "/capability/list", "Bearer crash", "", "")
	out := logs.String()
	for _, want := range []string{"secret detail", "session store unreachable"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestBodyLimit(t *testing.T) {
	h, _ := newHandler(t, func(c *httpx.Config) { c.MaxBodyBytes = 200 })
	tooLarge := `{"error":"request_too_large","message":"the body exceeds 200 bytes"}` + "\n"
	fits := `{"capability":"echo","arguments":{"text":"` + strings.Repeat("é", (200-45)/2) + `"}}`
	if len(fits) > 200 {
		t.Fatalf("fixture body is %d bytes", len(fits))
	}
	if got := call(t, h, "POST", "/capability/execute", "Bearer alice", jsonType, fits); got.Status != 200 {
		t.Errorf("body of %d bytes: %d %s", len(fits), got.Status, got.Body)
	}
	over := `{"capability":"echo","arguments":{"text":"` + strings.Repeat("a", 200) + `"}}`
	got := call(t, h, "POST", "/capability/execute", "Bearer alice", jsonType, over)
	if got.Status != 413 || got.Body != tooLarge {
		t.Errorf("over the limit: %d %s", got.Status, got.Body)
	}

	// A small gzip body that inflates past the limit is refused too.
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(over))
	zw.Close()
	req := httptest.NewRequest("POST", "/capability/execute", bytes.NewReader(z.Bytes()))
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Content-Type", jsonType)
	req.Header.Set("Content-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 413 || rec.Body.String() != tooLarge {
		t.Errorf("gzip bomb: %d %s (compressed %d bytes)", rec.Code, rec.Body, z.Len())
	}
}

func TestContentEncoding(t *testing.T) {
	h, _ := newHandler(t, nil)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(`{"capability":"echo","arguments":{"text":"zipped"}}`))
	zw.Close()
	for _, tc := range []struct {
		enc    string
		body   []byte
		status int
	}{
		{"gzip", z.Bytes(), 200},
		{"identity", []byte(`{"capability":"echo","arguments":{"text":"zipped"}}`), 200},
		{"gzip", []byte("not gzip"), 400},
		{"compress", z.Bytes(), 400},
	} {
		req := httptest.NewRequest("POST", "/capability/execute", bytes.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer alice")
		req.Header.Set("Content-Type", jsonType)
		req.Header.Set("Content-Encoding", tc.enc)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("%s: %d %s", tc.enc, rec.Code, rec.Body)
		}
	}
}

func TestServeMatchesServeHTTP(t *testing.T) {
	h, _ := newHandler(t, nil)
	body := `{"capability":"echo","arguments":{"text":"same"}}`
	viaHTTP := call(t, h, "POST", "/capability/execute", "Bearer alice", jsonType, body)
	hdr := http.Header{"Authorization": {"Bearer alice"}, "Content-Type": {jsonType}}
	resp := h.Serve(&httpx.Request{Method: "POST", Path: "capability/execute", Header: hdr.Get, Body: []byte(body)})
	got := result{Status: resp.Status, Header: resp.Header, Body: string(resp.Body)}
	if diff := cmp.Diff(viaHTTP, got); diff != "" {
		t.Errorf("Serve differs from ServeHTTP (-http +serve):\n%s", diff)
	}
	tooLarge := h.Serve(&httpx.Request{Method: "POST", Path: "capability/execute", Header: hdr.Get, BodyTooLarge: true})
	if tooLarge.Status != 413 {
		t.Errorf("BodyTooLarge: %d", tooLarge.Status)
	}
	broken := h.Serve(&httpx.Request{Method: "POST", Path: "capability/execute", Header: hdr.Get, BodyError: errors.New("bad gzip")})
	if broken.Status != 400 {
		t.Errorf("BodyError: %d", broken.Status)
	}
}

// TestClientGoneCancels proves that a client that disconnects cancels the
// running capability through the request context.
func TestClientGoneCancels(t *testing.T) {
	probe := &waitProbe{started: make(chan struct{}), canceled: make(chan error, 1)}
	h, err := httpx.New(fixture(t, probe), httpx.Config{Verifier: tokens{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/capability/execute", strings.NewReader(`{"capability":"wait"}`))
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Content-Type", jsonType)
	done := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-probe.started:
	case <-time.After(5 * time.Second):
		t.Fatal("capability never started")
	}
	cancel()
	select {
	case err := <-probe.canceled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("capability context ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("capability was not canceled when the client went away")
	}
	<-done
}

func TestNewRejectsBadConfig(t *testing.T) {
	exec := fixture(t, nil)
	for name, cfg := range map[string]httpx.Config{
		"no verifier":      {},
		"negative body":    {Verifier: tokens{}, MaxBodyBytes: -1},
		"negative limit":   {Verifier: tokens{}, MaxListLimit: -1},
		"default over max": {Verifier: tokens{}, DefaultListLimit: 20, MaxListLimit: 10},
	} {
		if _, err := httpx.New(exec, cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := httpx.New(nil, httpx.Config{Verifier: tokens{}}); err == nil {
		t.Error("nil executor accepted")
	}
}

func TestRoutes(t *testing.T) {
	h, _ := newHandler(t, nil)
	want := []string{"capability/list", "capability/describe", "capability/execute", "capability/batch-execute"}
	if diff := cmp.Diff(want, h.Routes()); diff != "" {
		t.Error(diff)
	}
	if h.MaxBodyBytes() != 1<<20 {
		t.Errorf("default body limit %d", h.MaxBodyBytes())
	}
}

// TestAnnouncedLengthDoesNotLift checks the body limit against a request
// whose Content-Length understates its body: the bytes read count, not
// the announcement.
func TestAnnouncedLengthDoesNotLift(t *testing.T) {
	h, _ := newHandler(t, func(c *httpx.Config) { c.MaxBodyBytes = 100 })
	body := `{"capability":"echo","arguments":{"text":"` + strings.Repeat("a", 200) + `"}}`
	for _, length := range []int64{10, 100, -1} {
		req := httptest.NewRequest("POST", "/capability/execute", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer alice")
		req.Header.Set("Content-Type", jsonType)
		req.ContentLength = length
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("Content-Length %d: %d %s", length, rec.Code, rec.Body)
		}
	}
}

// TestReusedMemoryStaysApart runs many requests at once through both
// entry points, each with its own text: bodies and answers live in reused
// memory, and no answer may show another request's bytes.
func TestReusedMemoryStaysApart(t *testing.T) {
	h, _ := newHandler(t, nil)
	hdr := http.Header{"Authorization": {"Bearer alice"}, "Content-Type": {jsonType}}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				text := fmt.Sprintf("g%d-i%d-%s", g, i, strings.Repeat("x", (g*50+i)%300))
				body := `{"capability":"echo","arguments":{"text":"` + text + `"}}`
				want := `{"data":{"text":"` + text + `","user":"alice"}}` + "\n"
				var got string
				switch i % 3 {
				case 0:
					got = call(t, h, "POST", "/capability/execute", "Bearer alice", jsonType, body).Body
				case 1:
					r := httptest.NewRequest("POST", "/capability/execute", strings.NewReader(body))
					r.Header = hdr
					resp := h.Serve(httpx.NewRequest(httptest.NewRecorder(), r, "capability/execute"))
					got = string(resp.Body)
					resp.Release()
				default:
					resp := h.Serve(&httpx.Request{Method: "POST", Path: "capability/execute", Header: hdr.Get, Body: []byte(body)})
					got = string(resp.Body)
					resp.Release()
				}
				if got != want {
					select {
					case errs <- fmt.Sprintf("got %q, want %q", got, want):
					default:
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestSharedHeaderValues checks that the header values every answer
// shares survive a caller that adds to them.
func TestSharedHeaderValues(t *testing.T) {
	h, _ := newHandler(t, nil)
	first := call(t, h, "POST", "/capability/execute", "Bearer alice", jsonType, `{"capability":"echo","arguments":{"text":"a"}}`)
	first.Header.Add("Cache-Control", "private")
	first.Header.Add("Content-Type", "text/plain")
	resp := h.Serve(&httpx.Request{Method: "POST", Path: "capability/execute",
		Header: http.Header{"Authorization": {"Bearer alice"}, "Content-Type": {jsonType}}.Get,
		Body:   []byte(`{"capability":"echo","arguments":{"text":"b"}}`)})
	resp.Header.Add("Cache-Control", "public")
	resp.Release()
	second := call(t, h, "GET", "/capability/list", "", "", "")
	want := http.Header{
		"Content-Type":           {"application/json"},
		"X-Content-Type-Options": {"nosniff"},
		"Cache-Control":          {"no-store"},
		"Www-Authenticate":       {`Bearer realm="test"`},
	}
	if diff := cmp.Diff(want, second.Header); diff != "" {
		t.Errorf("headers of a later answer (-want +got):\n%s", diff)
	}
	var nothing httpx.Response
	nothing.Release() // a Response that Serve did not make holds nothing to release
}
