// Command bank is a small bank whose capabilities agents list, describe
// and execute with agent JWTs.
//
// Without -directory it is both the Agent Auth provider and the resource
// server: agents register with it, users approve them on its approval
// page (signing in through a development login offering Alice and Bob,
// without password), and hosts, agents, grants and the audit trail (shown
// on {issuer}/activity) are kept in the SQLite database named by -db:
//
//	go run ./examples/bank [-addr 127.0.0.1:8080] [-issuer URL] [-db bank.db]
//
// With -memory instead of -db, they are all kept in memory and lost at
// exit, with confirmation tokens, jobs and idempotency keys: the same
// bank with nothing written to disk, to try it or to measure what its
// stores cost.
//
// The approval page is {issuer}/approve and the development login /login.
// Every transfer must be confirmed (a token from its preview); one that
// debits more than 1000 in the source account's currency waits for the
// account's owner to confirm it on the approval page, and the agent
// polls {issuer}/agent/confirmation for the token. In -directory mode
// nobody can be asked, and such transfers are refused.
//
// Several instances serve one bank behind a load balancer, with -issuer
// the balancer's URL, when they share the provider's records, the
// accounts and ledger and the jobs in PostgreSQL, the replay cache, rate
// limits, idempotency keys and confirmation tokens in Redis (tokens in
// PostgreSQL without -redis), and the keys of the sign-in
// cookies and approval page tokens in a secret file:
//
//	go run ./examples/bank -addr 127.0.0.1:8081 -issuer https://bank.example \
//		-postgres postgres://bank@db/bank -redis redis:6379 -secret-file /etc/bank/secret \
//		-forwarded-for -limits agent=120,host=600,user=1200,ip=300
//
// -forwarded-for takes the client address for per-address limits and
// audit records from the last X-Forwarded-For entry, which only a trusted
// proxy may set. An agent revoked through any instance is refused by
// every instance from its next request: each reads agents from
// PostgreSQL for every request.
// Each instance holds at most 16 PostgreSQL connections (unless the DSN
// sets pool_max_conns). When PostgreSQL or Redis cannot be reached,
// agents, JWTs, limits or the ledger cannot be checked, and requests are
// refused with 503 temporarily_unavailable and Retry-After, never let
// through. A Redis that restarts without persistence forgets the replay
// cache, idempotency keys and confirmation tokens: give it appendonly. A
// Redis that evicts keys when full forgets them too: the bank refuses to
// start unless its maxmemory-policy is noeviction.
//
// With -directory it is a resource server only, trusting the hosts and
// agents of a directory file:
//
//	go run ./examples/bank -addr 127.0.0.1:8080 -issuer http://127.0.0.1:8080 -directory agents.json
//
// There it limits each agent to 120 requests a minute and each host's
// agents together to 600 (-limits agent=N,host=N, or -limits off).
//
// Either way it serves, relative to the issuer,
//
//	GET  /capability/list
//	GET  /capability/describe?name=
//	POST /capability/execute
//	POST /capability/batch-execute
//	POST /capability/preview       (a transfer's preview and its confirmation token)
//	GET  /capability/status?id=    (and DELETE: poll or cancel a job)
//
// and GET /.well-known/agent-configuration at the issuer's origin. Agent
// JWTs must have an aud of {issuer}/capability/execute or {issuer}.
//
// It also serves the same capabilities to MCP clients at {issuer}/mcp
// (Streamable HTTP), for agents that sign a fresh agent JWT with aud
// {issuer}/mcp for every request, with its protected resource metadata
// at /.well-known/oauth-protected-resource.
//
// The directory file lists the hosts and agents the bank trusts, with
// their keys (inline JWKs or JWKS URLs) and grants, in the format of
// agentauth.LoadDirectoryFile:
//
//	{"hosts":  [{"id": "hst_1", "public_key": {"kty": "OKP", "crv": "Ed25519", "x": "..."},
//	             "user_id": "user_alice", "status": "active"}],
//	 "agents": [{"id": "agt_1", "host_id": "hst_1", "mode": "delegated", "status": "active",
//	             "public_key": {...},
//	             "agent_capability_grants": [
//	               {"capability": "check_balance", "status": "active"},
//	               {"capability": "transfer_money", "status": "active",
//	                "constraints": {"destination_account": "acc_456", "amount": {"max": 500}, "currency": "USD"}}]}]}
//
// Unknown members and malformed records stop the bank at start. JWKS URLs
// on loopback addresses are fetched only with -dev-allow-loopback-jwks.
//
// testdata/directory.example.json is a directory to try the bank with;
// its demo keys are committed next to it, and cmd/devtoken signs agent
// JWTs with them (see the examples' README).
//
// Each execution is logged on one line (agent, capability, outcome,
// duration); arguments and results never are. The hidden causes of
// internal errors, which can quote argument values (an account id in a
// ledger error), are logged only with -debug.
package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/provider"
	"github.com/agentcap/agentcap/agentauth/ratelimit"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/examples/bank/bank"
	"github.com/agentcap/agentcap/httpx"
	"github.com/agentcap/agentcap/sqlstore"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// config is the command line.
