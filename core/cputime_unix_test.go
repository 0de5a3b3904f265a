//go:build unix

package core_test

import (
	"syscall"
	"time"
)

// processCPU returns the user and system CPU time the whole process has
// used so far, garbage collection on other threads included. On a shared
// machine it is a steadier measure of work than wall-clock time, which
// also counts the time other processes hold the CPU.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
