//go:build !unix

package jsonfile

import (
	"io/fs"
	"sync"
)

// Without flock, changes are serialized within the process only.
var processLock sync.Mutex

func lock(string) (func(), error) {
	processLock.Lock()
	return processLock.Unlock, nil
}

func stampOf(info fs.FileInfo) stamp {
	return stamp{exists: true, size: info.Size(), mtime: info.ModTime().UnixNano()}
}
