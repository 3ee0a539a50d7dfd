package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/vfs"
)

// env is what every trial shares.
type env struct {
	rng      *rand.Rand
	tmp      string // a directory for the trials' data directories
	passbook string // the passbook binary, for `passbook serve`
	log      io.Writer
	ops      float64 // average file operations of a disk-error trial's workload
	n        int     // trials so far, to name them
}

func (e *env) dir() string {
	e.n++
	d := filepath.Join(e.tmp, fmt.Sprintf("trial-%06d", e.n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		panic(err)
	}
	return d
}

func (e *env) tag() string { return fmt.Sprintf("t%d", e.n) }

// sleep waits a random duration in [lo, hi).
func (e *env) sleep(lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(e.rng.Int64N(int64(hi-lo))))
}

// newMem returns a MemFS holding the directory dir, durably (as a data
// directory that existed before the trial).
func newMem(dir string) *vfs.MemFS {
	mem := vfs.NewMem()
	mem.MkdirAll(dir, 0o755)
	for d := dir; ; d = filepath.Dir(d) {
		mem.SyncDir(filepath.Dir(d))
		if filepath.Dir(d) == d {
			return mem
		}
	}
}

// isDiskFault reports whether err comes from an injected disk fault.
func isDiskFault(err error) bool {
	return errors.Is(err, vfs.ErrInjected)
}

// view reads a DB's topic for the checks.
func view(db *passbook.DB) (logView, error) {
	t, err := db.Topic(topicName)
	if err != nil {
		return logView{}, err
	}
	v := logView{parts: t.Partitions(), read: func(p int32, from int64) iter.Seq2[batch.Record, error] { return t.Records(p, from) }}
	for p := range int32(v.parts) {
		l, err := t.Partition(p)
		if err != nil { // fenced: Open could not open it
			return logView{}, err
		}
		v.start = append(v.start, l.StartOffset())
		v.head = append(v.head, l.Head())
	}
	return v, nil
}

// committed reads every consumer's committed offsets (−1: none).
func committed(db *passbook.DB, names []string) map[string]map[int32]int64 {
	m := map[string]map[int32]int64{}
	for _, name := range names {
		m[name] = map[int32]int64{}
		for p := range int32(partitions) {
			off, err := db.Offsets().Committed(context.Background(), offsets.Key{Consumer: name, Topic: topicName, Partition: p})
			if err != nil {
				off = -1
			}
			m[name][p] = off
		}
	}
	return m
}

// checkDB runs the ledger's checks on an open DB, then closes it and
// verifies the directory.
func checkDB(db *passbook.DB, dir string, fsys vfs.FS, lg *ledger, lossy bool, t *tally) {
	v, err := view(db)
	if err != nil {
		if !errors.Is(err, passbook.ErrUnknownTopic) || lg.ackCount() > 0 {
			t.readErrors++
			t.notef("open topic: %v", err)
		} // else the fault struck before the topic was created
		db.Close()
		return
	}
	stored := lg.checkLog(v, lossy, t)
	names := sortedKeys(lg.consumers)
	lg.checkConsumers(stored, v.head, committed(db, names), t)
	if err := db.Close(); err != nil {
		t.notef("close: %v", err)
	}
	verifyClean(dir, fsys, t)
}

// checkOptions checks the data directory dir on fsys, its offset store
// on fsys too where fsys holds it (the Kafka power-loss trials), else on
// the OS.
func checkOptions(dir string, fsys vfs.FS) *passbook.CheckOptions {
	o := &passbook.CheckOptions{FS: fsys}
	if fsys == nil || fsys == vfs.OS() {
		return o
	}
	if _, err := fsys.Stat(layout.OffsetsFile(dir)); err == nil {
		o.OffsetsFS = fsys
	}
	return o
}

// verifyClean checks that passbook verify finds nothing wrong.
func verifyClean(dir string, fsys vfs.FS, t *tally) {
	r, err := passbook.Verify(dir, checkOptions(dir, fsys))
	if err != nil {
		t.verifyBad++
		t.notef("verify %s: %v", dir, err)
		return
	}
	for _, p := range r.AllProblems() {
		t.verifyBad++
		t.notef("verify: %v", p)
	}
}

// kill9Embedded runs the embedded workload in a child process, kills it
// with SIGKILL at a random moment, then runs it again briefly over the
// same directory, stops it cleanly, and checks.
func (e *env) kill9Embedded() (t tally) {
	t.trials = 1
	dir := e.dir()
	defer os.RemoveAll(dir)
	lg := newLedger()
	c, err := startChild(dir, e.tag()+"a", e.rng.Uint64(), 0, lg)
	if err != nil {
		t.notef("start child: %v", err)
		t.verifyBad++
		return
	}
	select {
	case <-c.acks:
	case err := <-c.done:
		c.cmd.Wait()
		t.verifyBad++
		t.notef("child ended before its first append: %v", err)
		return
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
		c.cmd.Wait()
		t.verifyBad++
		t.notef("no append acknowledged in 30 s")
		return
	}
	e.sleep(0, 400*time.Millisecond)
	c.cmd.Process.Kill()
	<-c.done // to EOF first: Wait closes the pipe, losing what is still in it
	c.cmd.Wait()
	lg.Fault()
	t.faults++
	lg.Resume(nil)
	c, err = startChild(dir, e.tag()+"b", e.rng.Uint64(), 200*time.Millisecond, lg)
	if err != nil {
		t.notef("restart child: %v", err)
		t.verifyBad++
		return
	}
	perr := <-c.done
	if err := c.cmd.Wait(); err != nil || perr != nil {
		t.verifyBad++
		t.notef("child after kill -9: %v %v\n%s", err, perr, tail(c.stderr.String(), 4000))
		return
	}
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.verifyBad++
		t.notef("open after kill -9: %v", err)
		return
	}
	checkDB(db, dir, nil, lg, false, &t)
	return t
}

