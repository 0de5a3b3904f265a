package conformance_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json from the net/http answers")

const goldenFile = "testdata/golden.json"

// exchange is one request of the table.
type exchange struct {
	name   string
	method string
	path   string // relative to the mount point, with query
	auth   string // bearer token, "" for none
	tenant string
	ctype  string
	body   string
	// encoding is the Content-Encoding header. The body is gzipped for
	// "gzip"; for any other coding it is sent as it is, since no mount
	// decodes it.
	encoding string
	status   int
}

const (
	ctJSON = "application/json"
	alice  = "alice"
)

func cases() []exchange {
	large := `{"capability":"echo","arguments":{"text":"` + strings.Repeat("ü", (maxBody-200)/2) + `"}}`
	tooLarge := `{"capability":"echo","arguments":{"text":"` + strings.Repeat("a", maxBody) + `"}}`
	exec := func(name, args string) string {
		if args == "" {
			return `{"capability":"` + name + `"}`
		}
		return `{"capability":"` + name + `","arguments":` + args + `}`
	}
	post := func(name, auth, body string, status int) exchange {
		return exchange{name: name, method: "POST", path: "/capability/execute", auth: auth, ctype: ctJSON, body: body, status: status}
	}
	get := func(name, path, auth string, status int) exchange {
		return exchange{name: name, method: "GET", path: path, auth: auth, status: status}
	}
	withTenant := post("execute/middleware value reaches CreateContext", alice, exec("echo", `{"text":"hi"}`), 200)
	withTenant.tenant = "acme"
	gz := post("execute/gzip body", alice, exec("echo", `{"text":"zipped"}`), 200)
	gz.encoding = "gzip"
	// Brotli is not among the codings httpx decodes (identity, gzip,
	// deflate); every mount must refuse it the same way rather than read
	// the bytes as JSON.
	br := post("execute/br body refused", alice, exec("echo", `{"text":"brotli"}`), 400)
	br.encoding = "br"
	textPlain := post("execute/wrong content type", alice, exec("echo", `{"text":"hi"}`), 415)
	textPlain.ctype = "text/plain; charset=utf-8"
	plusJSON := post("execute/+json content type", alice, exec("echo", `{"text":"hi"}`), 200)
	plusJSON.ctype = "application/vnd.agentcap+json; charset=utf-8"
	batchNoAuth := exchange{name: "batch/no credentials", method: "POST", path: "/capability/batch-execute", ctype: ctJSON,
		body: `{"requests":[{"capability":"echo"}]}`, status: 401}

	return []exchange{
		get("list/anonymous", "/capability/list", "", 200),
		get("list/authenticated with grant status", "/capability/list", alice, 200),
		get("list/admin sees hidden capability", "/capability/list?limit=2", "admin", 200),
		get("list/first page", "/capability/list?limit=3", alice, 200),
		get("list/second page", "/capability/list?limit=3&cursor=ZWNobw", alice, 200),
		get("list/query", "/capability/list?query=TASK", alice, 200),
		get("list/query no match", "/capability/list?query=nothing-like-this", alice, 200),
		get("list/bad limit", "/capability/list?limit=21", alice, 400),
		get("list/bad cursor", "/capability/list?cursor=%25%25", alice, 400),
		get("list/bad token", "/capability/list", "forged", 401),
		get("list/not allowed", "/capability/list", "blocked", 403),
		get("list/app error without a code from the authenticator", "/capability/list", "nocode", 500),
		{name: "list/wrong method", method: "DELETE", path: "/capability/list", auth: alice, status: 405},
		get("describe/capability", "/capability/describe?name=tasks.create", alice, 200),
		get("describe/anonymous", "/capability/describe?name=payments.send", "", 200),
		get("describe/hidden", "/capability/describe?name=admin.report", alice, 404),
		get("describe/unknown", "/capability/describe?name=nope", alice, 404),
		get("describe/missing name", "/capability/describe", alice, 400),
		withTenant,
		post("execute/unicode arguments", alice, exec("echo", `{"text":"héllo wörld ✓ 日本語 🎉 \u00e9 <b>&amp; \u2028"}`), 200),
		post("execute/large body near the limit", alice, large, 200),
		post("execute/body over the limit", alice, tooLarge, 413),
		gz,
		br,
		plusJSON,
		post("execute/unknown capability", alice, exec("nope", ""), 404),
		post("execute/hidden capability", alice, exec("admin.report", `{"unknown":true}`), 404),
		post("execute/invalid input", alice, exec("tasks.create", `{"title":"","priority":"high","color":"red"}`), 400),
		post("execute/duplicate argument key", alice, exec("echo", `{"text":"a","text":"b"}`), 400),
		post("execute/forbidden by authorize", alice, exec("payments.send", `{"amount":500,"currency":"EUR"}`), 403),
		post("execute/app error from authorize", alice, exec("payments.send", `{"amount":5,"currency":"USD"}`), 403),
		post("execute/app error without a code", alice, exec("payments.send", `{"amount":5,"currency":"XXX"}`), 500),
		post("execute/authorized", alice, exec("payments.send", `{"amount":5,"currency":"EUR"}`), 200),
		post("execute/app error with status and fields", alice, exec("conflict", ""), 409),
		post("execute/app error 401 gets the challenge", alice, exec("expired", "null"), 401),
		post("execute/panic redacted", alice, exec("panics", ""), 500),
		post("execute/plain error redacted", alice, exec("fails", "{}"), 500),
		post("execute/invalid output", alice, exec("bad_output", ""), 500),
		post("execute/timeout", alice, exec("slow", ""), 504),
		post("execute/no credentials", "", exec("echo", `{"text":"hi"}`), 401),
		post("execute/bad token", "forged", exec("echo", `{"text":"hi"}`), 401),
		post("execute/not allowed", "blocked", exec("echo", `{"text":"hi"}`), 403),
		{name: "execute/wrong method", method: "GET", path: "/capability/execute", auth: alice, status: 405},
		textPlain,
		post("execute/malformed JSON", alice, `{"capability":"echo",`, 400),
		post("execute/malformed envelope", alice, `{"capability":"","arguments":"text","extra":1}`, 400),
		{name: "batch/mixed results", method: "POST", path: "/capability/batch-execute", auth: alice, ctype: ctJSON, status: 200,
			body: `{"requests":[{"id":"one","capability":"echo","arguments":{"text":"first"}},` +
				`{"capability":"tasks.create","arguments":{"title":""}},{"capability":"admin.report"},` +
				`{"id":"pay","capability":"payments.send","arguments":{"amount":5,"currency":"USD"}},` +
				`{"capability":"conflict"},{"capability":"panics"},{"capability":"nope"},{"capability":"tasks.count","arguments":null}]}`},
		{name: "batch/too many", method: "POST", path: "/capability/batch-execute", auth: alice, ctype: ctJSON, status: 400,
			body: `{"requests":[` + strings.Repeat(`{"capability":"tasks.count"},`, 50) + `{"capability":"tasks.count"}]}`},
		{name: "batch/malformed item", method: "POST", path: "/capability/batch-execute", auth: alice, ctype: ctJSON, status: 400,
			body: `{"requests":[{"capability":"echo","id":1},"x"]}`},
		batchNoAuth,
	}
}

