package offsets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// FuzzScanOffsetPages: repair reads a damaged offsets.db page by page;
// whatever the bytes, it returns rows that hold their checksum, or none,
// and never panics.
func FuzzScanOffsetPages(f *testing.F) {
	page := make([]byte, 1024)
	copy(page, "SQLite format 3\x00")
	page[16], page[17] = 2, 0 // 512-byte pages
	page[512] = 0x0a
	page[515] = 1
	f.Add(page)
	f.Add([]byte("SQLite format 3\x00\x02\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		mem := vfs.NewMem()
		mem.MkdirAll("/d", 0o755)
		path := filepath.Join("/d", "offsets.db")
		f, err := mem.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
		f.Close()
		for k, row := range scanOffsetPages(mem, path) {
			if k != row.Key {
				t.Fatalf("row %v filed under %v", row.Key, k)
			}
		}
	})
}
