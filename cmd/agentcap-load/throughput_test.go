//go:build throughput

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentcap/agentcap/cmd/agentcap-load/internal/loadgen"
	"github.com/agentcap/agentcap/internal/procstat"
)

// TestThroughput measures one bank instance answering verified executes
// (check_balance and list_accounts in turn, each with a fresh agent JWT)
// in closed loop at concurrency 1, 16 and 64, in four modes: a resource
// server trusting a directory file (-directory: no provider, no audit
// trail), the bank as its own provider with every store in memory
// (-memory), on SQLite (-db) and on PostgreSQL with Redis (-postgres and
// -redis, when AGENTCAP_POSTGRES_DSN and AGENTCAP_REDIS_ADDR are set).
// The banks run side by side and the rounds alternate between them. Each cell is
// the median of THROUGHPUT_RUNS runs (default 3) of THROUGHPUT_SECONDS
// (default 10) after a warm-up; CPU time per request is the bank
// process's (from /proc) and the load generator's own (getrusage). The
// table goes to the test log and to THROUGHPUT_REPORT when set;
// THROUGHPUT_CONCURRENCY (such as 1,16) chooses other concurrency levels.
//
//	go test -tags throughput -run TestThroughput -timeout 60m -v ./cmd/agentcap-load/
func TestThroughput(t *testing.T) {
	runs := envInt(t, "THROUGHPUT_RUNS", 3)
	seconds := envInt(t, "THROUGHPUT_SECONDS", 10)
	concurrencies := []int{1, 16, 64}
	if v := os.Getenv("THROUGHPUT_CONCURRENCY"); v != "" {
		concurrencies = nil
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				t.Fatalf("THROUGHPUT_CONCURRENCY=%q: want concurrency levels such as 1,16", v)
			}
			concurrencies = append(concurrencies, n)
		}
	}
	testdata, err := filepath.Abs("../../examples/bank/testdata")
	if err != nil {
		t.Fatal(err)
	}
	directory := filepath.Join(testdata, "directory.example.json")
	type mode struct {
		name   string
		args   []string
		agents func(url string) ([]*loadgen.Agent, error)
	}
	register := func(url string) ([]*loadgen.Agent, error) {
		return loadgen.Register(context.Background(), loadgen.RegisterConfig{Target: url, Agents: 16})
	}
	modes := []mode{
		{"memory (-directory)", []string{"-directory", directory, "-limits", "off"}, func(url string) ([]*loadgen.Agent, error) {
			return loadgen.FromDirectory(directory, []loadgen.DirectoryAgent{{ID: "agt_alice", KeyFile: filepath.Join(testdata, "alice-agent.key.json")}},
				url, loadgen.DemoAccounts[0], "500")
		}},
		{"provider in memory (-memory)", []string{"-memory", "-limits", "off", "-dev-presence-code"}, register},
		{"SQLite (-db)", []string{"-db", "bank.db", "-limits", "off", "-dev-presence-code"}, register},
	}
	if dsn, addr := os.Getenv("AGENTCAP_POSTGRES_DSN"), os.Getenv("AGENTCAP_REDIS_ADDR"); dsn != "" && addr != "" {
		modes = append(modes, mode{"PostgreSQL + Redis", []string{"-postgres", freshSchema(t, dsn), "-redis", addr, "-limits", "off", "-dev-presence-code"}, register})
	} else {
		t.Log("AGENTCAP_POSTGRES_DSN or AGENTCAP_REDIS_ADDR unset: no PostgreSQL + Redis row")
	}
	table := []string{
		"| store | concurrency | requests/s | p50 ms | p99 ms | bank CPU µs/request | load CPU µs/request |",
		"|---|---|---|---|---|---|---|",
	}
	// Every mode's bank runs from the start, idle but for its turn: the
	// rounds alternate between the modes, so that what the machine does
	// meanwhile weighs on each alike.
	type bankRun struct {
		url    string
		proc   *os.Process
		agents []*loadgen.Agent
	}
	banks := make([]bankRun, len(modes))
	for i, m := range modes {
		url, proc := startBankProcess(t, m.args...)
		agents, err := m.agents(url)
		if err != nil {
			t.Fatalf("%s: agents: %v", m.name, err)
		}
		banks[i] = bankRun{url, proc, agents}
	}
	type sample struct{ rps, p50, p99, bank, load []float64 }
	samples := make(map[[2]int]*sample)
	run := func(i, conc int, d time.Duration) {
		b, name := banks[i], modes[i].name
		b0, l0 := procCPU(t, b.proc.Pid), selfCPU()
		s, err := loadgen.Run(context.Background(), loadgen.Options{Target: b.url, Agents: b.agents, Mix: loadgen.Mix{Read: 1},
			Concurrency: conc, Duration: d, Seed: uint64(conc)})
		if err != nil {
			t.Fatalf("%s at %d: %v", name, conc, err)
		}
		b1, l1 := procCPU(t, b.proc.Pid), selfCPU()
		if s.All.Unexpected != 0 {
			t.Fatalf("%s at %d: %d unexpected answers: %v", name, conc, s.All.Unexpected, s.Kinds[loadgen.KindRead].Samples)
		}
		n := float64(s.Requests)
		k := [2]int{i, conc}
		if samples[k] == nil {
			samples[k] = &sample{}
		}
		x := samples[k]
		x.rps, x.p50, x.p99 = append(x.rps, n/s.Seconds), append(x.p50, s.All.Latency.P50), append(x.p99, s.All.Latency.P99)
		x.bank, x.load = append(x.bank, (b1-b0).Seconds()*1e6/n), append(x.load, (l1-l0).Seconds()*1e6/n)
	}
	for i := range modes {
		run(i, 16, 3*time.Second) // warm-up
	}
	clear(samples)
	for range runs {
		for _, conc := range concurrencies {
			for i := range modes {
				run(i, conc, time.Duration(seconds)*time.Second)
			}
		}
	}
	for i, m := range modes {
		for _, conc := range concurrencies {
			x := samples[[2]int{i, conc}]
			line := fmt.Sprintf("| %s | %d | %.0f | %.1f | %.1f | %.0f | %.0f |", m.name, conc,
				median(x.rps), median(x.p50), median(x.p99), median(x.bank), median(x.load))
			t.Log(line)
			table = append(table, line)
		}
	}
	report := strings.Join(table, "\n") + "\n"
	t.Logf("\n%s", report)
	if path := os.Getenv("THROUGHPUT_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q is not a positive number", name, v)
	}
	return n
}

// freshSchema creates a schema of its own on dsn's server for this run,
// dropped at the end, and returns dsn with it as the search path.
func freshSchema(t *testing.T, dsn string) string {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	schema := fmt.Sprintf("throughput_%d", time.Now().UnixNano())
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pool.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE") })
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// procCPU is the user and system CPU time process pid has used.
func procCPU(t *testing.T, pid int) time.Duration {
	d, err := procstat.CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
