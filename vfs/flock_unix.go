//go:build unix

package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// flock takes an exclusive, non-blocking flock on f. held reports that
// someone else has it.
func flock(f *os.File) (held bool, err error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return true, nil
		}
		return false, err
	}
}
