package kafka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

func txnRec(id string, epoch int16, state string) txnRecord {
	return txnRecord{ID: id, ProducerID: 7, PrevProducerID: -1, Epoch: epoch, LastEpoch: -1, State: state, TimeoutMs: 60_000, StartMs: -1,
		Partitions: []txnPartition{{Topic: "out", Partition: 0}},
		Offsets:    []txnOffset{{Group: "g", Topic: "in", Partition: 0, Offset: 42}}}
}

func openStore(t *testing.T, dir string) (*txnStore, []txnRecord) {
	t.Helper()
	st, recs, err := openTxnStore(vfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.close() })
	return st, recs
}

// The last record of each id is its state, after a reopen.
func TestTxnStore_LastRecordWins(t *testing.T) {
	dir := t.TempDir()
	st, recs := openStore(t, dir)
	if len(recs) != 0 {
		t.Fatalf("a new store has %d records", len(recs))
	}
	for _, r := range []txnRecord{txnRec("a", 0, "Empty"), txnRec("b", 0, "Empty"), txnRec("a", 1, "Ongoing"), txnRec("a", 1, "PrepareCommit")} {
		if err := st.put(&r, true); err != nil {
			t.Fatal(err)
		}
	}
	st.close()
	_, recs = openStore(t, dir)
	if got := fmt.Sprintln(len(recs), recs[0].ID, recs[0].State, recs[0].Epoch, recs[0].Offsets[0].Offset, recs[1].ID, recs[1].State); got != "2 a PrepareCommit 1 42 b Empty\n" {
		t.Fatalf("reopened: %s", got)
	}
}

// A record cut short by a crash is the torn tail: it is truncated, and
// the records before it are kept. A damaged record with more after it is
// corruption, refused with the file and the position.
func TestTxnStore_TornTailAndCorruption(t *testing.T) {
	write := func(t *testing.T) (string, int64) {
		dir := t.TempDir()
		st, _ := openStore(t, dir)
		for _, r := range []txnRecord{txnRec("a", 0, "Ongoing"), txnRec("a", 0, "PrepareAbort")} {
			if err := st.put(&r, true); err != nil {
				t.Fatal(err)
			}
		}
		st.close()
		fi, err := os.Stat(filepath.Join(dir, txnLogName))
		if err != nil {
			t.Fatal(err)
		}
		return dir, fi.Size()
	}
	for _, tc := range []struct {
		name    string
		damage  func(path string, size int64) error
		want    string // the state kept, if not corrupt
		corrupt bool
	}{
		{"cut in the last record's payload", func(p string, size int64) error { return os.Truncate(p, size-5) }, "Ongoing", false},
		{"a third record cut in its frame", func(p string, size int64) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, append(b, 0, 0, 1), 0o644)
		}, "PrepareAbort", false},
		{"the last record's checksum", func(p string, size int64) error { return flipByte(p, size-3) }, "Ongoing", false},
		{"the first record's checksum", func(p string, size int64) error { return flipByte(p, int64(len(txnLogMagic))+txnFrameSize+3) }, "", true},
		{"the header", func(p string, size int64) error { return flipByte(p, 2) }, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, size := write(t)
			path := filepath.Join(dir, txnLogName)
			if err := tc.damage(path, size); err != nil {
				t.Fatal(err)
			}
			st, recs, err := openTxnStore(vfs.OS(), dir)
			if tc.corrupt {
				if !errors.Is(err, errTxnStoreCorrupt) {
					t.Fatalf("opened a damaged log: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer st.close()
			if len(recs) != 1 || recs[0].State != tc.want {
				t.Fatalf("after the torn tail: %+v, want state %s", recs, tc.want)
			}
			// Appends go on after the truncated tail.
			r := txnRec("a", 1, "CompleteAbort")
			if err := st.put(&r, true); err != nil {
				t.Fatal(err)
			}
			st.close()
			_, recs = openStore(t, dir)
			if len(recs) != 1 || recs[0].State != "CompleteAbort" {
				t.Fatalf("after an append past the truncated tail: %+v", recs)
			}
		})
	}
}

