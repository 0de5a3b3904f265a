package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/redisstore"
	"github.com/agentcap/agentcap/sqlstore"
	"github.com/agentcap/agentcap/testing/agentauthtest"
)

// BenchmarkProviderExecute is the default deployment's hot path: a
// verified execute at agentcap's provider over loopback, the agent and
// its host read from the provider's store and the call's audit record
// written before the answer (WithAuditRequired), with the provider's
// records and the audit trail in memory and in one SQLite file
// (sqlstore). Agent JWTs are signed before the timer starts. The two
// sub-benchmarks side by side show what SQLite costs per call; a change
// that makes the SQLite path slower shows here.
//
// The -16 sub-benchmarks make the same calls from 16 goroutines at once,
// as a busy location serves them: there the audit trail's group commit
// has company.
//
// With AGENTCAP_POSTGRES_DSN and AGENTCAP_REDIS_ADDR set, the
// postgres+redis sub-benchmarks run the deployment of several instances:
// the records and the trail in PostgreSQL (a schema of their own,
// dropped after), the replay cache and the count of changes that lets
// the provider keep the agents and hosts it reads in Redis.
func BenchmarkProviderExecute(b *testing.B) {
	for _, callers := range []int{1, 16} {
		suffix := ""
		if callers > 1 {
			suffix = fmt.Sprintf("-%d", callers)
		}
		b.Run("memory"+suffix, func(b *testing.B) {
			benchProviderExecute(b, store.NewMemory(nil), audit.NewMemory(nil), nil, callers)
		})
		b.Run("sqlite"+suffix, func(b *testing.B) {
			db, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			benchProviderExecute(b, db.Provider(), db.Audit(), nil, callers)
		})
		if dsn, addr := os.Getenv("AGENTCAP_POSTGRES_DSN"), os.Getenv("AGENTCAP_REDIS_ADDR"); dsn != "" && addr != "" {
			b.Run("postgres+redis"+suffix, func(b *testing.B) {
				db, replay := sharedStores(b, dsn, addr)
				benchProviderExecute(b, db.Provider(), db.Audit(), replay, callers)
			})
		}
	}
}

// sharedStores opens the stores of several instances: sqlstore on a new
// PostgreSQL schema of the database at dsn, given redisstore's count of
// changes, and redisstore's replay cache, on the Redis at addr.
func sharedStores(b *testing.B, dsn, addr string) (*sqlstore.DB, agentauth.ReplayCache) {
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	schema := fmt.Sprintf("bench_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			b.Error(err)
		}
		admin.Close()
	})
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	db, err := sqlstore.NewPostgres(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	client := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { _ = client.Close() })
	rs, err := redisstore.New(ctx, client, redisstore.Config{Prefix: schema + ":"})
	if err != nil {
		b.Fatal(err)
	}
	db.SetChanges(rs.Changes())
	b.Cleanup(func() { _ = client.Del(context.Background(), schema+":changes").Err() })
	return db, rs.Replay()
}

func benchProviderExecute(b *testing.B, st store.Store, trail audit.Store, replay agentauth.ReplayCache, callers int) {
	ctx := context.Background()
	now := time.Now().UTC()
	host := agentauthtest.NewHost(agentauthtest.Host{ID: "hst_1", UserID: "usr_1"})
	agent := host.NewAgent(agentauthtest.Agent{ID: "agt_1"})
	if err := st.CreateHost(ctx, &store.Host{ID: host.ID, PublicKey: host.PublicJWK(), UserID: "usr_1", Status: agentcap.StatusActive}); err != nil {
		b.Fatal(err)
	}
	if err := st.CreateAgent(ctx, &store.Agent{ID: agent.ID, HostID: host.ID, UserID: "usr_1", Mode: agentcap.ModeDelegated,
		Status: agentcap.StatusActive, AgentKey: store.AgentKey{PublicKey: agent.PublicJWK()}, ActivatedAt: &now,
		Grants: []store.Grant{{Capability: "balance", Status: agentcap.StatusActive}}}); err != nil {
		b.Fatal(err)
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
		Issuer: "http://" + srv.Listener.Addr().String(), ProviderName: "bench", Store: st, Registry: reg,
		Audit: trail, Replay: replay, RateLimits: provider.RateLimits{Off: true},
		Lifetimes: store.Policy{SessionTTL: 24 * time.Hour, MaxLifetime: 7 * 24 * time.Hour, AbsoluteLifetime: 30 * 24 * time.Hour},
	})
	if err != nil {
		b.Fatal(err)
	}
	exec, err := core.NewExecutor(reg,
		func(context.Context, *auth.Identity, *core.Definition, any) (struct{}, error) { return struct{}{}, nil },
		core.Config{Audit: core.AuditConfig{Writer: audit.ForExecutor(trail)}})
	if err != nil {
		b.Fatal(err)
	}
	loc, err := httpx.New(exec, httpx.Config{Verifier: prov})
	if err != nil {
		b.Fatal(err)
	}
	srv.Config.Handler = prov.Handler(loc)
	srv.Start()
	b.Cleanup(srv.Close)

	body := []byte(`{"capability":"balance","arguments":{}}`)
	tokens := make([]string, b.N+1)
	for i := range tokens {
		tokens[i] = agent.Token(agentauthtest.Token{Audience: prov.DefaultLocation(), JTI: fmt.Sprintf("jti-%d", i)})
	}
	client := srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = callers
	call := func(token string) error {
		req, err := http.NewRequest(http.MethodPost, prov.DefaultLocation(), bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte(`"balance":7`)) {
			return fmt.Errorf("%d %s", resp.StatusCode, got)
		}
		return nil
	}
	if err := call(tokens[b.N]); err != nil { // warm the connection and the store
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if callers == 1 {
		for i := range b.N {
			if err := call(tokens[i]); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	var next atomic.Int64
	b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(tokens[next.Add(1)-1]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