// answer is what the table compares: status, the headers that carry
// meaning, and the body. Bodies over 4 KiB are compared by digest to keep
// the golden file readable.
type answer struct {
	Status     int               `json:"status"`
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body,omitempty"`
	BodySHA256 string            `json:"body_sha256,omitempty"`
	BodyLength int               `json:"body_length,omitempty"`
}

var comparedHeaders = []string{"Content-Type", "Cache-Control", "Allow", "WWW-Authenticate", "X-Content-Type-Options"}

var client = &http.Client{Timeout: 10 * time.Second}

func do(t *testing.T, base string, x exchange) answer {
	t.Helper()
	body := []byte(x.body)
	if x.encoding == "gzip" {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(body)
		zw.Close()
		body = z.Bytes()
	}
	var r io.Reader
	if x.body != "" {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(x.method, base+x.path, r)
	if err != nil {
		t.Fatal(err)
	}
	if x.auth != "" {
		req.Header.Set("Authorization", "Bearer "+x.auth)
	}
	if x.tenant != "" {
		req.Header.Set("X-Tenant", x.tenant)
	}
	if x.ctype != "" {
		req.Header.Set("Content-Type", x.ctype)
	}
	if x.encoding != "" {
		req.Header.Set("Content-Encoding", x.encoding)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{Status: resp.StatusCode, Headers: map[string]string{}}
	for _, k := range comparedHeaders {
		if v := resp.Header.Get(k); v != "" {
			a.Headers[k] = v
		}
	}
	if len(data) > 4096 {
		sum := sha256.Sum256(data)
		a.BodySHA256, a.BodyLength = hex.EncodeToString(sum[:]), len(data)
	} else {
		a.Body = string(data)
	}
	return a
}

func TestConformance(t *testing.T) {
	h, err := newHandler()
	if err != nil {
		t.Fatal(err)
	}
	servers := startServers(t, h)
	table := cases()
	if len(table) < 30 {
		t.Fatalf("the table has %d cases, want at least 30", len(table))
	}

	golden := map[string]answer{}
	if !*update {
		data, err := os.ReadFile(goldenFile)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if err := json.Unmarshal(data, &golden); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, x := range table {
		if seen[x.name] {
			t.Fatalf("case %q appears twice", x.name)
		}
		seen[x.name] = true
		t.Run(x.name, func(t *testing.T) {
			for _, s := range servers {
				got := do(t, s.url, x)
				if got.Status != x.status {
					t.Errorf("%s: status %d, want %d: %s", s.name, got.Status, x.status, got.Body)
				}
				if *update && s.name == servers[0].name {
					golden[x.name] = got
					continue
				}
				want, ok := golden[x.name]
				if !ok {
					t.Fatalf("no golden answer (run go test -update)")
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s differs from the golden answer (-want +got):\n%s", s.name, diff)
				}
			}
		})
	}
	if *update {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(golden); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(goldenFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
