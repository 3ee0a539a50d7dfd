//go:build !linux

package kafka

import (
	"errors"
	"os"
	"syscall"
)

// sendfile(2) is used on Linux only: elsewhere rawConnOf gives no
// descriptor, and records are read into memory.
const sendfileSupported = false

func sendFile(syscall.RawConn, *os.File, int64, int64) (int64, error) {
	return 0, errors.ErrUnsupported
}
