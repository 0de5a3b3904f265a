package httpx_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentcap/agentcap/httpx"
)

// nopWriter is a ResponseWriter that discards, so benchmarks measure the
// handler and not a recorder.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}

func benchServeHTTP(b *testing.B, method, target, body string) {
	h, _ := newHandler(b, nil)
	req := httptest.NewRequest(method, target, nil)
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Content-Type", jsonType)
	w := &nopWriter{h: http.Header{}}
	rd := strings.NewReader(body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rd.Reset(body)
		req.Body = http.NoBody
		if body != "" {
			req.Body = readCloser{rd}
		}
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

func BenchmarkExecute(b *testing.B) {
	benchServeHTTP(b, "POST", "/capability/execute", `{"capability":"echo","arguments":{"text":"hello"}}`)
}

func BenchmarkBatch(b *testing.B) {
	benchServeHTTP(b, "POST", "/capability/batch-execute",
		`{"requests":[{"capability":"echo","arguments":{"text":"a"}},{"capability":"echo","arguments":{"text":"b"}}]}`)
}

func BenchmarkList(b *testing.B) {
	benchServeHTTP(b, "GET", "/capability/list?limit=5", "")
}

func BenchmarkDescribe(b *testing.B) {
	benchServeHTTP(b, "GET", "/capability/describe?name=echo", "")
}

func BenchmarkServe(b *testing.B) {
	h, _ := newHandler(b, nil)
	hdr := http.Header{"Authorization": {"Bearer alice"}, "Content-Type": {jsonType}}
	body := []byte(`{"capability":"echo","arguments":{"text":"hello"}}`)
	b.ReportAllocs()
	for b.Loop() {
		h.Serve(&httpx.Request{Method: "POST", Path: "capability/execute", Header: hdr.Get, Body: body})
	}
}

// FuzzServe sends arbitrary requests through the transport-neutral entry
// point: every answer must be a JSON document with a sane status, and
// nothing may panic.
func FuzzServe(f *testing.F) {
	f.Add("POST", "capability/execute", "", `{"capability":"echo","arguments":{"text":"x"}}`)
	f.Add("POST", "capability/batch-execute", "", `{"requests":[{"capability":"boom"},{"capability":"echo"}]}`)
	f.Add("GET", "capability/list", "query=a&limit=2&cursor=YQ", "")
	f.Add("GET", "capability/describe", "name=echo", "")
	f.Add("PUT", "/capability/list", "%zz", "")
	h, _ := newHandler(f, nil)
	hdr := http.Header{"Authorization": {"Bearer alice"}, "Content-Type": {jsonType}}
	f.Fuzz(func(t *testing.T, method, path, query, body string) {
		resp := h.Serve(&httpx.Request{Method: method, Path: path, RawQuery: query, Header: hdr.Get, Body: []byte(body)})
		if resp.Status < 200 || resp.Status > 599 {
			t.Fatalf("status %d", resp.Status)
		}
		if !bytes.HasSuffix(resp.Body, []byte("\n")) || !json.Valid(resp.Body) {
			t.Fatalf("body is not one JSON document: %q", resp.Body)
		}
		if resp.Header.Get("Content-Type") != jsonType {
			t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
		}
	})
}
