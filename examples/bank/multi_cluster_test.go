//go:build multiinstance

package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentcap/agentcap"
)

// multiDatabase is the database the harness works in, created on the
// server of AGENTCAP_POSTGRES_DSN when missing; each run has its own
// schema in it, dropped at the end.
const multiDatabase = "agentcap_multi"

// multiEnv is what the harness takes from its environment.
type multiEnv struct {
	// baseDSN (AGENTCAP_POSTGRES_DSN) names the PostgreSQL server.
	baseDSN string
	// redisAddr (AGENTCAP_REDIS_ADDR) is the Redis the banks share.
	redisAddr string
	// redisRestart (AGENTCAP_MULTI_REDIS_RESTART=1) allows the harness
	// to shut that Redis down and start it again with redis-server.
	redisRestart bool
	// pgCtl and pgData (AGENTCAP_MULTI_PG_CTL, AGENTCAP_MULTI_PG_DATA)
	// let the harness restart the PostgreSQL server with pg_ctl, run as
	// the owner of the data directory.
	pgCtl, pgData string
}

func readMultiEnv(t *testing.T) multiEnv {
	t.Helper()
	e := multiEnv{
		baseDSN:      os.Getenv("AGENTCAP_POSTGRES_DSN"),
		redisAddr:    os.Getenv("AGENTCAP_REDIS_ADDR"),
		redisRestart: os.Getenv("AGENTCAP_MULTI_REDIS_RESTART") == "1",
		pgCtl:        os.Getenv("AGENTCAP_MULTI_PG_CTL"),
		pgData:       os.Getenv("AGENTCAP_MULTI_PG_DATA"),
	}
	if e.baseDSN == "" || e.redisAddr == "" {
		t.Skip("the multi-instance harness needs AGENTCAP_POSTGRES_DSN and AGENTCAP_REDIS_ADDR")
	}
	return e
}

// multiSchema returns a DSN on a fresh schema of multiDatabase (created
// on base's server when missing), dropped when the test ends, and a
// connection to it for the harness's own checks.
func multiSchema(t *testing.T, base string) (string, *pgx.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to AGENTCAP_POSTGRES_DSN: %v", err)
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, multiDatabase).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		var pe *pgconn.PgError
		// Another run may create it at the same moment.
		if _, err := conn.Exec(ctx, `CREATE DATABASE `+multiDatabase); err != nil && (!errors.As(err, &pe) || pe.Code != "42P04") {
			t.Fatalf("creating database %s: %v", multiDatabase, err)
		}
	}
	conn.Close(ctx)

	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + multiDatabase
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "multi_" + hex.EncodeToString(b[:])
	dbDSN := u.String()
	conn, err = pgx.Connect(ctx, dbDSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dbDSN)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	dsn := u.String()
	check, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return dsn, check
}

// instance is one bank process, restartable on its address.
type instance struct {
	name string
	bin  string
	addr string
	url  string
	args []string
	logs *syncBuffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs the bank and waits until it serves its discovery document.
func (in *instance) start() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	cmd := exec.Command(in.bin, in.args...)
	cmd.Stdout, cmd.Stderr = in.logs, in.logs
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	in.cmd, in.done = cmd, done
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("%s exited at start:\n%s", in.name, in.logs)
		default:
		}
		resp, err := hc.Get(in.url + agentcap.DiscoveryPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-done
	return fmt.Errorf("%s not ready after 60s:\n%s", in.name, in.logs)
}

// stop asks the process to shut down with SIGTERM and reports an exit
// that was not clean.
func (in *instance) stop() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil {
		return nil
	}
	defer func() { in.cmd = nil }()
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
		if code := in.cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("%s exited with %d after SIGTERM", in.name, code)
		}
		return nil
	case <-time.After(20 * time.Second):
		_ = in.cmd.Process.Kill()
		<-in.done
		return fmt.Errorf("%s ignored SIGTERM for 20s", in.name)
	}
}

// balancer is the harness's load balancer: a reverse proxy built on
// net/http/httputil that sends each request to the next backend in turn
// (round robin), appends the client's address to X-Forwarded-For, and
// names the backend in the X-Backend answer header. It neither retries
// nor checks health: a backend that is down answers 502 for its share
// of the requests until it is back, which is what clients see behind
// the simplest balancer.
type balancer struct {
	backends []*url.URL
	next     atomic.Uint64
	proxy    *httputil.ReverseProxy
}

type backendKey struct{}

