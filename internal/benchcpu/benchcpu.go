// Package benchcpu reports the process CPU time of benchmarks.
//
// On a shared machine wall-clock time also counts the time other
// processes hold the CPU, so the project's benchmarks report CPU time per
// operation beside ns/op, as the cpu-ns/op metric.
package benchcpu

import (
	"testing"
	"time"
)

// Report starts measuring; the function it returns, deferred, reports
// the process CPU time used since then per operation as cpu-ns/op. Call
// it after the benchmark's setup (after b.ResetTimer). It reports nothing
// where process CPU time is not available.
func Report(b *testing.B) func() {
	cpu0, ok := Process()
	return func() {
		if cpu1, ok1 := Process(); ok && ok1 && b.N > 0 {
			b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
		}
	}
}

// Process returns the user and system CPU time the whole process has used
// so far, garbage collection on other threads included, and whether the
// platform can tell.
func Process() (time.Duration, bool) { return processCPU() }
