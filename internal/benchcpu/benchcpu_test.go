package benchcpu_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/agentcap/agentcap/internal/benchcpu"
)

func TestProcessGrowsWithWork(t *testing.T) {
	before, ok := benchcpu.Process()
	if !ok {
		if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			t.Fatal("no process CPU time on a unix system")
		}
		t.Skip("process CPU time is not available on " + runtime.GOOS)
	}
	// Spin until the process has used measurably more CPU time; the
	// deadline only stops a broken clock from hanging the test.
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
		if after, _ := benchcpu.Process(); after > before {
			return
		}
	}
	t.Fatalf("process CPU time did not grow (%d)", x)
}

func BenchmarkReport(b *testing.B) {
	defer benchcpu.Report(b)()
	x := 0
	for i := 0; b.Loop(); i++ {
		x += i
	}
	_ = x
}
