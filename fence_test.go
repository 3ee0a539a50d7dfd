package passbook_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

// damagedDataDir makes a data directory with a healthy topic "good" and
// a topic "bad" of two partitions, and deletes a middle segment file of
// bad's partition 1, as an operator's slip or a failing disk would.
func damagedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	good, err := db.CreateTopic("good", passbook.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := db.CreateTopic("bad", passbook.TopicConfig{Partitions: 2, SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		rec := []passbook.Record{{Value: fmt.Appendf(nil, "record %d", i)}}
		for _, w := range []struct {
			t *passbook.Topic
			p int32
		}{{good, 0}, {bad, 0}, {bad, 1}} {
			if _, err := w.t.AppendTo(w.p, rec, storage.InOS); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "topics", "bad", "1", "*.log"))
	if len(segs) < 3 {
		t.Fatalf("%d segments in bad/1, want 3 or more", len(segs))
	}
	slices.Sort(segs)
	if err := os.Remove(segs[1]); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDB_DamagedPartitionFenced: one damaged partition does not stop the
// data directory. Open serves the healthy partitions, fences the damaged
// one (ErrFenced for appends and reads, listed by PartitionProblems and
// Describe), Verify names it, and after Repair the next Open serves it.
func TestDB_DamagedPartitionFenced(t *testing.T) {
	dir := damagedDataDir(t)
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatalf("Open with one damaged partition: %v", err)
	}
	good, _ := db.Topic("good")
	bad, _ := db.Topic("bad")
	for _, w := range []struct {
		t *passbook.Topic
		p int32
	}{{good, 0}, {bad, 0}} {
		off, err := w.t.AppendTo(w.p, []passbook.Record{{Value: []byte("after")}}, storage.Fsync)
		if err != nil || off != 100 {
			t.Fatalf("%s/%d: append = %d, %v; want offset 100", w.t.Name(), w.p, off, err)
		}
		n := 0
		for _, err := range w.t.Records(w.p, 0) {
			if err != nil {
				t.Fatalf("%s/%d: read: %v", w.t.Name(), w.p, err)
			}
			n++
		}
		if n != 101 {
			t.Fatalf("%s/%d: read %d records, want 101", w.t.Name(), w.p, n)
		}
	}
	if _, err := bad.Partition(1); !errors.Is(err, passbook.ErrFenced) || !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("Partition(1) = %v, want ErrFenced wrapping the corruption", err)
	}
	if _, err := bad.AppendTo(1, []passbook.Record{{Value: []byte("x")}}, storage.InOS); !errors.Is(err, passbook.ErrFenced) {
		t.Fatalf("append to the fenced partition = %v, want ErrFenced", err)
	}
	for _, err := range bad.Records(1, 0) {
		if !errors.Is(err, passbook.ErrFenced) {
			t.Fatalf("read of the fenced partition = %v, want ErrFenced", err)
		}
	}
	probs := db.PartitionProblems()
	if len(probs) != 1 || probs[0].Topic != "bad" || probs[0].Partition != 1 || probs[0].State != passbook.StateFenced || !strings.Contains(probs[0].Reason, "offset") {
		t.Fatalf("problems %+v, want bad/1 fenced", probs)
	}
	if info := bad.Describe(); info.Partitions[1].Fenced == "" || info.Partitions[0].Fenced != "" {
		t.Fatalf("describe %+v", info.Partitions)
	}
	if st := db.HealthStats(); st.Fenced != 1 || st.Unwritable != 0 {
		t.Fatalf("health stats %+v", st)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := passbook.Verify(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var damaged, fenced []string
	for _, pc := range r.Partitions {
		if !pc.Report.OK() {
			damaged = append(damaged, fmt.Sprintf("%s/%d", pc.Topic, pc.Partition))
		}
		if pc.Report.Fenced != "" {
			fenced = append(fenced, fmt.Sprintf("%s/%d", pc.Topic, pc.Partition))
		}
	}
	if !slices.Equal(damaged, []string{"bad/1"}) || !slices.Equal(fenced, damaged) {
		t.Fatalf("verify found damage in %v, fenced %v; want bad/1 for both", damaged, fenced)
	}
	if _, err := passbook.Repair(dir, nil); err != nil {
		t.Fatal(err)
	}
	db, err = passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if probs := db.PartitionProblems(); len(probs) != 0 {
		t.Fatalf("after repair: %+v", probs)
	}
	bad, _ = db.Topic("bad")
	l, err := bad.Partition(1)
	if err != nil {
		t.Fatal(err)
	}
	head := l.Head()
	if off, err := bad.AppendTo(1, []passbook.Record{{Value: []byte("after repair")}}, storage.Fsync); err != nil || off != head {
		t.Fatalf("append after repair = %d, %v; want %d", off, err, head)
	}
}

// emfileFS fails every open under one directory with EMFILE, as a
// process out of file descriptors does.
type emfileFS struct {
	vfs.FS
	under string
}

func (e emfileFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if strings.HasPrefix(name, e.under) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return e.FS.OpenFile(name, flag, perm)
}

// TestDB_OpenOutOfFileDescriptors: a partition that cannot get a file
// descriptor at Open is fenced with EMFILE as its reason while the rest
// is served; with descriptors to spare the next Open serves it, nothing
// to repair.
func TestDB_OpenOutOfFileDescriptors(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if _, err := topic.AppendTo(p, []passbook.Record{{Value: []byte("v")}}, storage.InOS); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	db, err = passbook.Open(dir, &passbook.Options{FS: emfileFS{FS: vfs.OS(), under: filepath.Join(dir, "topics", "orders", "2")}})
	if err != nil {
		t.Fatalf("Open out of descriptors for one partition: %v", err)
	}
	topic, _ = db.Topic("orders")
	if _, err := topic.Partition(2); !errors.Is(err, passbook.ErrFenced) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Partition(2) = %v, want ErrFenced wrapping EMFILE", err)
	}
	for p := range int32(2) {
		if _, err := topic.AppendTo(p, []passbook.Record{{Value: []byte("w")}}, storage.Fsync); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
	}
	db.Close()

	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if probs := db.PartitionProblems(); len(probs) != 0 {
		t.Fatalf("problems with descriptors to spare: %+v", probs)
	}
	topic, _ = db.Topic("orders")
	if off, err := topic.AppendTo(2, []passbook.Record{{Value: []byte("w")}}, storage.Fsync); err != nil || off != 1 {
		t.Fatalf("append to partition 2 = %d, %v; want offset 1", off, err)
	}
}
