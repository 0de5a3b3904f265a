// Package procstat reads what Linux reports of a process in /proc, for
// the measurements of the load and interop tests.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is the user and system CPU time process pid has used, from
// /proc/PID/stat.
func CPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// After the command name, in parentheses: utime and stime are the
	// 12th and 13th fields, in clock ticks (100 a second on Linux).
	end := strings.LastIndexByte(string(raw), ')')
	if end < 0 {
		return 0, fmt.Errorf("procstat: /proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(raw[end+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("procstat: /proc/%d/stat: %d fields after the command name", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("procstat: /proc/%d/stat: utime %q, stime %q", pid, fields[11], fields[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
