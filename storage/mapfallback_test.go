package storage

import (
	"io/fs"
	"syscall"
	"testing"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// noMapFS is a file system that can map in principle but is refused
// every mapping, as a process is once vm.max_map_count or RLIMIT_AS is
// reached (ENOMEM).
type noMapFS struct {
	vfs.MapFS
	tries int
}

func (f *noMapFS) MapFile(name string, _ int64) (vfs.MappedFile, error) {
	f.tries++
	return nil, &fs.PathError{Op: "mmap", Path: name, Err: syscall.ENOMEM}
}

// TestMapped_RefusedMappingFallsBackToWrite: a segment the process
// cannot map is written with write(2); the appends succeed, and the log
// reopens with all of them.
func TestMapped_RefusedMappingFallsBackToWrite(t *testing.T) {
	mem := vfs.NewMem()
	fsys := &noMapFS{MapFS: mem}
	const dir = "/p"
	l, err := Open(dir, &Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := l.Append([]batch.Record{{Value: []byte{byte(i)}}}, InOS); err != nil {
			t.Fatalf("append %d with the mapping refused: %v", i, err)
		}
	}
	if fsys.tries != 1 {
		t.Errorf("%d mapping attempts for one segment, want 1 (the segment stays on write(2))", fsys.tries)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, &Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Head() != 100 {
		t.Fatalf("head %d after reopen, want 100", l.Head())
	}
	n := 0
	for r, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != int64(n) || len(r.Value) != 1 || r.Value[0] != byte(n) {
			t.Fatalf("record %d: offset %d value %v", n, r.Offset, r.Value)
		}
		n++
		if n == 100 {
			break
		}
	}
	if n != 100 {
		t.Fatalf("read %d records, want 100", n)
	}
}
