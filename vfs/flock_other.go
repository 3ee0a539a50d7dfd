//go:build !unix

package vfs

import (
	"errors"
	"os"
)

func flock(*os.File) (held bool, err error) { return false, errors.ErrUnsupported }
