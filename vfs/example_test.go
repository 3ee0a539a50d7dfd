package vfs_test

import (
	"fmt"
	"os"

	"github.com/passbook-log/passbook/vfs"
)

// A power loss keeps only what was synced: the file contents after
// File.Sync, the directory entries after SyncDir.
func ExampleMemFS_Crash() {
	fsys := vfs.NewMem()
	fsys.MkdirAll("/log", 0o755)
	fsys.SyncDir("/") // make /log itself durable

	a, _ := fsys.OpenFile("/log/a", os.O_RDWR|os.O_CREATE, 0o644)
	fsys.SyncDir("/log") // make the entry /log/a durable
	a.Write([]byte("synced,"))
	a.Sync()
	a.Write([]byte(" lost"))

	b, _ := fsys.OpenFile("/log/b", os.O_RDWR|os.O_CREATE, 0o644)
	b.Write([]byte("synced, but its directory entry is not"))
	b.Sync()

	after := fsys.Crash(vfs.CrashOptions{})
	names, _ := after.ReadDir("/log")
	data, _ := after.FileBytes("/log/a")
	fmt.Println(names)
	fmt.Printf("%q\n", data)
	// Output:
	// [a]
	// "synced,"
}
