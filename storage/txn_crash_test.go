package storage

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook/vfs"
)

// txnSnapshot is everything the transaction bookkeeping answers.
type txnSnapshot struct {
	Head, LSO   int64
	Open        []OpenTxn
	Aborted     []AbortedTxn
	Committed   []int64 // offsets a read_committed reader sees
	Uncommitted []int64 // offsets a read_uncommitted reader sees
}

func snapshotTxns(t testing.TB, l *Log) txnSnapshot {
	t.Helper()
	s := txnSnapshot{Head: l.Head(), LSO: l.LastStableOffset(), Open: l.OpenTxns(), Aborted: l.AbortedTxns(0, l.Head())}
	if len(s.Open) == 0 {
		s.Open = nil
	}
	for _, iso := range []Isolation{ReadCommitted, ReadUncommitted} {
		var got []int64
		for rec, err := range l.RecordsIsolated(l.StartOffset(), iso) {
			if err != nil {
				t.Fatalf("read %v: %v", iso, err)
			}
			got = append(got, rec.Offset)
		}
		if iso == ReadCommitted {
			s.Committed = got
		} else {
			s.Uncommitted = got
		}
	}
	return s
}

// txnCrashSteps is a workload of three producers' interleaved
// transactions, commits and aborts, and plain appends, long enough to
// roll segments of 400 bytes with transactions open across the rolls.
func txnCrashSteps() []txnStep {
	var steps []txnStep
	for round := range 6 {
		p := int64(round%3 + 1)
		q := int64((round+1)%3 + 1)
		steps = append(steps,
			txnStep{"txn", p, 2}, txnStep{"plain", 0, 1}, txnStep{"txn", q, 1}, txnStep{"txn", p, 1})
		if round%2 == 0 {
			steps = append(steps, txnStep{"abort", p, 0})
		} else {
			steps = append(steps, txnStep{"commit", p, 0})
		}
		steps = append(steps, txnStep{"plain", 0, 2})
		if round%3 == 2 {
			steps = append(steps, txnStep{"commit", q, 0})
		}
	}
	return steps
}

// txnReference runs steps on a log that never fails and returns the
// snapshot after each prefix of them: refs[k] is the state after k steps.
func txnReference(t *testing.T, steps []txnStep, o Options) []txnSnapshot {
	mem := vfs.NewMem()
	o.FS = mem
	l := mustOpen(t, "/p", &o)
	defer l.Close()
	refs := []txnSnapshot{snapshotTxns(t, l)}
	for i := range steps {
		txnWorkload(t, l, steps[i:i+1])
		refs = append(refs, snapshotTxns(t, l))
	}
	return refs
}

// txnFaultRun runs steps on l until one fails and returns how many
// were acknowledged. The sequence numbers follow the reference run's.
func txnFaultRun(t *testing.T, l *Log, steps []txnStep) int {
	seq := map[int64]int32{}
	for i, st := range steps {
		var err error
		switch st.op {
		case "txn":
			_, err = l.AppendBatch(txnBatch(t, st.pid, 0, seq[st.pid], st.n, true), DefaultDurability)
			seq[st.pid] += int32(st.n)
		case "plain":
			_, err = l.Append(recs(i, st.n), DefaultDurability)
		default:
			typ := ControlCommit
			if st.op == "abort" {
				typ = ControlAbort
			}
			_, err = l.AppendMarker(Marker{ProducerID: st.pid, Type: typ, CoordinatorEpoch: 7}, DefaultDurability)
		}
		if err != nil {
			return i
		}
	}
	return len(steps)
}

// checkRebuilt checks that the reopened log's state is the reference
// state after the acknowledged steps — or after the one more that was
// under way, which may have reached the file before its failure.
func checkRebuilt(t *testing.T, what string, l *Log, refs []txnSnapshot, acked int) {
	t.Helper()
	got := snapshotTxns(t, l)
	for _, k := range []int{acked, acked + 1} {
		if k < len(refs) && got.Head == refs[k].Head {
			if !reflect.DeepEqual(got, refs[k]) {
				t.Fatalf("%s: rebuilt state\n%+v\nwant the state after %d steps\n%+v", what, got, k, refs[k])
			}
			return
		}
	}
	t.Fatalf("%s: head %d after %d acknowledged steps (reference heads %d, %d)", what, got.Head, acked, refs[acked].Head, refs[min(acked+1, len(refs)-1)].Head)
}

