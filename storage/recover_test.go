package storage

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// tornFixture writes, to /p on a MemFS, a batch of 10 records fsync'd and
// checkpointed (the recovery point), then one 150 KB record and 10 small
// ones that were written but never fsync'd, as a producer with acks=1
// leaves them. It returns the MemFS (the log closed uncleanly: as after
// kill -9) and the byte position where the unsynced bytes start.
func tornFixture(t *testing.T) (*vfs.MemFS, int64) {
	t.Helper()
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem})
	if _, err := l.Append(recs(0, 10), Fsync); err != nil {
		t.Fatal(err)
	}
	if err := l.checkpointNow(); err != nil {
		t.Fatal(err)
	}
	synced := l.Size()
	big := bytes.Repeat([]byte{'x'}, 150<<10)
	if _, err := l.Append([]batch.Record{{Value: big}}, InOS); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recs(11, 10), InOS); err != nil {
		t.Fatal(err)
	}
	// Power loss while the log is open: what was written is in mem's
	// current contents; Crash gives what a disk kept.
	crashed := mem.Crash(vfs.CrashOptions{})
	full, _ := mem.FileBytes(seg(0, ".log"))
	if err := crashed.SetFileBytes(seg(0, ".log"), full); err != nil {
		t.Fatal(err)
	}
	l.Close()
	return crashed, synced
}

// TestRecover_PageLostInUnsyncedTail is the case: an unsynced 150
// KB batch lost a page in its middle while the pages after it, and a whole
// valid batch, reached the disk. Only unsynced bytes were lost, so it is a
// torn tail, not corruption: Open truncates it and serves the rest, and
// Verify says "torn tail" at the same byte, with the same head.
func TestRecover_PageLostInUnsyncedTail(t *testing.T) {
	mem, synced := tornFixture(t)
	b, _ := mem.FileBytes(seg(0, ".log"))
	hole := synced + 64<<10
	clear(b[hole : hole+4096])
	mem.SetFileBytes(seg(0, ".log"), b)

	r := mustVerify(t, mem)
	p := onlyProblem(t, r, ProblemTornTail, segmentName(0, ".log"), synced)
	if r.Head != 10 || p.From != 10 {
		t.Fatalf("verify: head %d, problem %v; want head 10, a torn tail from offset 10", r.Head, p)
	}
	l, err := Open("/p", &Options{FS: mem})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer l.Close()
	if l.Head() != r.Head || l.Recovery().TornBytes != int64(len(b))-synced {
		t.Fatalf("Open: head %d, torn %d bytes; verify said head %d, %d bytes", l.Head(), l.Recovery().TornBytes, r.Head, int64(len(b))-synced)
	}
	checkRecords(t, l, 0)
	if _, err := l.Append(recs(10, 1), Fsync); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, l, 0)
	if r := mustVerifyClosed(t, l, mem); !r.OK() {
		t.Fatalf("verify after recovery: %v", r.Problems)
	}
}

// mustVerifyClosed closes l and verifies its partition.
func mustVerifyClosed(t *testing.T, l *Log, mem *vfs.MemFS) *VerifyReport {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return mustVerify(t, mem)
}

// TestRecover_OpenAndVerifyAgree damages the fixture's segment at many
// places, below and past the recovery point, and checks the one rule:
// damage below it is corruption for both (Open fails with a CorruptError
// at the byte Verify names), damage past it is a torn tail for both, at
// the same byte and with the same head.
func TestRecover_OpenAndVerifyAgree(t *testing.T) {
	base, synced := tornFixture(t)
	full, _ := base.FileBytes(seg(0, ".log"))
	for _, tc := range []struct {
		name string
		at   int64 // byte zeroed (a 4 KiB page from here, cut at the end of the file)
		torn bool
	}{
		{"first batch, fsync'd", 30, false},
		{"start of the unsynced bytes", synced, true},
		{"middle of the big batch", synced + 80<<10, true},
		{"last small batch", int64(len(full)) - 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := base.Crash(vfs.CrashOptions{})
			b := bytes.Clone(full)
			clear(b[tc.at:min(tc.at+4096, int64(len(b)))])
			mem.SetFileBytes(seg(0, ".log"), b)
			r := mustVerify(t, mem)
			if len(r.Problems) != 1 {
				t.Fatalf("verify: %v, want one problem", r.Problems)
			}
			p := r.Problems[0]
			l, err := Open("/p", &Options{FS: mem})
			var ce *CorruptError
			switch {
			case !tc.torn && (p.Kind != ProblemBatch || !errors.As(err, &ce) || ce.Pos != p.Pos):
				t.Fatalf("verify: %v; Open: %v; want corruption at the same byte for both", p, err)
			case tc.torn && (p.Kind != ProblemTornTail || err != nil):
				t.Fatalf("verify: %v; Open: %v; want a torn tail that Open truncates", p, err)
			case tc.torn && (l.Head() != r.Head || l.Size() != p.Pos):
				t.Fatalf("Open: head %d, size %d; verify: head %d, torn at byte %d", l.Head(), l.Size(), r.Head, p.Pos)
			}
			if l != nil {
				l.Close()
			}
		})
	}
}

// TestRecover_PowerLoss_PagesOutOfOrder cuts the power with every unsynced
// page of the fixture's segment reaching the disk or not at random (as a
// page cache's write-back does), many times: Open always succeeds, keeps
// every fsync'd record, serves dense offsets, and agrees with Verify.
func TestRecover_PowerLoss_PagesOutOfOrder(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem})
	if _, err := l.Append(recs(0, 10), Fsync); err != nil {
		t.Fatal(err)
	}
	if err := l.checkpointNow(); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{'x'}, 150<<10)
	for i := range 3 {
		l.Append([]batch.Record{{Value: big}}, InOS)
		l.Append(recs(11+i*11, 10), InOS)
	}
	defer l.Close()
	for trial := range 50 {
		crashed := mem.Crash(vfs.CrashOptions{Rand: rng, Tear: true, Pages: true})
		r := mustVerify(t, crashed)
		for _, p := range r.Problems {
			if p.Kind != ProblemTornTail {
				t.Fatalf("trial %d: verify: %v, want at most a torn tail", trial, r.Problems)
			}
		}
		l2, err := Open("/p", &Options{FS: crashed})
		if err != nil {
			t.Fatalf("trial %d: Open: %v", trial, err)
		}
		if l2.Head() < 10 || l2.Head() != r.Head {
			t.Fatalf("trial %d: head %d, verify said %d; 10 records were fsync'd", trial, l2.Head(), r.Head)
		}
		next := int64(0)
		for rec, err := range l2.Records(0) {
			if err != nil || rec.Offset != next {
				t.Fatalf("trial %d: read at %d: offset %d, %v", trial, next, rec.Offset, err)
			}
			next++
		}
		if next != l2.Head() {
			t.Fatalf("trial %d: read %d records, head %d", trial, next, l2.Head())
		}
		l2.Close()
	}
}