func flipByte(path string, at int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b[at] ^= 0xff
	return os.WriteFile(path, b, 0o644)
}

// A log of mostly old states is rewritten with the live ones only.
func TestTxnStore_Compaction(t *testing.T) {
	dir := t.TempDir()
	st, _ := openStore(t, dir)
	st.compactMin = 64 << 10
	r := txnRec("a", 0, "Ongoing")
	for i := 0; !st.needsCompaction(); i++ {
		r.Epoch = int16(i % 1000)
		if err := st.put(&r, true); err != nil {
			t.Fatal(err)
		}
	}
	live := []txnRecord{r, txnRec("b", 3, "CompleteCommit")}
	if err := st.compact(live); err != nil {
		t.Fatal(err)
	}
	if st.needsCompaction() {
		t.Fatal("still needs compaction after it")
	}
	after := txnRec("b", 4, "Empty")
	if err := st.put(&after, true); err != nil {
		t.Fatal(err)
	}
	st.close()
	_, recs := openStore(t, dir)
	if got := fmt.Sprintln(len(recs), recs[0].ID, recs[0].Epoch, recs[1].ID, recs[1].Epoch, recs[1].State); got != fmt.Sprintln(2, "a", r.Epoch, "b", 4, "Empty") {
		t.Fatalf("after compaction: %s", got)
	}
	if fi, _ := os.Stat(filepath.Join(dir, txnLogName)); fi.Size() > 4096 {
		t.Fatalf("compacted log is %d bytes", fi.Size())
	}
	if _, err := os.Stat(filepath.Join(dir, txnLogName+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left: %v", err)
	}
}

// Failing each file operation in turn: whatever put acknowledged is
// there after a reopen, and after a failed write or fsync nothing more
// is acknowledged (the error is sticky).
func TestTxnStore_EveryFault(t *testing.T) {
	for i := 0; ; i++ {
		dir := t.TempDir()
		fsys := vfs.NewFaulty(vfs.OS(), vfs.FaultyOptions{FailAt: i})
		st, _, err := openTxnStore(fsys, dir)
		acked := -1
		if err == nil {
			failed := false
			for n := range 4 {
				r := txnRec("a", int16(n), "Ongoing")
				err := st.put(&r, true)
				switch {
				case err == nil && failed:
					t.Fatalf("fault %d: put %d acknowledged after a failed one", i, n)
				case err == nil:
					acked = n
				case !errors.Is(err, errTxnStoreFailed):
					t.Fatalf("fault %d: put %d: %v", i, n, err)
				default:
					failed = true
				}
			}
			st.close()
		}
		if fsys.Ops() <= i {
			if acked != 3 {
				t.Fatalf("no fault injected, but %d puts acknowledged", acked+1)
			}
			return
		}
		_, recs := openStore(t, dir)
		if acked >= 0 && (len(recs) != 1 || recs[0].Epoch < int16(acked)) {
			t.Fatalf("fault %d: put %d was acknowledged, the log holds %+v", i, acked, recs)
		}
	}
}

// FuzzTxnStore_Open: any file opens without a panic, as a log (its torn
// tail truncated) or as damage; one that opens opens again the same.
func FuzzTxnStore_Open(f *testing.F) {
	good := []byte(txnLogMagic)
	for _, r := range []txnRecord{txnRec("a", 0, "Ongoing"), txnRec("b", 2, "PrepareCommit")} {
		b, err := encodeTxnRecord(&r)
		if err != nil {
			f.Fatal(err)
		}
		good = append(good, b...)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte(txnLogMagic[:5]))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, txnLogName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		st, recs, err := openTxnStore(vfs.OS(), dir)
		if err != nil {
			if !errors.Is(err, errTxnStoreCorrupt) {
				t.Fatalf("not damage: %v", err)
			}
			return
		}
		st.close()
		st, again, err := openTxnStore(vfs.OS(), dir)
		if err != nil {
			t.Fatalf("opened once, not twice: %v", err)
		}
		st.close()
		if fmt.Sprint(recs) != fmt.Sprint(again) {
			t.Fatalf("reopened differently:\n%v\n%v", recs, again)
		}
	})
}
