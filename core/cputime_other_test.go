//go:build !unix

package core_test

import "time"

// processCPU is not available here; the benchmarks then report wall-clock
// time only.
func processCPU() (time.Duration, bool) { return 0, false }
