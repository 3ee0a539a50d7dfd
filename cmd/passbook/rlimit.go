//go:build unix

package main

import (
	"fmt"
	"syscall"

	"github.com/passbook-log/passbook/internal/thousands"
)

// fileLimit is the process's RLIMIT_NOFILE after raiseFileLimit, for the
// debug log (soft 0: unknown).
var fileLimit struct {
	soft, hard uint64
	err        error
}

// raiseFileLimit raises the soft limit on open files to the hard one, at
// start: the soft limit (often 1,024) is a default for programs that do
// not expect many files; a data directory of many partitions wants more.
// (Go's runtime does the same since Go 1.19, for the process but not for
// the programs it starts; doing it here says so in the log and does not
// depend on that.) Segment files are also bounded by
// --max-open-segment-files, whatever the limit.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fileLimit.err = fmt.Errorf("getrlimit: %w", err)
		return
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			fileLimit.err = fmt.Errorf("setrlimit to %d: %w", lim.Max, err)
		} else {
			lim = want
		}
	}
	fileLimit.soft, fileLimit.hard = uint64(lim.Cur), uint64(lim.Max)
}

// logFileLimit logs the limit at debug level.
func logFileLimit(debug func(msg string, args ...any)) {
	if fileLimit.err != nil {
		debug("could not raise the open file limit", "err", fileLimit.err)
		return
	}
	debug("open file limit", "soft", thousands.Int(fileLimit.soft), "hard", thousands.Int(fileLimit.hard))
}
