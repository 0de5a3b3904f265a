package agentauth_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/agentauth"
)

// These tests only ever reach httptest servers on 127.0.0.1. Refusals of
// non-loopback addresses, which must happen before any connection, are
// tested in ssrf_internal_test.go with a dialer that never connects.

type stServer struct {
	srv  *httptest.Server
	hits atomic.Int32
}

func stNewServer(t *testing.T, tls bool, h http.HandlerFunc) *stServer {
	t.Helper()
	s := &stServer{}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	if tls {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	return s
}

func (s *stServer) policy() agentauth.FetchPolicy {
	p := agentauth.FetchPolicy{AllowLoopback: true}
	if tr, ok := s.srv.Client().Transport.(*http.Transport); ok && tr.TLSClientConfig != nil {
		p.RootCAs = tr.TLSClientConfig.RootCAs
	}
	return p
}

func stGet(client *http.Client, u string) (string, error) {
	resp, err := client.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestSafeHTTPClientLoopback(t *testing.T) {
	hello := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+r.Host) }
	tlsSrv := stNewServer(t, true, hello)
	plainSrv := stNewServer(t, false, hello)
	port := func(s *stServer) string { u, _ := url.Parse(s.srv.URL); return u.Port() }
	tests := []struct {
		name    string
		srv     *stServer
		url     string
		policy  func(agentauth.FetchPolicy) agentauth.FetchPolicy
		want    string
		blocked bool
	}{
		{name: "https to loopback allowed", srv: tlsSrv, url: tlsSrv.srv.URL + "/", want: "hello " + strings.TrimPrefix(tlsSrv.srv.URL, "https://")},
		{name: "http to loopback allowed", srv: plainSrv, url: plainSrv.srv.URL + "/", want: "hello " + strings.TrimPrefix(plainSrv.srv.URL, "http://")},
		{name: "http to localhost allowed", srv: plainSrv, url: "http://localhost:" + port(plainSrv) + "/", want: "hello localhost:" + port(plainSrv)},
		{name: "https to loopback refused by default", srv: tlsSrv, url: tlsSrv.srv.URL + "/",
			policy: func(p agentauth.FetchPolicy) agentauth.FetchPolicy { p.AllowLoopback = false; return p }, blocked: true},
		{name: "https to localhost refused by default", srv: tlsSrv, url: "https://localhost:" + port(tlsSrv) + "/",
			policy: func(p agentauth.FetchPolicy) agentauth.FetchPolicy { p.AllowLoopback = false; return p }, blocked: true},
		{name: "http refused by default", srv: plainSrv, url: plainSrv.srv.URL + "/",
			policy: func(p agentauth.FetchPolicy) agentauth.FetchPolicy { p.AllowLoopback = false; return p }, blocked: true},
		{name: "other scheme", srv: plainSrv, url: "ftp://127.0.0.1:" + port(plainSrv) + "/", blocked: true},
		{name: "credentials in URL", srv: tlsSrv, url: "https://user:pw@127.0.0.1:" + port(tlsSrv) + "/", blocked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.srv.policy()
			if tt.policy != nil {
				p = tt.policy(p)
			}
			before := tt.srv.hits.Load()
			got, err := stGet(agentauth.NewSafeHTTPClient(p), tt.url)
			if tt.blocked {
				if !errors.Is(err, agentauth.ErrFetchBlocked) {
					t.Fatalf("err = %v, want ErrFetchBlocked", err)
				}
				if tt.srv.hits.Load() != before {
					t.Fatal("the server was reached")
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestSafeHTTPClientBodyLimit(t *testing.T) {
	const limit = 1000
	srv := stNewServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		for range n / 100 {
			io.WriteString(w, strings.Repeat("x", 100))
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		io.WriteString(w, strings.Repeat("x", n%100))
	})
	p := srv.policy()
	p.MaxBytes = limit
	client := agentauth.NewSafeHTTPClient(p)
	for _, tt := range []struct {
		query   string
		tooLong bool
	}{
		{"n=1000", false},
		{"n=1000&chunked=1", false},
		{"n=1001", true},
		{"n=1001&chunked=1", true},
		{"n=50000&chunked=1", true},
	} {
		t.Run(tt.query, func(t *testing.T) {
			body, err := stGet(client, srv.srv.URL+"/?"+tt.query)
			if tt.tooLong {
				if !errors.Is(err, agentauth.ErrResponseTooLarge) {
					t.Fatalf("err = %v, want ErrResponseTooLarge", err)
				}
				if len(body) > limit {
					t.Fatalf("read %d bytes past the limit", len(body))
				}
				return
			}
			if err != nil || len(body) != limit {
				t.Fatalf("read %d bytes, err %v", len(body), err)
			}
		})
	}
}

func TestSafeHTTPClientRedirects(t *testing.T) {
	srv := stNewServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
			return
		}
		io.WriteString(w, "done")
	})
	tests := []struct {
		maxRedirects, chain int
		ok                  bool
	}{
		{0, 3, true}, // default 3
		{0, 4, false},
		{10, 4, false}, // capped at 3
		{1, 1, true},
		{1, 2, false},
		{-1, 0, true},
		{-1, 1, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("max %d chain %d", tt.maxRedirects, tt.chain), func(t *testing.T) {
			p := srv.policy()
			p.MaxRedirects = tt.maxRedirects
			body, err := stGet(agentauth.NewSafeHTTPClient(p), fmt.Sprintf("%s/r/%d", srv.srv.URL, tt.chain))
			if tt.ok && (err != nil || body != "done") {
				t.Fatalf("got %q, %v", body, err)
			}
			if !tt.ok && !errors.Is(err, agentauth.ErrFetchBlocked) {
				t.Fatalf("err = %v, want ErrFetchBlocked", err)
			}
		})
	}
	// Under AllowLoopback, a redirect to plain http on loopback is followed,
	// as development setups mix the two.
	plain := stNewServer(t, false, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain") })
	down := stNewServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.srv.URL+"/", http.StatusFound)
	})
	p := down.policy()
	if body, err := stGet(agentauth.NewSafeHTTPClient(p), down.srv.URL+"/"); err != nil || body != "plain" {
		t.Fatalf("downgrade under AllowLoopback: %q, %v", body, err)
	}
}

func TestSafeHTTPClientTimeout(t *testing.T) {
	srv := stNewServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	p := srv.policy()
	p.Timeout = 200 * time.Millisecond
	start := time.Now()
	_, err := stGet(agentauth.NewSafeHTTPClient(p), srv.srv.URL+"/")
	if err == nil {
		t.Fatal("no error from a server that never answers")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v despite a 200ms timeout", d)
	}
	var ue *url.Error
	if !errors.As(err, &ue) || !ue.Timeout() {
		t.Fatalf("err = %v, want a timeout", err)
	}
}

func ExampleNewSafeHTTPClient() {
	client := agentauth.NewSafeHTTPClient(agentauth.FetchPolicy{})
	_, err := client.Get("https://169.254.169.254/latest/meta-data/")
	fmt.Println(errors.Is(err, agentauth.ErrFetchBlocked))
	_, err = client.Get("http://keys.example/jwks.json")
	fmt.Println(errors.Is(err, agentauth.ErrFetchBlocked))
	// Output:
	// true
	// true
}
