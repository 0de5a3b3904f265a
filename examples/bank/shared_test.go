package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// sharedDSN returns a DSN on a fresh schema of AGENTCAP_POSTGRES_DSN's
// database, dropped at the end of the test, and the Redis address of
// AGENTCAP_REDIS_ADDR; it skips the test when either is unset.
func sharedServers(t *testing.T) (dsn, redisAddr string) {
	t.Helper()
	base, redisAddr := os.Getenv("AGENTCAP_POSTGRES_DSN"), os.Getenv("AGENTCAP_REDIS_ADDR")
	if base == "" || redisAddr == "" {
		t.Skip("AGENTCAP_POSTGRES_DSN and AGENTCAP_REDIS_ADDR are needed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "bank_shared_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), redisAddr
}

// roundRobin is a reverse proxy sending each request to the next of its
// backends.
type roundRobin struct {
	mu       sync.Mutex
	backends []*url.URL
	next     atomic.Uint64
}

func (rr *roundRobin) add(raw string) {
	u, _ := url.Parse(raw)
	rr.mu.Lock()
	rr.backends = append(rr.backends, u)
	rr.mu.Unlock()
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rr.mu.Lock()
	b := rr.backends[int(rr.next.Add(1)-1)%len(rr.backends)]
	rr.mu.Unlock()
	httputil.NewSingleHostReverseProxy(b).ServeHTTP(w, r)
}

// TestInstancesShareState runs two banks on one PostgreSQL schema, one
// Redis and one secret file behind a round-robin proxy: an agent
// registers and is approved across both (the sign-in cookie and the
// page's CSRF token made by one are accepted by the other), and a token
// served by one is a replay at the other.
func TestInstancesShareState(t *testing.T) {
	dsn, redisAddr := sharedServers(t)
	bin := buildBank(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(hex.EncodeToString([]byte("thirty-two bytes of test secret!"))), 0o600); err != nil {
		t.Fatal(err)
	}
	rr := &roundRobin{}
	proxy := httptest.NewServer(rr)
	defer proxy.Close()
	var banks []*bankProcess
	for range 2 {
		p := startBankIn(t, bin, "", func(addr, _ string) []string {
			return []string{"-addr", addr, "-issuer", proxy.URL, "-postgres", dsn, "-redis", redisAddr,
				"-secret-file", secret, "-forwarded-for", "-limits", "agent=600,ip=600", "-dev-presence-code"}
		})
		banks = append(banks, p)
		rr.add(p.url)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs := func() string { return banks[0].logs.String() + "\n" + banks[1].logs.String() }
	a, st, _ := connectBalanceReader(ctx, t, proxy.URL, logs)
	if st.Status != "active" {
		t.Fatalf("status %+v\n%s", st, logs())
	}

	token, err := a.SignJWT(proxy.URL+"/capability/execute", []string{"check_balance"})
	if err != nil {
		t.Fatal(err)
	}
	first := banks[0].execute(t, token, "check_balance", `{"account_id":"acc_123"}`)
	again := banks[1].execute(t, token, "check_balance", `{"account_id":"acc_123"}`)
	if first.status != http.StatusOK || again.status != http.StatusUnauthorized || again.m["error"] != "invalid_jwt" {
		t.Errorf("one token at both instances: %d %s, then %d %s", first.status, first.body, again.status, again.body)
	}

}
