package procstat_test

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/agentcap/agentcap/internal/procstat"
)

// The CPU time of this process grows while it computes, and a process
// that does not exist is an error.
func TestCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	before, err := procstat.CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		for i := range 1_000_000 {
			x += i
		}
		now, err := procstat.CPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now > before {
			return
		}
	}
	t.Fatalf("no CPU time counted after 10 s of work (%d)", x)
}

func TestCPUOfNoProcess(t *testing.T) {
	if _, err := procstat.CPU(-1); err == nil {
		t.Fatal("CPU(-1): no error")
	}
}