// TestLog_Txn_KillAtEveryWrite fails the i-th file-system operation of a
// transaction workload (i = 0, 1, 2, … until it completes; every
// operation after it fails too, half of the failed writes short, as a
// process killed in the middle of a write), then reopens what the files
// hold: the rebuilt open transactions, LSO, aborted index and what each
// isolation level reads equal the state before the kill.
func TestLog_Txn_KillAtEveryWrite(t *testing.T) {
	steps := txnCrashSteps()
	o := Options{SegmentBytes: 400, IndexInterval: 128}
	refs := txnReference(t, steps, o)
	for i := 0; ; i++ {
		mem := vfs.NewMem()
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: i, Sticky: true, ShortWrite: i%2 == 1})
		fo := o
		fo.FS = faulty
		acked := 0
		l, err := Open("/p", &fo)
		if err == nil {
			acked = txnFaultRun(t, l, steps)
			l.Close() // the files keep what was written: a kill, not a power loss
		}
		done := faulty.Ops() <= i
		ro := o
		ro.FS = mem
		l2, err := Open("/p", &ro)
		if err != nil {
			t.Fatalf("fault at op %d: reopen: %v", i, err)
		}
		checkRebuilt(t, fmt.Sprintf("fault at op %d", i), l2, refs, acked)
		l2.Close()
		if done {
			if acked != len(steps) {
				t.Fatalf("workload finished with %d of %d steps", acked, len(steps))
			}
			t.Logf("the workload ran in %d operations, each one failed once", i)
			return
		}
	}
}

// TestLog_Txn_PowerLossAtEveryOperation is the same with every step
// fsync'd and a power loss after the fault that keeps only fsync'd bytes
// (unsynced tails torn at random, page by page).
func TestLog_Txn_PowerLossAtEveryOperation(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	steps := txnCrashSteps()
	o := Options{SegmentBytes: 400, IndexInterval: 128, Durability: Fsync}
	refs := txnReference(t, steps, o)
	for i := 0; ; i++ {
		mem := vfs.NewMem()
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: i, Sticky: true, ShortWrite: i%2 == 1})
		fo := o
		fo.FS = faulty
		acked := 0
		l, err := Open("/p", &fo)
		if err == nil {
			acked = txnFaultRun(t, l, steps)
		}
		done := faulty.Ops() <= i
		crashed := mem.Crash(vfs.CrashOptions{Tear: true, Pages: i%3 == 0, Rand: rand.New(rand.NewPCG(uint64(seed), uint64(i)))})
		if l != nil {
			l.Close() // after the power loss: crashed keeps what was synced
		}
		ro := o
		ro.FS = crashed
		l2, err := Open("/p", &ro)
		if err != nil {
			t.Fatalf("fault at op %d: reopen after power loss: %v", i, err)
		}
		checkRebuilt(t, fmt.Sprintf("fault at op %d, power loss", i), l2, refs, acked)
		l2.Close()
		if done {
			t.Logf("the workload ran in %d operations, each one failed once", i)
			return
		}
	}
}

// TestVerify_TransactionalPartition: control batches, transactional
// batches and .txnindex files are not problems to Verify.
func TestVerify_TransactionalPartition(t *testing.T) {
	mem := vfs.NewMem()
	l := mustOpen(t, "/p", &Options{FS: mem, SegmentBytes: 400})
	txnWorkload(t, l, txnCrashSteps())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify("/p", &VerifyOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %v", rep.Problems)
	}
}

