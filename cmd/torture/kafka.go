package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/kafka"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/vfs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The Kafka workload's consumer group: it commits after each poll of at
// most pollRecords records, so a restart processes at most that many
// again per partition.
const (
	groupName   = "kafka-group"
	pollRecords = 100
)

var groupDelivery = delivery{name: "Kafka consumer group (commit after each poll)", dupWindow: pollRecords}

// kafkaWork produces with franz-go (acks=all: acknowledged means
// fsync'd) and consumes as a consumer group, against the server at addr.
type kafkaWork struct {
	addr string
	sink sink
	tag  string
	rng  *rand.Rand
	errs chan error
	diag *diagLog // keeps the consumer client's log
}

// run creates the topic if needed, then produces and consumes until ctx
// is done. It returns an error only for what a fault cannot explain.
func (w *kafkaWork) run(ctx context.Context) error {
	w.errs = make(chan error, 4)
	adm, err := kgo.NewClient(kgo.SeedBrokers(w.addr), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer adm.Close()
	ac := kadm.NewClient(adm)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	seg := "8192"
	_, err = ac.CreateTopic(cctx, partitions, 1, map[string]*string{"segment.bytes": &seg}, topicName)
	if err != nil && strings.Contains(err.Error(), "INVALID_CONFIG") {
		// `passbook serve` refuses new topics with segments under 1 MiB:
		// kill9Kafka created the topic beforehand (createSmallSegmentTopic).
		_, err = ac.CreateTopic(cctx, partitions, 1, nil, topicName)
	}
	if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("create topic: %w", err)
	}
	start := map[int32]int64{}
	for p := range int32(partitions) {
		start[p] = 0
	}
	offs, err := ac.FetchOffsets(cctx, groupName)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("fetch the group's offsets: %w", err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topicName && o.Err == nil && o.At >= 0 {
			start[o.Partition] = o.At
		}
	})
	var wg sync.WaitGroup
	wg.Go(func() { w.produce(ctx) })
	wg.Go(func() { w.consume(ctx, start) })
	wg.Wait()
	select {
	case err := <-w.errs:
		return err
	default:
		return nil
	}
}

func (w *kafkaWork) produce(ctx context.Context) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.addr), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(200), kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		w.errs <- err
		return
	}
	defer cl.Close()
	for seq := 0; ctx.Err() == nil; seq++ {
		body := fmt.Sprintf("%s-k-s%d-%s", w.tag, seq, strings.Repeat("y", w.rng.IntN(120)))
		v, k, h := makeValue(body), fmt.Sprintf("k%d", seq%32), strconv.Itoa(seq)
		w.sink.Sent(string(v), k, h, -1)
		rec := &kgo.Record{Topic: topicName, Key: []byte(k), Value: v, Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(h)}}}
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err == nil {
				w.sink.Acked(r.Partition, r.Offset, true, string(r.Value))
			}
		})
		if seq%8 == 0 {
			time.Sleep(time.Duration(w.rng.IntN(1000)) * time.Microsecond)
		}
	}
}

func (w *kafkaWork) consume(ctx context.Context, start map[int32]int64) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.addr), kgo.ConsumerGroup(groupName), kgo.ConsumeTopics(topicName),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.SessionTimeout(6*time.Second), kgo.RebalanceTimeout(6*time.Second),
		kgo.BlockRebalanceOnPoll(), // no rebalance between a poll and its commit
		kgo.WithLogger(w.diag.client("consumer")))
	if err != nil {
		w.errs <- err
		return
	}
	defer func() {
		cl.AllowRebalance() // else Close waits for the rebalance it blocks
		cl.Close()
	}()
	w.sink.Started(groupName, groupDelivery, start)
	for ctx.Err() == nil {
		cl.AllowRebalance()
		fs := cl.PollRecords(ctx, pollRecords)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		recs := fs.Records()
		for _, r := range recs {
			if !w.sink.Processed(groupName, r.Partition, r.Offset, string(r.Value)) {
				return
			}
		}
		if len(recs) > 0 {
			if err := cl.CommitRecords(ctx, recs...); err != nil {
				time.Sleep(10 * time.Millisecond)
				continue // processed, not committed: a restart may process them again
			}
			upto := map[int32]int64{}
			for _, r := range recs {
				upto[r.Partition] = max(upto[r.Partition], r.Offset+1)
			}
			for p, off := range upto {
				w.sink.Committed(groupName, p, off)
			}
		}
	}
}

// freeAddr returns a loopback address with a free port.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// createSmallSegmentTopic creates the workload's topic in dir with 8 KiB
// segments, so that trials cross many segment rolls.
func createSmallSegmentTopic(dir string) error {
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		return err
	}
	if _, err := db.CreateTopic(topicName, passbook.TopicConfig{Partitions: partitions, SegmentBytes: 8192}); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

