package storage

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// Every field of a stored batch outside its CRC-32C — base offset,
// length, partition leader epoch, magic and the CRC itself — is checked
// against what the broker wrote: a bit flipped in any of them is a
// corrupt batch that Verify reports with its file and position, and that
// Open refuses to serve, in a closed segment as in the synced range.
func TestVerify_FieldsOutsideTheCRC(t *testing.T) {
	tests := []struct {
		field  string
		at     int64 // byte of the batch header flipped
		detail string
	}{
		{"base offset", 7, "base offset"},
		{"length", 11, ""},
		{"partition leader epoch, low byte", 15, "partition leader epoch"},
		{"partition leader epoch, high byte", 12, "partition leader epoch"},
		{"magic", 16, "magic"},
		{"crc", 20, "crc"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			mem, bases := verifyFixture(t)
			size := batchSize(t, mem, bases[1])
			// The second batch of the second segment, a closed one.
			flipByte(t, mem, seg(bases[1], ".log"), size+tt.at)
			r := mustVerify(t, mem)
			p := onlyProblem(t, r, ProblemBatch, segmentName(bases[1], ".log"), size)
			t.Log(p)
			if !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("detail %q, want it to name the %s", p.Detail, tt.detail)
			}
		})
	}
}

// Open's recovery re-reads the active segment after an unclean shutdown
// and checks those fields too: a leader epoch overwritten in the fsync'd
// range is corruption, named with its file and position, not a batch
// served to clients as is.
func TestOpen_LeaderEpochOverwritten(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem})
	appendN(t, l, 0, 10, Fsync)
	if err := l.Close(); err != nil { // the checkpoint covers the ten batches
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", &Options{FS: mem})
	appendN(t, l, 10, 1, Fsync)
	crashed := mem.Crash(vfs.CrashOptions{})
	l.Close()
	size := batchSize(t, crashed, 0)
	flipByte(t, crashed, seg(0, ".log"), 3*size+15) // the fourth batch's leader epoch
	_, err := Open("/p", &Options{FS: crashed})
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.HasSuffix(ce.File, segmentName(0, ".log")) || ce.Pos != 3*size ||
		!strings.Contains(err.Error(), "partition leader epoch") {
		t.Fatalf("Open: %v, want a CorruptError about the leader epoch in %s at byte %d", err, segmentName(0, ".log"), 3*size)
	}
}

// A batch given to AppendBatch with another leader epoch is stored with
// passbook's, so that verify can hold every stored batch to it.
func TestLog_AppendBatch_StampsLeaderEpoch(t *testing.T) {
	l := mustOpen(t, t.TempDir(), nil)
	for _, epoch := range []int32{-1, 7} {
		b := encoded(t, brokerNow)
		b[12], b[13], b[14], b[15] = byte(epoch>>24), byte(epoch>>16), byte(epoch>>8), byte(epoch)
		if _, err := l.AppendBatch(b, InOS); err != nil {
			t.Fatal(err)
		}
	}
	// Closed, the segment is its batches (open, a mapped one has
	// allocated zeros past them).
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for sb, err := range ScanSegment(nil, filepath.Join(l.Dir(), segmentName(0, ".log")), 0) {
		if err != nil || sb.Damaged() {
			t.Fatalf("batch %d: %v %v", n, err, sb.Err)
		}
		if sb.Header.PartitionLeaderEpoch != LeaderEpoch {
			t.Errorf("batch %d stored with leader epoch %d, want %d", n, sb.Header.PartitionLeaderEpoch, LeaderEpoch)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d batches, want 2", n)
	}
}