// TestVerifyRepair_WrongTxnIndex: a closed segment's .txnindex that is
// sound but leaves out an abort is reported (Open would trust it), repair
// removes it, and Open rebuilds it from the segment.
func TestVerifyRepair_WrongTxnIndex(t *testing.T) {
	mem := vfs.NewMem()
	o := &Options{FS: mem, SegmentBytes: 400}
	l := mustOpen(t, "/p", o)
	txnWorkload(t, l, txnCrashSteps())
	want := l.AbortedTxns(0, l.Head())
	first := l.segments()[0]
	if len(first.txn.abortedList()) == 0 {
		t.Fatal("the first segment holds no abort")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify("/p", &VerifyOptions{FS: mem})
	if err != nil || !rep.OK() {
		t.Fatalf("verify of the sound partition: %v, %v", rep, err)
	}
	for _, n := range rep.Notes {
		t.Errorf("note on a sound partition: %s", n)
	}
	// The first segment's index without its aborts.
	b, _ := vfs.ReadFile(mem, txnIndexPath("/p", first.base))
	f, err := parseTxnFile(b, first.base)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.SetFileBytes(txnIndexPath("/p", first.base), encodeTxnFile(f.start, nil)); err != nil {
		t.Fatal(err)
	}
	rep, err = Verify("/p", &VerifyOptions{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != ProblemTxnIndex {
		t.Fatalf("verify of the wrong index: %v", rep.Problems)
	}
	if _, err := Repair("/p", &RepairOptions{FS: mem}); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify("/p", &VerifyOptions{FS: mem}); err != nil || !rep.OK() {
		t.Fatalf("verify after repair: %v, %v", rep.Problems, err)
	}
	l = mustOpen(t, "/p", o)
	defer l.Close()
	if got := l.AbortedTxns(0, l.Head()); !reflect.DeepEqual(got, want) {
		t.Fatalf("after repair and reopen: aborted %+v, want %+v", got, want)
	}
}

// TestLog_Txn_FaultRecovered fails the i-th file-system operation of the
// transaction workload once (the fault goes away), lets the log recover
// (Retry, or a reopen after a failed fsync, which it does not retry) and
// does the failed step again unless it took effect: in the end the
// state, live and reopened, is the reference's — each step once, the
// failed roll that sealed a segment and left it active included.
func TestLog_Txn_FaultRecovered(t *testing.T) {
	steps := txnCrashSteps()
	o := Options{SegmentBytes: 400, IndexInterval: 128}
	refs := txnReference(t, steps, o)
	want := refs[len(refs)-1]
	for i := 0; ; i++ {
		mem := vfs.NewMem()
		var armed atomic.Bool
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: i, Kinds: vfs.AllOps, ShortWrite: i%2 == 1,
			Filter: func(vfs.Op) bool { return armed.Load() }})
		fo := o
		fo.FS = faulty
		l := mustOpen(t, "/p", &fo)
		armed.Store(true)
		seq := map[int64]int32{}
		for k := 0; k < len(steps); {
			st := steps[k]
			head := l.Head()
			var err error
			switch st.op {
			case "txn":
				_, err = l.AppendBatch(txnBatch(t, st.pid, 0, seq[st.pid], st.n, true), DefaultDurability)
			case "plain":
				_, err = l.Append(recs(k, st.n), DefaultDurability)
			default:
				typ := ControlCommit
				if st.op == "abort" {
					typ = ControlAbort
				}
				_, err = l.AppendMarker(Marker{ProducerID: st.pid, Type: typ, CoordinatorEpoch: 7}, DefaultDurability)
			}
			if err != nil {
				if !l.Health().Retrying {
					l.Close()
					l = mustOpen(t, "/p", &fo)
				} else if err := l.Retry(); err != nil {
					t.Fatalf("fault at op %d, step %d: retry: %v", i, k, err)
				}
				if l.Head() == head {
					continue // it did not happen: again
				}
			}
			if st.op == "txn" {
				seq[st.pid] += int32(st.n)
			}
			k++
		}
		done := faulty.Ops() <= i
		armed.Store(false) // the fault was the workload's
		if got := snapshotTxns(t, l); !reflect.DeepEqual(got, want) {
			t.Fatalf("fault at op %d, recovered: state\n%+v\nwant\n%+v", i, got, want)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("fault at op %d: close: %v", i, err)
		}
		l = mustOpen(t, "/p", &Options{FS: mem, SegmentBytes: 400, IndexInterval: 128})
		if got := snapshotTxns(t, l); !reflect.DeepEqual(got, want) {
			t.Fatalf("fault at op %d, reopened: state\n%+v\nwant\n%+v", i, got, want)
		}
		l.Close()
		if done {
			t.Logf("the workload ran in %d operations, each one failed once", i)
			return
		}
	}
}