type config struct {
	addr              string
	issuer            string
	directory         string
	db                string
	memory            bool
	allowLoopbackJWKS bool
	debug             bool
	devPresenceCode   bool
	postgres          string
	redis             string
	secretFile        string
	limits            limitsFlag
	forwardedFor      bool
	oauthRegistration bool
	oauthAccessLife   time.Duration
	fetchRoots        string
}

const usageText = `usage: bank [-addr HOST:PORT] [-issuer URL] [-db FILE | -postgres DSN | -memory] [-redis HOST:PORT]
            [-secret-file FILE] [-limits LIMITS] [-forwarded-for] [-oauth-dynamic-registration]
            [-oauth-access-lifetime DURATION]
            [-dev-allow-loopback-jwks] [-dev-fetch-roots FILE] [-dev-presence-code] [-debug]
       bank -directory FILE [-addr HOST:PORT] [-issuer URL] [-limits agent=N,host=N] [-dev-allow-loopback-jwks] [-debug]

bank serves the example bank's capabilities to Agent Auth agents. Without
-directory it is also their Agent Auth provider, storing hosts, agents and
grants in the SQLite database -db, with a development sign-in (no
password) for its approval page; -memory keeps them in memory instead,
lost at exit, with the audit trail, tokens, jobs and keys. Approving transfers, and confirming big
ones, takes the user's passkey, which browsers offer only on a host name
(hence the default issuer http://localhost:8080). MCP hosts connect to
its /mcp endpoint with OAuth: the bank is their authorization server,
and its users consent per capability on the same approval page.

Several instances serve one bank behind a load balancer when they share
-postgres (hosts, agents, grants, accounts, jobs), -redis (replay cache,
rate limits, idempotency keys, confirmation tokens) and -secret-file
(sign-in and approval page keys), with -forwarded-for when the balancer
adds X-Forwarded-For.

With -directory, the bank limits each agent's requests, and those of a
host's agents together, to 120 and 600 a minute; -limits agent=N,host=N
sets other limits, and -limits off none.

`

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bank", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "address to listen on")
	fs.StringVar(&c.issuer, "issuer", "", "issuer URL; capabilities are served at its path (default http://localhost:PORT on a loopback -addr, since browsers offer passkeys only on a host name, else http:// + addr)")
	fs.StringVar(&c.directory, "directory", "", "JSON file of the hosts and agents the bank trusts; without it the bank is its own provider")
	fs.StringVar(&c.db, "db", "bank.db", "SQLite database of the provider's hosts, agents and grants (without -directory)")
	fs.BoolVar(&c.memory, "memory", false, "keep the provider's records, the audit trail, confirmation tokens, jobs and idempotency keys in memory instead of -db, all lost at exit (for trying the bank and measuring it)")
	fs.BoolVar(&c.allowLoopbackJWKS, "dev-allow-loopback-jwks", false, "fetch agent JWKS URLs and OAuth client metadata documents on loopback addresses, JWKS over plain http too (development only)")
	fs.StringVar(&c.postgres, "postgres", "", "PostgreSQL DSN for the provider's records, the accounts and ledger, jobs and (without -redis) idempotency keys and confirmation tokens, instead of -db (provider mode)")
	fs.StringVar(&c.redis, "redis", "", "Redis address (host:port) for the replay cache, rate limits, idempotency keys and confirmation tokens, shared by every instance (provider mode)")
	fs.StringVar(&c.secretFile, "secret-file", "", "file of at least 32 secret bytes that every instance shares, keying sign-in cookies and approval page tokens (default: random per process)")
	fs.Var(&c.limits, "limits", "requests a minute per agent, host, user and client address, as agent=N,host=N,user=N,ip=N (any subset; the rest keep the provider's defaults), or off")
	fs.BoolVar(&c.forwardedFor, "forwarded-for", false, "take the client address from the last X-Forwarded-For entry, as a trusted reverse proxy sets it")
	fs.BoolVar(&c.oauthRegistration, "oauth-dynamic-registration", false, "serve OAuth Dynamic Client Registration for MCP hosts that cannot publish a client metadata document (provider mode)")
	fs.DurationVar(&c.oauthAccessLife, "oauth-access-lifetime", 10*time.Minute, "how long an OAuth access token of an MCP host is good; its refresh token gets it another (provider mode)")
	fs.StringVar(&c.fetchRoots, "dev-fetch-roots", "", "PEM file of certificates to trust instead of the system's when fetching agent JWKS and OAuth client metadata documents (development and tests only)")
	fs.BoolVar(&c.devPresenceCode, "dev-presence-code", false, "let the approval page take the request's code typed again instead of a passkey, for transfers (development and automated tests only: it proves nothing)")
	fs.BoolVar(&c.debug, "debug", false, "also log the hidden causes of internal errors, which may quote argument values (development only)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	// The flag package reports its own parse errors, with the usage.
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	bad := func(format string, args ...any) (config, error) {
		fmt.Fprintf(stderr, "bank: "+format+"\n\n", args...)
		fs.Usage()
		return c, errUsage
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	dbSet := false
	fs.Visit(func(f *flag.Flag) { dbSet = dbSet || f.Name == "db" })
	if c.memory && (c.directory != "" || c.postgres != "" || c.redis != "" || dbSet) {
		return bad("-memory keeps one provider instance's stores in memory: it does not go with -directory, -db, -postgres or -redis")
	}
	if c.directory == "" && c.db == "" && c.postgres == "" {
		return bad("-db must name a file when the bank is its own provider (no -directory) without -postgres")
	}
	if c.directory != "" && (c.postgres != "" || c.redis != "" || c.secretFile != "" || c.forwardedFor || c.devPresenceCode || c.oauthRegistration) {
		return bad("-postgres, -redis, -secret-file, -forwarded-for, -dev-presence-code and -oauth-dynamic-registration configure the provider: they do not go with -directory")
	}
	if c.directory != "" && (c.limits.user != (ratelimit.Limit{}) || c.limits.ip != (ratelimit.Limit{})) {
		return bad("with -directory, -limits takes agent= and host= only")
	}
	if c.oauthAccessLife < time.Second {
		return bad("-oauth-access-lifetime must be at least a second")
	}
	if c.redis != "" {
		if err := checkAddr(c.redis); err != nil {
			return bad("%v", err)
		}
	}
	if c.issuer == "" {
		c.issuer = "http://" + c.addr
		// Passkeys need a host name: a bank on a loopback address names
		// itself localhost, where browsers offer them.
		if host, port, err := net.SplitHostPort(c.addr); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
				c.issuer = "http://localhost:" + port
			}
		}
	}
	c.issuer = strings.TrimRight(c.issuer, "/")
	u, err := url.Parse(c.issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return bad("-issuer %q must be an absolute http(s) URL without credentials, query or fragment", c.issuer)
	}
	return c, nil
}