func newBalancer(backends []string) *balancer {
	b := &balancer{}
	for _, raw := range backends {
		u, _ := url.Parse(raw)
		b.backends = append(b.backends, u)
	}
	b.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			i := pr.In.Context().Value(backendKey{}).(int)
			pr.SetURL(b.backends[i])
			pr.SetXForwarded()
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     30 * time.Second,
		},
		ModifyResponse: func(r *http.Response) error {
			r.Header.Set("X-Backend", strconv.Itoa(r.Request.Context().Value(backendKey{}).(int)))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.Header().Set("X-Backend", strconv.Itoa(r.Context().Value(backendKey{}).(int)))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			body, _ := json.Marshal(map[string]string{"error": "bad_gateway", "message": "the backend did not answer: " + err.Error()})
			_, _ = w.Write(body)
		},
	}
	return b
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int((b.next.Add(1) - 1) % uint64(len(b.backends)))
	b.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), backendKey{}, i)))
}

// cluster is three banks in provider mode on one PostgreSQL schema, one
// Redis and one secret file, behind a balancer whose URL is their issuer.
type cluster struct {
	env       multiEnv
	bin       string
	dsn       string
	db        *pgx.Conn
	secret    string
	issuer    string
	front     *httptest.Server
	instances []*instance
	// http is the harness's client: keep-alive connections, enough of
	// them for the load, and a time-out well above the banks' own.
	http *http.Client
}

// multiLimits are the limits of the banks outside the rate limit
// scenario: high enough that no load of the harness reaches them, so
// that the limiter still runs on every request.
const multiLimits = "agent=100000,host=1000000,user=1000000,ip=1000000"

func newCluster(t *testing.T, env multiEnv, n int) *cluster {
	t.Helper()
	c := &cluster{env: env, bin: buildBank(t)}
	c.dsn, c.db = multiSchema(t, env.baseDSN)
	t.Cleanup(func() { c.db.Close(context.Background()) })
	c.secret = filepath.Join(t.TempDir(), "secret")
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.secret, []byte(hex.EncodeToString(key[:])), 0o600); err != nil {
		t.Fatal(err)
	}
	var backends []string
	for i := range n {
		addr := freeAddr(t)
		in := &instance{name: fmt.Sprintf("bank%d", i), bin: c.bin, addr: addr, url: "http://" + addr, logs: &syncBuffer{}}
		c.instances = append(c.instances, in)
		backends = append(backends, in.url)
	}
	c.front = httptest.NewServer(newBalancer(backends))
	t.Cleanup(c.front.Close)
	c.issuer = c.front.URL
	c.http = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	c.start(t, multiLimits)
	t.Cleanup(func() {
		art := os.Getenv("AGENTCAP_ARTIFACTS")
		for _, in := range c.instances {
			if err := in.stop(); err != nil {
				t.Errorf("%v\n%s", err, in.logs)
			}
			if art == "" {
				continue
			}
			if err := os.WriteFile(filepath.Join(art, "multiinstance-"+in.name+".log"), []byte(in.logs.String()), 0o644); err != nil {
				t.Error(err)
			}
		}
	})
	return c
}

// start starts every instance with limits (the -limits flag), in
// parallel, as a deployment would.
func (c *cluster) start(t *testing.T, limits string) {
	t.Helper()
	errs := make([]error, len(c.instances))
	var wg sync.WaitGroup
	for i, in := range c.instances {
		in.args = []string{"-addr", in.addr, "-issuer", c.issuer, "-postgres", c.dsn, "-redis", c.env.redisAddr,
			"-secret-file", c.secret, "-forwarded-for", "-limits", limits, "-dev-presence-code", "-debug"}
		wg.Go(func() { errs[i] = in.start() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// restart stops every instance with SIGTERM and starts them again with
// limits.
func (c *cluster) restart(t *testing.T, limits string) {
	t.Helper()
	for _, in := range c.instances {
		if err := in.stop(); err != nil {
			t.Fatalf("%v\n%s", err, in.logs)
		}
	}
	c.start(t, limits)
}

// reconnect replaces the harness's connection to the database, after a
// restart of the server.
func (c *cluster) reconnect(ctx context.Context) error {
	_ = c.db.Close(ctx)
	var err error
	c.db, err = pgx.Connect(ctx, c.dsn)
	return err
}

// logs returns every instance's output, for a failure message.
func (c *cluster) logs() string {
	var b strings.Builder
	for _, in := range c.instances {
		fmt.Fprintf(&b, "--- %s\n%s", in.name, tail(in.logs.String(), 40))
	}
	return b.String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
