//go:build !linux

package offsets

// walVFS maps the WAL on Linux only (walmap_linux.go); elsewhere the
// store opens its file with the OS VFS.
type walVFS struct{}

func newWALVFS(path string) (string, *walVFS, error) { return path, nil, nil }

func (v *walVFS) share()      {}
func (v *walVFS) unregister() {}
