package storage

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook/batch"
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

// appendStep does step i of a workload: a transactional batch of st.n
// records from sequence seq, st.n plain records, or a commit or abort
// marker.
func appendStep(t *testing.T, l *Log, i int, st txnStep, seq int32) error {
	var err error
	switch st.op {
	case "txn":
		_, err = l.AppendBatch(txnBatch(t, st.pid, 0, seq, st.n, true), DefaultDurability)
	case "plain":
		_, err = l.Append(recs(i, st.n), DefaultDurability)
	default:
		typ := ControlCommit
		if st.op == "abort" {
			typ = ControlAbort
		}
		_, err = l.AppendMarker(Marker{ProducerID: st.pid, Type: typ, CoordinatorEpoch: 7}, DefaultDurability)
	}
	return err
}

// txnFaultRun runs steps on l until one fails and returns how many
// were acknowledged. The sequence numbers follow the reference run's.
func txnFaultRun(t *testing.T, l *Log, steps []txnStep) int {
	seq := map[int64]int32{}
	for i, st := range steps {
		err := appendStep(t, l, i, st, seq[st.pid])
		if st.op == "txn" {
			seq[st.pid] += int32(st.n)
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
			if err := appendStep(t, l, k, st, seq[st.pid]); err != nil {
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

// TestLog_Txn_Kill9 runs a child process that writes transactions to a
// log — each a transactional batch, a plain record, and its marker;
// every third aborted — and prints each transaction's number once its
// marker's append has returned; it is SIGKILLed at a random moment,
// five times, going on from where it was each time. After each kill the
// reopened log's read_committed records are exactly the committed
// transactions' and the plain ones below the LSO, every transaction the
// child printed has its fate (a commit printed is never aborted, an
// abort is always indexed), and one not ended holds the LSO until the
// next child aborts it, as a coordinator would.
func TestLog_Txn_Kill9(t *testing.T) {
	if os.Getenv("PASSBOOK_TXN_KILL9_CHILD") != "" {
		txnKill9Child(os.Getenv("PASSBOOK_TXN_KILL9_CHILD"))
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dir := t.TempDir()
	printed, acked := -1, map[int]bool{} // the last printed, and every one
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLog_Txn_Kill9$")
		cmd.Env = append(os.Environ(), "PASSBOOK_TXN_KILL9_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan int, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if n, err := strconv.Atoi(sc.Text()); err == nil {
					lines <- n
				}
			}
		}()
		first, ok := <-lines
		if !ok {
			cmd.Wait()
			t.Fatalf("round %d: child printed nothing", round)
		}
		printed, acked[first] = max(printed, first), true
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL) // the child this test started
		for n := range lines {
			printed, acked[n] = max(printed, n), true
		}
		cmd.Wait()

		l := mustOpen(t, dir, &Options{SegmentBytes: 4 << 10})
		var got []string
		for rec, err := range l.RecordsIsolated(0, ReadCommitted) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(rec.Value))
		}
		// Transaction n is producer 1001+n's: ended by its marker, by
		// the next child's abort of what it found open, or open still.
		aborted, open := map[int64]bool{}, map[int64]bool{}
		for _, a := range l.AbortedTxns(0, l.Head()) {
			aborted[a.ProducerID] = true
		}
		for _, o := range l.OpenTxns() {
			open[o.ProducerID] = true
		}
		var want []string
		ended := -1
		for rec, err := range l.RecordsIsolated(0, ReadUncommitted) {
			if err != nil {
				t.Fatal(err)
			}
			v := string(rec.Value)
			var n int
			var part string
			plain := false
			if _, err := fmt.Sscanf(v, "plain-%d", &n); err == nil {
				plain = true
			} else if _, err := fmt.Sscanf(v, "txn-%d-%s", &n, &part); err != nil {
				t.Fatalf("round %d: record %q", round, v)
			}
			pid := int64(1001 + n)
			if open[pid] {
				break // it holds the LSO
			}
			switch {
			case n%3 == 0 && !aborted[pid]:
				t.Fatalf("round %d: transaction %d, aborted, is not in the aborted index", round, n)
			case n%3 != 0 && acked[n] && aborted[pid]:
				t.Fatalf("round %d: transaction %d, committed, is in the aborted index", round, n)
			case plain:
				ended = max(ended, n)
				want = append(want, v)
			case !aborted[pid]:
				want = append(want, v)
			}
		}
		for n := range acked {
			if n > ended {
				t.Fatalf("round %d: the child printed transaction %d, read_committed ends at %d", round, n, ended)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: read_committed read %d records, want %d (open %v)", round, len(got), len(want), l.OpenTxns())
		}
		if len(l.OpenTxns()) > 1 {
			t.Fatalf("round %d: open transactions %v: the child keeps one at a time", round, l.OpenTxns())
		}
		t.Logf("round %d: printed %d, transactions in the log %d, open %v, torn bytes %d", round, printed, ended+1, l.OpenTxns(), l.Recovery().TornBytes)
		l.Close()
	}
}

// txnKill9Child writes transactions until killed, going on after the
// last whole one the log holds; see TestLog_Txn_Kill9.
func txnKill9Child(dir string) {
	l, err := Open(dir, &Options{SegmentBytes: 4 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n := 0
	for rec, err := range l.RecordsIsolated(0, ReadUncommitted) {
		var k int
		if _, serr := fmt.Sscanf(string(rec.Value), "plain-%d", &k); err == nil && serr == nil {
			n = k + 1
		}
	}
	// What the last run left open is aborted, as a coordinator would,
	// and its number not used again.
	for _, o := range l.OpenTxns() {
		if _, err := l.AppendMarker(Marker{ProducerID: o.ProducerID, Type: ControlAbort}, DefaultDurability); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		n = max(n, int(o.ProducerID-1001)+1)
	}
	pid := int64(1000 + n) // transaction n is producer 1001+n's
	w := bufio.NewWriterSize(os.Stdout, 64)
	for ; ; n++ {
		pid++
		rs := []batch.Record{{Value: fmt.Appendf(nil, "txn-%d-a", n)}, {Value: fmt.Appendf(nil, "txn-%d-b", n)}}
		b, err := batch.Append(nil, rs, batch.Options{Idempotent: true, ProducerID: pid})
		if err == nil {
			batch.SetTransactional(b)
			_, err = l.AppendBatch(b, DefaultDurability)
		}
		if err == nil {
			_, err = l.Append([]batch.Record{{Value: fmt.Appendf(nil, "plain-%d", n)}}, DefaultDurability)
		}
		if err == nil {
			typ := ControlCommit
			if n%3 == 0 {
				typ = ControlAbort
			}
			_, err = l.AppendMarker(Marker{ProducerID: pid, Type: typ}, DefaultDurability)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintln(w, n)
		w.Flush()
	}
}
