package sqlstore_test

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/internal/benchcpu"
	"github.com/agentcap/agentcap/sqlstore"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// sqlCounts counts what the SQLite connections of a test were asked to
// do: statements prepared, SQL texts run without a prepared statement
// (each parsed by SQLite), transactions begun (each a BEGIN and a COMMIT
// parsed by the driver), and prepared statements run. Safe for
// concurrent use.
type sqlCounts struct {
	mu                      sync.Mutex
	prepares, texts, begins int
	stmtRuns                int
	parsed                  []string
}

func (n *sqlCounts) add(field *int, query string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	*field++
	if query != "" {
		n.parsed = append(n.parsed, query)
	}
}

// snapshot returns the counts and the texts parsed, and starts afresh.
func (n *sqlCounts) snapshot() (prepares, texts, begins, stmtRuns int, parsed []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	prepares, texts, begins, stmtRuns, parsed = n.prepares, n.texts, n.begins, n.stmtRuns, n.parsed
	n.prepares, n.texts, n.begins, n.stmtRuns, n.parsed = 0, 0, 0, 0, nil
	return
}

// countingConnector opens modernc.org/sqlite connections to dsn whose
// every use is counted in n.
type countingConnector struct {
	dsn string
	n   *sqlCounts
}

func (c countingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := (&sqlite.Driver{}).Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &countingConn{conn: conn, n: c.n}, nil
}

func (c countingConnector) Driver() driver.Driver { return &sqlite.Driver{} }

// countingConn passes every call on to the driver's connection, which
// implements all of the optional interfaces below.
type countingConn struct {
	conn driver.Conn
	n    *sqlCounts
}

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.n.add(&c.n.prepares, query)
	st, err := c.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &countingStmt{st: st, n: c.n}, nil
}

func (c *countingConn) Close() error { return c.conn.Close() }

func (c *countingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.n.add(&c.n.begins, "")
	return c.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.n.add(&c.n.texts, query)
	return c.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.add(&c.n.texts, query)
	return c.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *countingConn) Ping(ctx context.Context) error { return c.conn.(driver.Pinger).Ping(ctx) }

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool { return c.conn.(driver.Validator).IsValid() }

// countingStmt counts the runs of a prepared statement.
type countingStmt struct {
	st driver.Stmt
	n  *sqlCounts
}

func (s *countingStmt) Close() error  { return s.st.Close() }
func (s *countingStmt) NumInput() int { return s.st.NumInput() }

func (s *countingStmt) Exec(args []driver.Value) (driver.Result, error) {
	return nil, errors.New("countingStmt: Exec without a context")
}