// serve starts `passbook serve` over dir and waits until it accepts
// connections.
func (e *env) serve(dir string, diag *diagLog) (*exec.Cmd, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(e.passbook, "serve", "-v", "--data", dir, "--kafka", addr, "--default-partitions", strconv.Itoa(partitions))
	cmd.Stderr = diag
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return cmd, addr, nil
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, "", fmt.Errorf("passbook serve did not listen on %s: %s", addr, tail(diag.String(), 4000))
}

// waitAcked waits until lg holds an acknowledgement, up to d.
func waitAcked(lg *ledger, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		lg.mu.Lock()
		n := len(lg.acks)
		lg.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// kill9Kafka runs the Kafka workload against a `passbook serve` child,
// kills the server with SIGKILL at a random moment, restarts it, runs on
// briefly, stops it with SIGTERM and checks.
func (e *env) kill9Kafka() (t tally) {
	t.trials = 1
	diag := newDiagLog()
	defer diag.report(&t)
	dir := e.dir()
	defer os.RemoveAll(dir)
	lg := newLedger()
	lg.onRewind = diag.mark
	// The topic's 8 KiB segments are under the floor `passbook serve`
	// enforces on new topics (1 MiB): create it here, as the other Kafka
	// trials do; the workload's CreateTopics then finds it.
	if err := createSmallSegmentTopic(dir); err != nil {
		t.verifyBad++
		t.notef("create topic: %v", err)
		return
	}
	srv, addr, err := e.serve(dir, diag)
	if err != nil {
		t.verifyBad++
		t.notef("%v", err)
		return
	}
	w := &kafkaWork{addr: addr, sink: lg, diag: diag, tag: e.tag() + "a", rng: rand.New(rand.NewPCG(e.rng.Uint64(), 8))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.run(ctx) }()
	if !waitAcked(lg, 30*time.Second) {
		t.verifyBad++
		t.notef("no produce acknowledged in 30 s")
	}
	e.sleep(0, 400*time.Millisecond)
	srv.Process.Kill()
	srv.Wait()
	cancel()
	if err := <-done; err != nil {
		t.notef("workload before the kill: %v", err)
	}
	lg.Fault()
	t.faults++
	lg.Resume(nil)
	if srv, addr, err = e.serve(dir, diag); err != nil {
		t.verifyBad++
		t.notef("restart after kill -9: %v", err)
		return
	}
	w = &kafkaWork{addr: addr, sink: lg, diag: diag, tag: e.tag() + "b", rng: rand.New(rand.NewPCG(e.rng.Uint64(), 9))}
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	err = w.run(ctx)
	cancel()
	if err != nil {
		t.verifyBad++
		t.notef("workload after kill -9: %v", err)
	}
	srv.Process.Signal(syscall.SIGTERM)
	if err := srv.Wait(); err != nil {
		t.verifyBad++
		t.notef("passbook serve after SIGTERM: %v", err)
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

// inProcess serves db over the Kafka protocol in this process.
func inProcess(db *passbook.DB, diag *diagLog) (*kafka.Server, string, error) {
	ks, err := kafka.NewServer(db, &kafka.Options{DefaultPartitions: partitions, Logger: diag.server()})
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	go ks.Serve(context.Background(), ln)
	return ks, ln.Addr().String(), nil
}

// powerLossKafka serves a DB on a MemFS in this process to the Kafka
// workload, cuts the power at a random moment — under the logs and the
// offset store alike (offsets.db and its WAL on the same MemFS, with
// passbook serve's SyncGroup), unsynced pages reaching the disk or not in
// any order — then, in half the trials, repairs what survived (as an
// operator would: a consumer group may have committed offsets of records
// that were not yet fsync'd, and so are gone), and in the others serves
// it again as it is (Open itself sets such commits to the head), briefly,
// and checks: no group's committed offset below a commit that was
// answered.
func (e *env) powerLossKafka() (t tally) {
	t.trials = 1
	diag := newDiagLog()
	defer diag.report(&t)
	dir := e.dir()
	defer os.RemoveAll(dir)
	mem := newMem(dir)
	opts := func(fsys vfs.FS) *passbook.Options {
		return &passbook.Options{FS: fsys, MinSegmentBytes: -1, Offsets: offsets.Options{FS: fsys, Synchronous: offsets.SyncGroup}}
	}
	db, err := passbook.Open(dir, opts(mem))
	if err != nil {
		t.verifyBad++
		t.notef("open: %v", err)
		return
	}
	ks, addr, err := inProcess(db, diag)
	if err != nil {
		t.verifyBad++
		t.notef("serve: %v", err)
		db.Close()
		return
	}
	lg := newLedger()
	lg.onRewind = diag.mark
	w := &kafkaWork{addr: addr, sink: lg, diag: diag, tag: e.tag() + "a", rng: rand.New(rand.NewPCG(e.rng.Uint64(), 10))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.run(ctx) }()
	if !waitAcked(lg, 30*time.Second) {
		t.verifyBad++
		t.notef("no produce acknowledged in 30 s")
	}
	e.sleep(0, 400*time.Millisecond)
	lg.Fault()
	crashed := mem.Crash(vfs.CrashOptions{Tear: true, Pages: true, Rand: rand.New(rand.NewPCG(e.rng.Uint64(), 11))})
	t.faults++
	ks.Close()
	cancel()
	<-done
	db.Close()
	if e.rng.IntN(2) == 0 {
		e.repairAfterPowerLoss(dir, crashed, lg, &t)
	}
	db, err = passbook.Open(dir, opts(crashed))
	if err != nil {
		t.verifyBad++
		t.notef("reopen after the power loss: %v", err)
		return
	}
	heads := []int64(nil)
	if v, err := view(db); err == nil {
		heads = v.head
	}
	lg.Resume(heads)
	if ks, addr, err = inProcess(db, diag); err == nil {
		w = &kafkaWork{addr: addr, sink: lg, diag: diag, tag: e.tag() + "b", rng: rand.New(rand.NewPCG(e.rng.Uint64(), 12))}
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		if err := w.run(ctx); err != nil {
			t.verifyBad++
			t.notef("workload after the power loss: %v", err)
		}
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		ks.Shutdown(sctx)
		scancel()
	}
	checkDB(db, dir, crashed, lg, true, &t)
	return t
}

// repairAfterPowerLoss runs passbook repair on dir and counts the
// committed offsets it finds past their partition's head.
func (e *env) repairAfterPowerLoss(dir string, fsys vfs.FS, lg *ledger, t *tally) {
	if _, err := fsys.Stat(layout.TopicsDir(dir)); err != nil && lg.ackCount() == 0 {
		return // the fault struck before the data directory was made
	}
	r, err := passbook.Repair(dir, checkOptions(dir, fsys))
	if err != nil {
		t.verifyBad++
		t.notef("repair after the power loss: %v", err)
		return
	}
	for _, a := range r.Actions {
		if a.What != "set offset" {
			continue
		}
		// Expected of an at-most-once consumer (it commits before it
		// processes, so before the record is durable) and of a Kafka
		// consumer group (the server serves records before their fsync);
		// not of the embedded at-least-once consumers, which process only
		// durable records.
		if strings.Contains(a.Detail, `consumer "before"`) || strings.Contains(a.Detail, `consumer "`+groupName+`"`) {
			t.pastHead++
		} else {
			t.committedAhead++
			t.notef("after a power loss: %s", a.Detail)
		}
	}
	for _, p := range r.AllProblems() {
		t.verifyBad++
		t.notef("repair after the power loss: %v", p)
	}
}

// diskErrorKafka serves a DB on a file system that fails one write or
// fsync to the Kafka workload, then checks the log reopened as it was
// and after a power loss that follows.
func (e *env) diskErrorKafka() (t tally) {
	t.trials = 1
	diag := newDiagLog()
	defer diag.report(&t)
	dir := e.dir()
	defer os.RemoveAll(dir)
	mem := newMem(dir)
	at := e.rng.IntN(max(int(e.ops), 200))
	faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: at, Kinds: vfs.OpWrite | vfs.OpSync | vfs.OpSyncDir, ShortWrite: e.rng.IntN(2) == 0})
	lg := newLedger()
	lg.onRewind = diag.mark
	db, err := passbook.Open(dir, &passbook.Options{FS: faulty, MinSegmentBytes: -1})
	if err == nil {
		if ks, addr, err := inProcess(db, diag); err == nil {
			w := &kafkaWork{addr: addr, sink: lg, diag: diag, tag: e.tag() + "a", rng: rand.New(rand.NewPCG(e.rng.Uint64(), 13))}
			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			if err := w.run(ctx); err != nil && !isDiskFault(err) && !errors.Is(err, context.DeadlineExceeded) {
				t.notef("workload with a disk fault: %v", err)
			}
			cancel()
			ks.Close()
		}
	}
	lg.Fault()
	crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(e.rng.Uint64(), 14))})
	if db != nil {
		db.Close()
	}
	if faulty.Ops() > at {
		t.faults++
	}
	if db, err := passbook.Open(dir, &passbook.Options{FS: mem, MinSegmentBytes: -1}); err != nil {
		t.verifyBad++
		t.notef("reopen after a disk fault: %v", err)
	} else {
		checkDB(db, dir, mem, lg, false, &t)
	}
	e.checkCrashed(dir, crashed, lg, &t)
	return t
}

// checkCrashed checks the log that survived a power loss after a disk
// fault (its figures not counted twice), once repaired.
func (e *env) checkCrashed(dir string, crashed vfs.FS, lg *ledger, t *tally) {
	e.repairAfterPowerLoss(dir, crashed, lg, t)
	db, err := passbook.Open(dir, &passbook.Options{FS: crashed, MinSegmentBytes: -1})
	if err != nil {
		t.verifyBad++
		t.notef("reopen after a disk fault and a power loss: %v", err)
		return
	}
	v, err := view(db)
	if err == nil {
		lg.Resume(v.head)
	}
	var u tally
	checkDB(db, dir, crashed, lg, true, &u)
	u.acked, u.processed = 0, 0 // counted once
	t.add(u)
}
