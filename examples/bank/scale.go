package main

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/redisstore"
)

// Connection pool and time-out settings for the shared stores. A bank
// instance holds at most pgMaxConns connections to PostgreSQL unless the
// DSN sets pool_max_conns, so that several instances stay under the
// server's max_connections (100 by default); calls to Redis give up after redisTimeout, and the replay
// cache and rate limiter then refuse (fail closed) rather than wait.
const (
	pgMaxConns     = 16
	pgConnectWait  = 5 * time.Second
	redisTimeout   = time.Second
	redisPoolSize  = 32
	minSecretBytes = 32
)

// shared holds the stores that several bank instances share: PostgreSQL
// (-postgres) and Redis (-redis). Either may be nil.
type shared struct {
	pool  *pgxpool.Pool
	redis *redis.Client
	rs    *redisstore.Store // on redis
}

// openShared connects to the servers the command line names. Neither is
// needed to start: a server that is down makes requests fail until it is
// back, but the tables are created at start, so PostgreSQL must answer
// then.
func openShared(ctx context.Context, cfg config) (*shared, error) {
	s := &shared{}
	if cfg.postgres != "" {
		pc, err := pgxpool.ParseConfig(cfg.postgres)
		if err != nil {
			return nil, fmt.Errorf("-postgres: %w", err)
		}
		if !strings.Contains(cfg.postgres, "pool_max_conns") {
			pc.MaxConns = pgMaxConns
		}
		if pc.ConnConfig.ConnectTimeout == 0 {
			pc.ConnConfig.ConnectTimeout = pgConnectWait
		}
		pc.HealthCheckPeriod = 5 * time.Second
		if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
			return nil, fmt.Errorf("-postgres: %w", err)
		}
	}
	if cfg.redis != "" {
		s.redis = redis.NewClient(&redis.Options{
			Addr:         cfg.redis,
			DialTimeout:  redisTimeout,
			ReadTimeout:  redisTimeout,
			WriteTimeout: redisTimeout,
			PoolSize:     redisPoolSize,
			// A command whose connection broke is tried once more on a
			// new one: the replay and confirmation scripts and the
			// idempotency Guard know a run of their own whose answer
			// was lost, and the limiter's at worst charges the request
			// twice.
			MaxRetries: 1,
		})
		if err := s.redis.Ping(ctx).Err(); err != nil {
			s.close()
			return nil, fmt.Errorf("-redis %s: %w", cfg.redis, err)
		}
		// One store for every Redis feature: the keys start with
		// "bank:replay:", "bank:limit:", "bank:idem:" and "bank:confirm:".
		// It refuses a server that may evict its keys.
		rs, err := redisstore.New(ctx, s.redis, redisstore.Config{Prefix: "bank:"})
		if err != nil {
			s.close()
			return nil, fmt.Errorf("-redis: %w", err)
		}
		s.rs = rs
	}
	return s, nil
}

func (s *shared) close() error {
	var err error
	if s.redis != nil {
		err = s.redis.Close()
	}
	if s.pool != nil {
		s.pool.Close()
	}
	return err
}

// apply puts the Redis replay cache and rate limiter into c, the limits
// of the command line, and the client address rule of -forwarded-for.
// The Redis stores refuse a server that may evict their keys.
func (s *shared) apply(ctx context.Context, c *provider.Config, cfg config) error {
	if s.rs != nil {
		c.Replay, c.RateLimits.Limiter = s.rs.Replay(), s.rs.Limiter()
	}
	c.RateLimits.Off = cfg.limits.off
	c.RateLimits.PerAgent = cfg.limits.agent
	c.RateLimits.PerHost = cfg.limits.host
	c.RateLimits.PerUser = cfg.limits.user
	c.RateLimits.PerIP = cfg.limits.ip
	if cfg.forwardedFor {
		c.RateLimits.ClientIP = forwardedClient
	}
	return nil
}

// forwardedClient is the client address a trusted reverse proxy reports:
// the last X-Forwarded-For entry, the one the proxy itself appended (the
// earlier ones come from the client and prove nothing). Without the
// header it is the connection's address.
func forwardedClient(r *http.Request) string {
	h := r.Header.Values("X-Forwarded-For")
	if len(h) == 0 {
		return r.RemoteAddr
	}
	last := h[len(h)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	return strings.TrimSpace(last)
}

// limitsFlag is -limits: requests a minute per agent, host, user and
// client address, or "off".
type limitsFlag struct {
	off                   bool
	agent, host, user, ip ratelimit.Limit
}

func (l *limitsFlag) String() string {
	if l.off {
		return "off"
	}
	var parts []string
	for _, p := range []struct {
		name string
		l    ratelimit.Limit
	}{{"agent", l.agent}, {"host", l.host}, {"user", l.user}, {"ip", l.ip}} {
		if p.l != (ratelimit.Limit{}) {
			parts = append(parts, p.name+"="+strconv.Itoa(p.l.N))
		}
	}
	return strings.Join(parts, ",")
}

func (l *limitsFlag) Set(v string) error {
	*l = limitsFlag{}
	if v == "off" {
		l.off = true
		return nil
	}
	for item := range strings.SplitSeq(v, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(item), "=")
		per, err := strconv.Atoi(n)
		if !ok || err != nil || per <= 0 {
			return fmt.Errorf("%q is not name=N with N a positive number of requests a minute", item)
		}
		lim := ratelimit.PerMinute(per)
		switch name {
		case "agent":
			l.agent = lim
		case "host":
			l.host = lim
		case "user":
			l.user = lim
		case "ip":
			l.ip = lim
		default:
			return fmt.Errorf("unknown limit %q (agent, host, user, ip)", name)
		}
	}
	return nil
}

// secrets are the keys several instances must share for the approval
// page to work through any of them: the development sign-in's cookies
// and the page's CSRF tokens. Each is derived from -secret-file's
// contents with HKDF, so neither key is the file itself.
type secrets struct {
	signIn, page []byte
}

func readSecrets(path string) (*secrets, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-secret-file: %w", err)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) < minSecretBytes {
		return nil, fmt.Errorf("-secret-file %s: %d bytes, want at least %d (for example, 32 random bytes in hex)", path, len(raw), minSecretBytes)
	}
	s := &secrets{}
	if s.signIn, err = hkdf.Key(sha256.New, raw, nil, "agentcap bank development sign-in", 32); err != nil {
		return nil, err
	}
	if s.page, err = hkdf.Key(sha256.New, raw, nil, "agentcap bank approval page", 32); err != nil {
		return nil, err
	}
	return s, nil
}

// checkAddr reports a -redis address that is not host:port.
func checkAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return errors.New("-redis must be host:port")
	}
	return nil
}