func (s *countingStmt) Query(args []driver.Value) (driver.Rows, error) {
	return nil, errors.New("countingStmt: Query without a context")
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.n.add(&s.n.stmtRuns, "")
	return s.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.n.add(&s.n.stmtRuns, "")
	return s.st.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// TestVerifiedExecuteParsesNoSQL: once warm, a verified execute against
// a provider on the provider's records of a DB on SQLite, with its audit
// trail in the same DB (as the example bank runs), prepares no statement, runs no SQL text and
// begins no transaction: the audit records go through statements
// prepared on their connections, and the agent and host reads, once
// cached, ask the database nothing. The agent's last
// use is recorded once per touch interval; the clock stands still here,
// so after the first call it is not.
func TestVerifiedExecuteParsesNoSQL(t *testing.T) {
	ctx := context.Background()
	n, db, call := newHotPath(t)
	const warm, calls = 5, 50
	for i := range warm {
		call(i)
	}
	if prepares, _, _, _, _ := n.snapshot(); prepares == 0 {
		t.Fatal("no statement was prepared through the counting driver: the stores do not use it")
	}
	for i := warm; i < warm+calls; i++ {
		call(i)
	}
	prepares, texts, begins, stmtRuns, parsed := n.snapshot()
	if prepares != 0 || texts != 0 || begins != 0 {
		t.Errorf("%d warm calls prepared %d statements, ran %d SQL texts unprepared and began %d transactions; want none:\n%q",
			calls, prepares, texts, begins, parsed)
	}
	// Each call writes two audit records (started and ok) through
	// prepared statements; the agent and its host, read by the first
	// call, are served from the store's cache, which no write has
	// ended since.
	if want := 2 * calls; stmtRuns != want {
		t.Errorf("%d warm calls ran %d prepared statements; want %d", calls, stmtRuns, want)
	}
	// A write ends the cached records: the next call reads the agent
	// and its host again, both in one prepared statement, beside its
	// two audit records.
	if err := db.Provider().SetAgentName(ctx, "agt_1", "renamed"); err != nil {
		t.Fatal(err)
	}
	n.snapshot()
	call(warm + calls)
	prepares, texts, begins, stmtRuns, parsed = n.snapshot()
	if prepares != 0 || texts != 0 || begins != 0 || stmtRuns != 3 {
		t.Errorf("the call after a write prepared %d statements, ran %d SQL texts unprepared, began %d transactions and ran %d prepared statements; want 0, 0, 0, 3:\n%q",
			prepares, texts, begins, stmtRuns, parsed)
	}
	page, err := db.Audit().Query(ctx, audit.Query{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(page.Records), 2*(warm+calls+1); got != want {
		t.Errorf("the trail holds %d records; want %d", got, want)
	}
}

// BenchmarkVerifiedExecute measures the verified executes of
// TestVerifiedExecuteParsesNoSQL, client and server in one process, one
// at a time; cpu-ns/op is the process's CPU time (both sides).
func BenchmarkVerifiedExecute(b *testing.B) {
	_, _, call := newHotPath(b)
	call(-1)
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := range b.N {
		call(i)
	}
}

// newHotPath serves a provider on the provider's records and the audit
// trail of one DB on an SQLite file, opened as OpenSQLite opens it but
// through a counting driver, and returns the counts, the DB and a
// function making the ith verified execute of a granted agent.
func newHotPath(t testing.TB) (*sqlCounts, *sqlstore.DB, func(i int)) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bank.db")
	dsn, err := sqlstore.SQLiteDSN(path)
	if err != nil {
		t.Fatal(err)
	}
	n := &sqlCounts{}
	db, err := sqlstore.OpenSQLiteOn(ctx, sql.OpenDB(countingConnector{dsn: dsn, n: n}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	st, trail := db.Provider(), db.Audit()

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "usr_1", Clock: clock})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"})
	if err := st.CreateHost(ctx, &store.Host{ID: host.ID, PublicKey: host.PublicJWK(), UserID: "usr_1", Status: agentcap.StatusActive}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateAgent(ctx, &store.Agent{ID: agent.ID, HostID: host.ID, UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: agent.PublicJWK()}, ActivatedAt: &now,
		Grants: []store.Grant{{Capability: "balance", Status: agentcap.StatusActive}}}); err != nil {
		t.Fatal(err)
	}

	type out struct {
		Balance int `json:"balance"`
	}
	balance := core.MustDefine("balance", "Read a balance.",
		func(context.Context, struct{}, struct{}) (out, error) { return out{Balance: 7}, nil },
		core.WithAuditRequired(), core.WithReadOnly())
	reg := core.MustRegistry(balance)
	srv := httptest.NewUnstartedServer(nil)
	prov, err := provider.New(provider.Config{
		Issuer: "http://" + srv.Listener.Addr().String(), ProviderName: "test", Store: st, Registry: reg,
		Audit: trail, Now: clock, RateLimits: provider.RateLimits{Off: true},
		Lifetimes: store.Policy{SessionTTL: 24 * time.Hour, MaxLifetime: 7 * 24 * time.Hour, AbsoluteLifetime: 30 * 24 * time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := core.NewExecutor(reg,
		func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{Audit: core.AuditConfig{Writer: audit.ForExecutor(trail)}})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := httpx.New(exec, httpx.Config{Verifier: prov})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = prov.Handler(loc)
	srv.Start()
	t.Cleanup(srv.Close)

	call := func(i int) {
		t.Helper()
		token := agent.Token(agentauthtest.Token{Audience: prov.DefaultLocation(), JTI: fmt.Sprintf("jti-%d", i)})
		req, err := http.NewRequest(http.MethodPost, prov.DefaultLocation(), bytes.NewReader([]byte(`{"capability":"balance","arguments":{}}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"balance":7`)) {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, body)
		}
	}
	return n, db, call
}

// TestCanceledReadAndWrite: the reads of the verifier and the audit
// writes, which the driver is not asked to watch once they run, still
// refuse a context that is already done, and write nothing then.
func TestCanceledReadAndWrite(t *testing.T) {
	_, db, call := newHotPath(t)
	trail, s := db.Audit(), db.Provider()
	call(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := trail.Write(ctx, audit.Record{Event: "balance", Outcome: "ok"}); !errors.Is(err, context.Canceled) {
		t.Errorf("audit write under a canceled context: %v; want context.Canceled", err)
	}
	page, err := trail.Query(context.Background(), audit.Query{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 2 {
		t.Errorf("the trail holds %d records; want the 2 of the call", len(page.Records))
	}
	if _, err := s.GetHost(ctx, "hst_1"); !errors.Is(err, context.Canceled) {
		t.Errorf("host read under a canceled context: %v; want context.Canceled", err)
	}
	if _, err := s.GetAgent(ctx, "agt_1"); !errors.Is(err, context.Canceled) {
		t.Errorf("agent read under a canceled context: %v; want context.Canceled", err)
	}
	if _, err := s.GetHost(context.Background(), "hst_1"); err != nil {
		t.Errorf("host read: %v", err)
	}
}