// powerLossEmbedded runs the embedded workload in this process on a
// MemFS, cuts the power at a random moment (only fsync'd bytes survive,
// the last write may tear), reopens what survived, runs on briefly and
// checks. The offset store is on the OS and does not lose power: its
// consumers process only fsync'd records, so no commit can outlive the
// records it covers.
func (e *env) powerLossEmbedded() (t tally) {
	t.trials = 1
	dir := e.dir()
	defer os.RemoveAll(dir)
	mem := newMem(dir)
	db, err := passbook.Open(dir, &passbook.Options{FS: mem, MinSegmentBytes: -1})
	if err != nil {
		t.verifyBad++
		t.notef("open: %v", err)
		return
	}
	lg := newLedger()
	w := &embedded{db: db, sink: lg, tag: e.tag() + "a", producers: 3, fsync: 0.5, durableReads: true, rng: rand.New(rand.NewPCG(e.rng.Uint64(), 2))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.run(ctx) }()
	e.sleep(20*time.Millisecond, 400*time.Millisecond)
	lg.Fault()
	crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(e.rng.Uint64(), 3))})
	t.faults++
	cancel()
	if err := <-done; err != nil {
		t.notef("workload before the power loss: %v", err)
	}
	db.Close()
	e.resumeAndCheck(dir, crashed, lg, true, &t)
	return t
}

// resumeAndCheck reopens dir on fsys after a fault, runs the workload
// briefly, and checks.
func (e *env) resumeAndCheck(dir string, fsys vfs.FS, lg *ledger, lossy bool, t *tally) {
	if lossy {
		e.repairAfterPowerLoss(dir, fsys, lg, t)
	}
	db, err := passbook.Open(dir, &passbook.Options{FS: fsys, MinSegmentBytes: -1})
	if err != nil {
		t.verifyBad++
		t.notef("reopen after the fault: %v", err)
		return
	}
	v, err := view(db)
	if err != nil {
		t.verifyBad++
		t.notef("reopen after the fault: %v", err)
		db.Close()
		return
	}
	lg.Resume(v.head)
	w := &embedded{db: db, sink: lg, tag: e.tag() + "b", producers: 2, fsync: 0.5, durableReads: true, rng: rand.New(rand.NewPCG(e.rng.Uint64(), 4))}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err = w.run(ctx)
	cancel()
	if err != nil {
		t.verifyBad++
		t.notef("workload after the fault: %v", err)
	}
	checkDB(db, dir, fsys, lg, lossy, t)
}

// diskErrorEmbedded runs the embedded workload on a file system that
// fails one write or fsync (the i-th), then checks the log reopened as
// it was (the process restarted) and after a power loss that follows.
func (e *env) diskErrorEmbedded() (t tally) {
	t.trials = 1
	dir := e.dir()
	defer os.RemoveAll(dir)
	mem := newMem(dir)
	if e.ops == 0 {
		e.ops = 2000
	}
	at := e.rng.IntN(int(e.ops))
	faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: at, Kinds: vfs.OpWrite | vfs.OpSync | vfs.OpSyncDir, ShortWrite: e.rng.IntN(2) == 0})
	lg := newLedger()
	db, err := passbook.Open(dir, &passbook.Options{FS: faulty, MinSegmentBytes: -1})
	if err == nil {
		w := &embedded{db: db, sink: lg, tag: e.tag() + "a", producers: 3, fsync: 0.5, durableReads: true, rng: rand.New(rand.NewPCG(e.rng.Uint64(), 5))}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		if err := w.run(ctx); err != nil && !isDiskFault(err) {
			t.notef("workload with a disk fault: %v", err)
		}
		cancel()
	} else if !isDiskFault(err) {
		t.verifyBad++
		t.notef("open: %v", err)
	}
	e.ops = 0.9*e.ops + 0.1*float64(faulty.Ops())
	lg.Fault()
	crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(e.rng.Uint64(), 6))})
	if db != nil {
		db.Close()
	}
	if faulty.Ops() > at {
		t.faults++
	}
	// The process restarts: everything written is there.
	if db, err := passbook.Open(dir, &passbook.Options{FS: mem, MinSegmentBytes: -1}); err != nil {
		t.verifyBad++
		t.notef("reopen after a disk fault: %v", err)
	} else {
		checkDB(db, dir, mem, lg, false, &t)
	}
	// Or the power goes too: fsync'd records are there.
	e.checkCrashed(dir, crashed, lg, &t)
	return t
}

// tail returns the last n bytes of s, for a child's stderr in a note.
func tail(s string, n int) string {
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
