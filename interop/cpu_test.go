//go:build interop

package interop

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcap/agentcap/client"
	"github.com/agentcap/agentcap/internal/procstat"
)

// TestReferenceCPU measures the reference provider's CPU time per
// verified execute: an approved delegated agent of the Go client
// executes the provider's own echo capability in closed loop, with a new
// agent JWT each call, at concurrency 1 and 16, three rounds of
// AGENTCAP_INTEROP_CPU_SECONDS each; the harness process's user and
// system time (from /proc) over the requests answered, medians of the
// rounds, go to the test log. It is a measurement, run by hand, and
// skipped unless AGENTCAP_INTEROP_CPU_SECONDS is set:
//
//	AGENTCAP_INTEROP_CPU_SECONDS=8 bash interop/run.sh -run TestReferenceCPU -v
func TestReferenceCPU(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("AGENTCAP_INTEROP_CPU_SECONDS"))
	if secs <= 0 {
		t.Skip("AGENTCAP_INTEROP_CPU_SECONDS unset: a measurement run by hand")
	}
	harness, ref := referenceFromEnv(t)
	pid := harnessPID(t, harness)
	a, _, _ := connectDelegated(t, ref, client.Capabilities("echo")...)
	run := func(conc int, d time.Duration) (rps, cpuPerCall float64) {
		var n atomic.Int64
		var wg sync.WaitGroup
		c0 := processCPU(t, pid)
		start := time.Now()
		stop := start.Add(d)
		for range conc {
			wg.Go(func() {
				for time.Now().Before(stop) {
					if _, err := a.Execute(context.Background(), "echo", map[string]string{"message": "hello"}); err != nil {
						t.Error(err)
						return
					}
					n.Add(1)
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		c1 := processCPU(t, pid)
		if n.Load() == 0 {
			t.Fatal("no call answered")
		}
		return float64(n.Load()) / took.Seconds(), (c1 - c0).Seconds() * 1e6 / float64(n.Load())
	}
	run(4, 2*time.Second) // warm-up
	for _, conc := range []int{1, 16} {
		var rps, cpu []float64
		for range 3 {
			r, c := run(conc, time.Duration(secs)*time.Second)
			rps, cpu = append(rps, r), append(cpu, c)
		}
		slices.Sort(rps)
		slices.Sort(cpu)
		t.Logf("| reference provider (echo) | %d | %.0f | %.0f |", conc, rps[1], cpu[1])
	}
}

// harnessPID finds the harness process serving harnessURL: the node
// process whose command line runs harness.mjs on that port.
func harnessPID(t *testing.T, harnessURL string) int {
	t.Helper()
	u, err := url.Parse(harnessURL)
	if err != nil {
		t.Fatal(err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if i := slices.Index(args, "--port"); i >= 0 && i+1 < len(args) && args[i+1] == u.Port() &&
			slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, "harness.mjs") }) {
			pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no harness process on port %s", u.Port())
	return 0
}

func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	d, err := procstat.CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
