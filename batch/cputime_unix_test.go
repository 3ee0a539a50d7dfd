//go:build unix

package batch

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, user and system: a
// benchmark's cost that other programs on a shared machine do not
// inflate as they inflate its wall-clock time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
