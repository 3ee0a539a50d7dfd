//go:build !unix

package main

import (
	"fmt"
	"io"
	"os"
)

// lockStateDir holds the state directory's lock file open; without
// flock, nothing stops a second mirror on the same state.
func lockStateDir(path string) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mirror state: %w", err)
	}
	return f, nil
}