// errUsage reports a command line that was refused after the usage was
// printed.
var errUsage = errors.New("bank: bad command line")

// run is main without the exit, so that its failures are plain returns.
func run(args []string, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{ReplaceAttr: redactAttr}))
	// Libraries that log through the default logger (the OAuth server's
	// protocol package reports refused requests there) write to the
	// bank's log too.
	slog.SetDefault(logger)
	// The causes of internal errors go to their own logger: they are
	// what a caller is never told, and may quote the arguments of the
	// call that failed, which the execution log must not hold.
	debug := slog.New(slog.DiscardHandler)
	if cfg.debug {
		debug = logger.With(slog.Bool("debug", true))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var srv *http.Server
	var closeStore func() error
	if cfg.directory != "" {
		srv, closeStore, err = newServer(ctx, cfg, logger, debug)
	} else {
		srv, closeStore, err = newProviderServer(ctx, cfg, logger, debug)
	}
	if closeStore != nil {
		defer func() {
			if err := closeStore(); err != nil {
				fmt.Fprintf(stderr, "bank: closing the stores: %v\n", err)
			}
		}()
	}
	if err != nil {
		fmt.Fprintf(stderr, "bank: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		fmt.Fprintf(stderr, "bank: %v\n", err)
		return 1
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("issuer", cfg.issuer))
	if cfg.directory == "" {
		where := slog.String("db", cfg.db)
		switch {
		case cfg.postgres != "":
			where = slog.String("store", "postgres")
		case cfg.memory:
			where = slog.String("store", "memory")
		}
		logger.Info("agents are approved at "+cfg.issuer+provider.PathApprove, where)
		logger.Info("development sign-in without password at " + devLoginURL(cfg.issuer) + ": sign in as Alice (user_alice, accounts acc_123 and acc_124) or Bob (user_bob)")
	}

	select {
	case err := <-served:
		fmt.Fprintf(stderr, "bank: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintf(stderr, "bank: shutdown: %v\n", err)
		return 1
	}
	return 0
}

// newServer wires the bank: directory, verifier, executor, handler and
// discovery document, with jobs and idempotency keys in memory. logger
// receives one line per execution; debug receives the hidden causes of
// internal errors. The returned function stops the job runner.
func newServer(ctx context.Context, cfg config, logger, debug *slog.Logger) (*http.Server, func() error, error) {
	dir, err := agentauth.LoadDirectoryFile(cfg.directory)
	if err != nil {
		return nil, nil, err
	}
	location := cfg.issuer + "/" + agentcap.RouteExecute
	vc := agentauth.VerifierConfig{
		Directory: dir,
		Audiences: []string{location, cfg.issuer},
		KeyFetch:  agentauth.FetchPolicy{AllowLoopback: cfg.allowLoopbackJWKS},
	}
	// No provider limits this resource server's agents, so the bank
	// does (-limits, 120 and 600 a minute unless set; off turns it off),
	// each token counted before its jti is recorded, on execute and MCP
	// together.
	limiter := directoryLimiter(cfg)
	limitVerifier(&vc, limiter, cfg)
	sessions, err := agentauth.NewVerifier(vc)
	if err != nil {
		return nil, nil, err
	}
	// Confirmation tokens live in memory: a directory bank is one
	// instance. With no provider to ask the account's owner, transfers
	// above bank.HumanThreshold are refused.
	exec, err := bank.NewExecutor(bank.NewStore(), bank.Options{Location: location, Hooks: []core.Hook{bank.ExecutionLog(logger)}})
	if err != nil {
		return nil, nil, err
	}
	hosts, err := agentauth.NewHostVerifier(agentauth.HostVerifierConfig{
		Directory: dir,
		Audiences: []string{cfg.issuer},
		KeyFetch:  agentauth.FetchPolicy{AllowLoopback: cfg.allowLoopbackJWKS},
	})
	if err != nil {
		return nil, nil, err
	}
	verifier, err := directoryVerifier(sessions, hosts, cfg.issuer, debug)
	if err != nil {
		return nil, nil, err
	}
	lr, err := bank.NewLongRunning(ctx, bank.Stores{})
	if err != nil {
		return nil, nil, err
	}
	hc := httpx.Config{Verifier: verifier, Logger: debug}
	lr.Apply(&hc, cfg.issuer)
	handler, err := httpx.New(exec, hc)
	if err != nil {
		return nil, lr.Close, err
	}
	mcpServer, err := directoryMCP(dir, exec, cfg, limiter, debug)
	if err != nil {
		return nil, lr.Close, err
	}
	discovery, err := agentauth.NewDiscoveryEndpoint(agentcap.Discovery{
		ProviderName:    "bank",
		Description:     "Example bank: accounts, balances, transfers and exchange rates",
		Issuer:          cfg.issuer,
		DefaultLocation: location,
		Endpoints:       agentauth.LocationEndpoints(""),
	})
	if err != nil {
		return nil, lr.Close, err
	}

	mux := http.NewServeMux()
	mux.Handle(agentcap.DiscoveryPath, discovery)
	mountMCP(mux, cfg.issuer, mcpServer)
	u, _ := url.Parse(cfg.issuer) // checked by parseFlags
	if prefix := strings.TrimRight(u.Path, "/"); prefix != "" {
		mux.Handle(prefix+"/", http.StripPrefix(prefix, handler))
	} else {
		mux.Handle("/", handler)
	}
	return newHTTPServer(mux, logger), lr.Close, nil
}

// devLoginPath is where the development sign-in is served, at the
// issuer's origin: the approval page sends users there.
const devLoginPath = "/login"

// devLoginURL is the development sign-in's URL for issuer, which
// parseFlags checked.
func devLoginURL(issuer string) string {
	u, _ := url.Parse(issuer)
	return u.Scheme + "://" + u.Host + devLoginPath
}

// lifetimes are the provider's agent clocks: an agent idle for a day, or
// active for a week since it was last approved, must be reactivated; one
// is revoked a month after it was created; an approval left pending for
// an hour is dropped.
var lifetimes = store.Policy{
	SessionTTL:       24 * time.Hour,
	MaxLifetime:      7 * 24 * time.Hour,
	AbsoluteLifetime: 30 * 24 * time.Hour,
	PendingTTL:       time.Hour,
}

// newProviderServer wires the bank as its own Agent Auth provider: the
// SQLite store, the provider with the development sign-in, and the
// capability location verifying agent JWTs against the provider's store,
// replay cache and rate limits. It starts the sweeper of expired records,
// which ends with ctx. The returned function closes the store; it is
// non-nil once the store is open, even when err is not.
func newProviderServer(ctx context.Context, cfg config, logger, debug *slog.Logger) (*http.Server, func() error, error) {
	sh, err := openShared(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	var (
		db     *sqlstore.DB
		ledger bank.Ledger = bank.NewStore()
	)
	if cfg.memory {
		return newServerOn(ctx, cfg, sh, nil, store.NewMemory(nil), audit.NewMemory(nil), ledger, logger, debug)
	}
	if sh.pool != nil {
		// Every instance on the database sees the same records, moves
		// the same money and polls the same jobs.
		if db, err = sqlstore.NewPostgres(ctx, sh.pool); err != nil {
			return nil, sh.close, err
		}
		if sh.rs != nil {
			// The instances keep the agents and hosts they read for as
			// long as none of them has written since.
			db.SetChanges(sh.rs.Changes())
		}
		if ledger, err = bank.NewPGLedger(ctx, sh.pool); err != nil {
			return nil, func() error { return errors.Join(db.Close(), sh.close()) }, err
		}
	} else if db, err = sqlstore.OpenSQLite(ctx, cfg.db); err != nil {
		return nil, sh.close, err
	}
	// The provider's records, the audit trail, confirmation tokens, jobs
	// and idempotency keys share the one database.
	return newServerOn(ctx, cfg, sh, db, db.Provider(), openAudit(ctx, db, logger), ledger, logger, debug)
}

// newServerOn is newProviderServer on its stores: db (nil for -memory,
// which keeps tokens, jobs and keys in memory too), the provider's
// records st and the audit trail.
func newServerOn(ctx context.Context, cfg config, sh *shared, db *sqlstore.DB, st store.Store, trail audit.Store,
	ledger bank.Ledger, logger, debug *slog.Logger) (*http.Server, func() error, error) {
	closeStores := sh.close
	if db != nil {
		closeStores = func() error { return errors.Join(db.Close(), sh.close()) }
	}
	stores := bank.Stores{SQL: db, Redis: sh.rs}
	confirmer, err := bank.NewConfirmer(ctx, stores)
	if err != nil {
		return nil, closeStores, err
	}
	reg, err := bank.NewRegistry()
	if err != nil {
		return nil, closeStores, err
	}
	dev := provider.NewDevLogin(
		provider.User{ID: "user_alice", Name: "Alice"},
		provider.User{ID: "user_bob", Name: "Bob"})
	var pageSecret []byte
	if cfg.secretFile != "" {
		sec, err := readSecrets(cfg.secretFile)
		if err != nil {
			return nil, closeStores, err
		}
		dev = dev.WithSecret(sec.signIn)
		pageSecret = sec.page
	}
	fetch, err := fetchPolicy(cfg)
	if err != nil {
		return nil, closeStores, err
	}
	pcfg := withBankPolicy(provider.Config{
		Issuer:          cfg.issuer,
		ProviderName:    "bank",
		Description:     "Example bank: accounts, balances, transfers and exchange rates",
		Store:           st,
		Registry:        reg,
		SignedInUser:    dev.SignedInUser,
		SignInURL:       devLoginPath,
		PageSecret:      pageSecret,
		DevPresenceCode: cfg.devPresenceCode,
		Lifetimes:       lifetimes,
		KeyFetch:        fetch,
		Endpoints:       []string{mcpResource(cfg.issuer)},
		// MCP hosts connect to /mcp with OAuth, the bank's provider
		// being their authorization server.
		OAuth: provider.OAuthConfig{
			Enabled:             true,
			DynamicRegistration: cfg.oauthRegistration,
			MetadataFetch:       fetch,
			AccessTokenLifetime: cfg.oauthAccessLife,
		},
		Audit:     trail,
		Confirmer: confirmer,
		// Capabilities that act for a user refuse agents without one
		// before their grants are looked at; the public ones are listed
		// to anyone.
		Authorize:               bank.Authorize,
		AllowAnonymousDiscovery: true,
		Logger:                  debug,
	}, logger)
	if err := sh.apply(ctx, &pcfg, cfg); err != nil {
		return nil, closeStores, err
	}
	prov, err := provider.New(pcfg)
	if err != nil {
		return nil, closeStores, err
	}
	// Transfers above bank.HumanThreshold wait for the account's owner,
	// who confirms them on the approval page.
	exec, err := bank.NewExecutor(ledger, bank.Options{
		Registry:  reg,
		Audit:     trail,
		Confirmer: confirmer,
		Human:     prov.HumanConfirmer(),
		Location:  cfg.issuer + "/" + agentcap.RouteExecute,
		Hooks:     []core.Hook{bank.ExecutionLog(logger)},
	})
	if err != nil {
		return nil, closeStores, err
	}
	// Jobs and idempotency keys share the provider's database (or Redis),
	// so finished statements and answered keys survive a restart.
	lr, err := bank.NewLongRunning(ctx, stores)
	if err != nil {
		return nil, closeStores, err
	}
	closeAll := func() error { return errors.Join(lr.Close(), closeStores()) }
	// The provider verifies the agents of its capability locations.
	hc := httpx.Config{Verifier: prov, Logger: debug}
	lr.Apply(&hc, cfg.issuer)
	loc, err := httpx.New(exec, hc)
	if err != nil {
		return nil, closeAll, err
	}
	mcpVerifier, err := prov.EndpointVerifier(mcpResource(cfg.issuer))
	if err != nil {
		return nil, closeAll, err
	}
	mcpServer, err := newMCP(exec, cfg.issuer, mcpVerifier, true, debug)
	if err != nil {
		return nil, closeAll, err
	}
	go prov.RunSweeper(ctx, time.Minute)

	mux := http.NewServeMux()
	mux.Handle(devLoginPath, dev)
	mountMCP(mux, cfg.issuer, mcpServer)
	var location http.Handler = loc
	if cfg.forwardedFor {
		location = forwardedLocation(loc)
	}
	mux.Handle("/", prov.Handler(location))
	return newHTTPServer(mux, logger), closeAll, nil
}

// newHTTPServer returns the bank's server for h: httpx.NewServer's
// time-outs, and a write time-out of a minute as well, since the bank's
// answers are quick and its statements are jobs that clients poll.
func newHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	srv := httpx.NewServer(h)
	srv.WriteTimeout = 60 * time.Second
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	return srv
}

// credentialsInURL finds the password of a URL's user information, as
// database drivers print it in their errors.
var credentialsInURL = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s@/]*@`)

// redactAttr keeps passwords that appear in URLs inside error messages
// out of the log.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindString {
		if s := a.Value.String(); strings.Contains(s, "://") {
			a.Value = slog.StringValue(credentialsInURL.ReplaceAllString(s, "${1}REDACTED@"))
		}
	}
	return a
}

// fetchPolicy is how the provider fetches agent JWKS and OAuth client
// metadata documents: public addresses only, unless the development
// flags allow loopback ones and trust other roots.
func fetchPolicy(cfg config) (agentauth.FetchPolicy, error) {
	fp := agentauth.FetchPolicy{AllowLoopback: cfg.allowLoopbackJWKS}
	if cfg.fetchRoots == "" {
		return fp, nil
	}
	pem, err := os.ReadFile(cfg.fetchRoots)
	if err != nil {
		return fp, fmt.Errorf("bank: -dev-fetch-roots: %w", err)
	}
	fp.RootCAs = x509.NewCertPool()
	if !fp.RootCAs.AppendCertsFromPEM(pem) {
		return fp, fmt.Errorf("bank: -dev-fetch-roots: %s holds no PEM certificate", cfg.fetchRoots)
	}
	return fp, nil
}
