// Package servicetest gives tests the PostgreSQL and Redis servers named by
// AGENTCAP_POSTGRES_DSN and AGENTCAP_REDIS_ADDR. Without them a test is
// skipped, except under CI (CI set), where it fails: CI must run them.
// RedisServer starts a Redis server of a test's own.
package servicetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

func need(t testing.TB, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; CI must run the %s tests against a loopback server", name, what)
		}
		t.Skipf("%s is not set; start %s on loopback and set it to run these tests", name, what)
	}
	return v
}

func random() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// PostgresDSN returns AGENTCAP_POSTGRES_DSN, or skips (fails under CI).
func PostgresDSN(t testing.TB) string { return need(t, "AGENTCAP_POSTGRES_DSN", "PostgreSQL") }

// PostgresSchema creates a schema of its own for the test, dropped when
// the test ends, and returns a function opening pools whose connections
// use it: two pools from it are two instances sharing one database.
func PostgresSchema(t testing.TB) func() *pgxpool.Pool {
	t.Helper()
	dsn := PostgresDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := "agentcap_test_" + random()
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		admin.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	return func() *pgxpool.Pool {
		t.Helper()
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		cfg.MaxConns = 16
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Registered after the schema's cleanup, so it runs before it.
		t.Cleanup(pool.Close)
		return pool
	}
}

// Redis returns a client of AGENTCAP_REDIS_ADDR and a key prefix of the
// test's own, whose keys are deleted when the test ends; or skips (fails
// under CI).
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	addr := need(t, "AGENTCAP_REDIS_ADDR", "Redis")
	c := redis.NewClient(&redis.Options{Addr: addr})
	prefix := "agentcap_test_" + random() + ":"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		t.Fatalf("redis at %s: %v", addr, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		_ = c.Close()
	})
	return c, prefix
}

// RedisServer starts a redis-server of the test's own on a free loopback
// port, without persistence and with the extra arguments args (such as
// "--maxmemory-policy", "volatile-lru"), stops it when the test ends, and
// returns its address. Tests use it for a configuration the shared
// server of AGENTCAP_REDIS_ADDR must not be given. Without redis-server
// on the PATH the test is skipped, except under CI, where it fails.
func RedisServer(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not on the PATH; CI must run the tests that start their own")
		}
		t.Skip("redis-server is not on the PATH")
	}
	var last error
	// A port found free may be taken before the server binds it: try
	// again with another.
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, args...)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		stop := func() {
			_ = cmd.Process.Kill()
			<-exited
		}
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		up, gone := false, false
		for deadline := time.Now().Add(10 * time.Second); !up && !gone && time.Now().Before(deadline); {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			last = c.Ping(ctx).Err()
			cancel()
			if up = last == nil; up {
				break
			}
			select {
			case err := <-exited:
				last, gone = fmt.Errorf("redis-server exited: %v", err), true
			case <-time.After(50 * time.Millisecond):
			}
		}
		_ = c.Close()
		switch {
		case up:
			t.Cleanup(stop)
			return addr
		case !gone:
			stop()
		}
	}
	t.Fatalf("redis-server did not start: %v", last)
	return ""
}
