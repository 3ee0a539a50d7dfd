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

// TestMapped_BigBatchWritesWithWrite: a batch of 32 KiB or more moves a
// mapped segment to write(2): the file is cut back to its data (no space
// allocated past it any more), the appends before and after it are all
// there, and a reopen after a kill finds them.
func TestMapped_BigBatchWritesWithWrite(t *testing.T) {
	mem := vfs.NewMem()
	const dir = "/p"
	l, err := Open(dir, &Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	seg := dir + "/" + segmentName(0, ".log")
	small := func(i int) {
		t.Helper()
		if _, err := l.Append([]batch.Record{{Value: []byte{byte(i)}}}, InOS); err != nil {
			t.Fatal(err)
		}
	}
	small(0)
	if n := fileLen(t, mem, seg); n <= l.Size() {
		t.Fatalf("mapped segment of %d bytes holds %d: want space allocated past the data", n, l.Size())
	}
	big := make([]batch.Record, 64)
	for i := range big {
		big[i].Value = make([]byte, 1024)
	}
	if _, err := l.Append(big, InOS); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		small(i)
		if n := fileLen(t, mem, seg); n != l.Size() {
			t.Fatalf("after the big batch and %d small ones the file has %d bytes, the data %d: want write(2), the file its data", i+1, n, l.Size())
		}
	}
	head := l.Head()
	after := killed(t, mem) // what a SIGKILL leaves; l then closes on the old files
	l.Close()
	l2, err := Open(dir, &Options{FS: after})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.Head() != head || l2.Recovery().TornBytes != 0 {
		t.Fatalf("reopened after a kill: head %d, torn %d bytes; want %d, 0", l2.Head(), l2.Recovery().TornBytes, head)
	}
}
