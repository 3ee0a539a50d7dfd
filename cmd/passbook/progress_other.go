//go:build !unix

package main

import (
	"os"

	"github.com/vbauerster/mpb/v8"
)

// termOption leaves mpb its own console writer off Unix.
func termOption(f *os.File) mpb.ContainerOption { return mpb.WithOutput(f) }
