// Command agentcap-load drives a running capability location with Agent
// Auth traffic and summarises the answers in JSON.
//
// It acts as many agents: by default it registers them through the
// location's own provider, as the example bank in provider mode is, and
// approves them on its approval page through the development sign-in
// (half for Alice, whose agents send money from acc_123 to Bob's acc_456,
// half for Bob, whose agents send it back); with -directory it acts as
// the agents of a directory file whose private keys -key names:
//
//	agentcap-load -target http://127.0.0.1:8080 -agents 40 -rate 200 -duration 60s
//	agentcap-load -target http://127.0.0.1:8080 -concurrency 64 -duration 30s
//	agentcap-load -target http://127.0.0.1:8080 -directory examples/bank/testdata/directory.example.json \
//		-key agt_alice=examples/bank/testdata/alice-agent.key.json -rate 50
//
// With -rate it is open-loop: requests start at that rate whatever the
// answers' latency. Without, it is closed-loop: -concurrency requests are
// in flight at all times. Every request carries its own agent JWT, signed
// ahead of the request by a background signer (its CPU time is the
// load tool's, on the same machine when the target is local).
//
// The mix (-mix, weights) has reads (check_balance or list_accounts),
// transfers, batches of both reads, invalid JWTs (another audience, a
// broken signature, malformed) and replays of an accepted JWT. A
// transfer is a preview (POST capability/preview), whose confirmation
// token then confirms the execute, sent with an Idempotency-Key; an
// execute without an answer, or answered 5xx, 429 or 409
// idempotency_in_progress, is sent again with the same key and token, and
// those still pending when the timed phase ends are retried for up to
// -resolve. The summary counts answers by kind and status, with latency
// percentiles, and lists the acknowledged transfers.
//
// The target's own rate limits apply: run the bank with generous -limits
// (or -limits off) unless they are what is measured.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentcap/agentcap/cmd/agentcap-load/internal/loadgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// keysFlag is -key ID=FILE, repeatable.
type keysFlag []loadgen.DirectoryAgent

func (k *keysFlag) String() string { return fmt.Sprint(*k) }

func (k *keysFlag) Set(v string) error {
	id, file, ok := strings.Cut(v, "=")
	if !ok || id == "" || file == "" {
		return errors.New("want AGENT_ID=KEY_FILE")
	}
	*k = append(*k, loadgen.DirectoryAgent{ID: id, KeyFile: file})
	return nil
}

const usageText = `usage: agentcap-load -target URL [-agents N | -directory FILE -key ID=FILE...]
                     [-rate N | -concurrency N] [-duration D] [-mix WEIGHTS] [-out FILE] [-strict]

agentcap-load sends Agent Auth traffic to a capability location and
prints a JSON summary of the answers.

`

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentcap-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		target      = fs.String("target", "", "the location's issuer URL (required)")
		agents      = fs.Int("agents", 20, "agents to register through the target's provider")
		directory   = fs.String("directory", "", "act as the agents of this directory file instead of registering")
		keys        keysFlag
		source      = fs.String("source", "acc_123", "with -directory: the account agents read and debit")
		destination = fs.String("destination", "acc_456", "with -directory: the account agents credit")
		maxAmount   = fs.String("max-amount", "5", "the largest transfer a registered agent's grant allows, in USD")
		mixText     = fs.String("mix", "read=60,transfer=15,batch=10,invalid=10,replay=5", "weights of the kinds of request")
		rate        = fs.Int("rate", 0, "requests a second (open loop); 0 means closed loop at -concurrency")
		concurrency = fs.Int("concurrency", 16, "requests in flight (closed loop), or initial workers (open loop)")
		duration    = fs.Duration("duration", 30*time.Second, "length of the timed phase")
		timeout     = fs.Duration("timeout", 10*time.Second, "time-out of each request")
		resolve     = fs.Duration("resolve", 30*time.Second, "how long to keep retrying unanswered transfers after the timed phase")
		seed        = fs.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the request sequence")
		out         = fs.String("out", "", "write the JSON summary to this file instead of standard output")
		strict      = fs.Bool("strict", false, "exit 1 when any answer was unexpected or a transfer uncertain")
	)
	fs.Var(&keys, "key", "with -directory: AGENT_ID=FILE of an agent's private JWK (repeatable)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	mix, err := loadgen.ParseMix(*mixText)
	if err != nil || *target == "" || fs.NArg() > 0 || (*directory == "") != (len(keys) == 0) {
		if err == nil {
			err = errors.New("-target is required, -directory goes with at least one -key, and nothing else is an argument")
		}
		fmt.Fprintf(stderr, "agentcap-load: %v\n", err)
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var as []*loadgen.Agent
	if *directory != "" {
		as, err = loadgen.FromDirectory(*directory, keys, *target, loadgen.Account{Source: *source, Destination: *destination}, *maxAmount)
	} else {
		fmt.Fprintf(stderr, "registering %d agents at %s\n", *agents, *target)
		as, err = loadgen.Register(ctx, loadgen.RegisterConfig{Target: *target, Agents: *agents, MaxAmount: *maxAmount})
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentcap-load: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "sending for %v with %d agents\n", *duration, len(as))
	sum, err := loadgen.Run(ctx, loadgen.Options{
		Target: *target, Agents: as, Mix: mix, Rate: *rate, Concurrency: *concurrency,
		Duration: *duration, Timeout: *timeout, ResolveFor: *resolve, Seed: *seed,
	})
	if err != nil && sum == nil {
		fmt.Fprintf(stderr, "agentcap-load: %v\n", err)
		return 1
	}
	doc, _ := json.MarshalIndent(sum, "", "  ")
	doc = append(doc, '\n')
	if *out != "" {
		if werr := os.WriteFile(*out, doc, 0o644); werr != nil {
			fmt.Fprintf(stderr, "agentcap-load: %v\n", werr)
			return 1
		}
	} else {
		_, _ = stdout.Write(doc)
	}
	report(stderr, sum)
	if err != nil {
		fmt.Fprintf(stderr, "agentcap-load: %v\n", err)
		return 1
	}
	if *strict && (sum.All.Unexpected > 0 || sum.Transfers.Uncertain > 0) {
		return 1
	}
	return 0
}

// report prints the summary as a table.
func report(w io.Writer, s *loadgen.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "kind\trequests\tunexpected\tp50 ms\tp99 ms\tmax ms\tstatuses\n")
	kinds := make([]string, 0, len(s.Kinds))
	for k := range s.Kinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	line := func(name string, k *loadgen.KindStats) {
		var st []string
		for code, n := range k.Status {
			st = append(st, fmt.Sprintf("%s:%d", code, n))
		}
		slices.Sort(st)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%s\n", name, k.Requests, k.Unexpected, k.Latency.P50, k.Latency.P99, k.Latency.Max, strings.Join(st, " "))
	}
	for _, k := range kinds {
		line(k, s.Kinds[k])
	}
	line("all", s.All)
	_ = tw.Flush()
	t := s.Transfers
	fmt.Fprintf(w, "%.0f requests/s expected over %.1f s; transfers: %d started, %d acknowledged, %d refused, %d retries, %d uncertain, %d abandoned; %d token waits\n",
		s.Throughput, s.Seconds, t.Started, t.Acknowledged, sumValues(t.Refused), t.Retries, t.Uncertain, t.Abandoned, s.TokenWaits)
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
