package kafka

// The transaction coordinator: Kafka's TransactionCoordinator for a
// cluster of one. See docs/transactions.md for the whole story.
//
// Each transactional id has a txnMeta: its producer id and epoch, its
// state, the partitions and groups of its ongoing transaction and the
// offsets that transaction commits. The states and their transitions
// are Kafka's:
//
//	Empty ──AddPartitions/AddOffsets──▶ Ongoing ──EndTxn(commit)──▶ PrepareCommit ──markers──▶ CompleteCommit
//	                                       │      ──EndTxn(abort)───▶ PrepareAbort  ──markers──▶ CompleteAbort
//	                                       └── timeout, InitProducerID (epoch fence) ─▶ PrepareAbort
//
// Complete* and Empty go back to Ongoing at the next AddPartitions. Every
// transition is written to the transaction log (txnstore.go) and
// fsync'd before it takes effect and before the request that caused it
// is answered. In Prepare* the decision is made: the markers are written
// to every partition of the transaction (storage.Log.AppendMarker,
// fsync'd), the committed offsets applied to the groups, and only then
// is Complete* written. A coordinator that restarts finds any
// transaction that was in Prepare* and writes its markers again (a
// marker for a producer with no open transaction on a partition changes
// nothing) and applies its offsets again (the same values), so a
// transaction ends the same way everywhere, however often the broker
// is killed.
//
// Locking: txnCoordinator.mu guards the maps; each txnMeta has an
// RWMutex. A transactional Produce holds its producer's read lock while
// it appends, so a transition out of Ongoing (which takes the write
// lock) waits for appends in progress and no batch of a transaction can
// land after its marker. Markers are written without the lock, with the
// state at Prepare* (requests meanwhile get CONCURRENT_TRANSACTIONS). Lock
// order: txnMeta.mu, then partitionProducers.mu, then the log's.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
)

const (
	defaultTransactionMaxTimeout = 15 * time.Minute // Kafka's transaction.max.timeout.ms
	defaultTransactionCheck      = 10 * time.Second // Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms
	coordinatorEpoch             = 0                // one coordinator, forever
	noEpoch                      = -1
	noProducerID                 = -1
)

type txnState int8

const (
	txnEmpty txnState = iota
	txnOngoing
	txnPrepareCommit
	txnPrepareAbort
	txnCompleteCommit
	txnCompleteAbort
)

// Kafka's names, as DescribeTransactions and ListTransactions report
// them and the transaction log stores them.
var txnStateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"}

func (s txnState) String() string { return txnStateNames[s] }

func parseTxnState(name string) (txnState, bool) {
	for i, n := range txnStateNames {
		if n == name {
			return txnState(i), true
		}
	}
	return 0, false
}

func (s txnState) preparing() bool { return s == txnPrepareCommit || s == txnPrepareAbort }

// txnError is a coordinator refusal: a Kafka error code and why.
type txnError struct {
	code *kerr.Error
	msg  string
}

func (e *txnError) Error() string { return e.code.Message + ": " + e.msg }

func txnErr(code *kerr.Error, format string, args ...any) *txnError {
	return &txnError{code: code, msg: fmt.Sprintf(format, args...)}
}

// txnMeta is one transactional id's state.
type txnMeta struct {
	id string

	mu        sync.RWMutex
	pid       int64
	prevPID   int64 // before the last rotation (an exhausted epoch)
	epoch     int16 // noEpoch until the first InitProducerID
	lastEpoch int16 // before the last bump, for a retried InitProducerID
	state     txnState
	timeout   time.Duration
	start     time.Time // of the ongoing transaction
	updated   time.Time
	parts     map[partitionKey]bool
	groups    map[string]bool
	offsets   map[offsets.Key]txnOffset
	writing   bool // markers being written (state is Prepare*)
}

func (m *txnMeta) recordLocked() txnRecord {
	r := txnRecord{ID: m.id, ProducerID: m.pid, PrevProducerID: m.prevPID, Epoch: m.epoch, LastEpoch: m.lastEpoch,
		State: m.state.String(), TimeoutMs: int32(m.timeout / time.Millisecond), StartMs: -1, UpdatedMs: m.updated.UnixMilli()}
	if !m.start.IsZero() {
		r.StartMs = m.start.UnixMilli()
	}
	for k := range m.parts {
		r.Partitions = append(r.Partitions, txnPartition{Topic: k.topic, Partition: k.partition})
	}
	sort.Slice(r.Partitions, func(i, j int) bool {
		a, b := r.Partitions[i], r.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	for g := range m.groups {
		r.Groups = append(r.Groups, g)
	}
	slices.Sort(r.Groups)
	for _, o := range m.offsets {
		r.Offsets = append(r.Offsets, o)
	}
	sort.Slice(r.Offsets, func(i, j int) bool {
		a, b := r.Offsets[i], r.Offsets[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return r
}

func metaFromRecord(r txnRecord) (*txnMeta, error) {
	st, ok := parseTxnState(r.State)
	if !ok {
		return nil, fmt.Errorf("%w: transactional id %q in unknown state %q", errTxnStoreCorrupt, r.ID, r.State)
	}
	m := &txnMeta{id: r.ID, pid: r.ProducerID, prevPID: r.PrevProducerID, epoch: r.Epoch, lastEpoch: r.LastEpoch,
		state: st, timeout: time.Duration(r.TimeoutMs) * time.Millisecond, updated: time.UnixMilli(r.UpdatedMs)}
	if r.StartMs >= 0 {
		m.start = time.UnixMilli(r.StartMs)
	}
	m.parts = map[partitionKey]bool{}
	for _, p := range r.Partitions {
		m.parts[partitionKey{p.Topic, p.Partition}] = true
	}
	m.groups = map[string]bool{}
	for _, g := range r.Groups {
		m.groups[g] = true
	}
	m.offsets = map[offsets.Key]txnOffset{}
	for _, o := range r.Offsets {
		m.offsets[offsets.Key{Consumer: o.Group, Topic: o.Topic, Partition: o.Partition}] = o
	}
	return m, nil
}

// txnCoordinator is the server's transaction coordinator.
type txnCoordinator struct {
	db         *passbook.DB
	producers  *producerStates
	store      *txnStore
	offsets    offsets.Store
	log        *slog.Logger
	maxTimeout time.Duration
	newID      func(context.Context) (int64, error)

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu struct {
		sync.Mutex
		byID  map[string]*txnMeta
		byPID map[int64]*txnMeta
	}
}

// newTxnCoordinator opens the transaction log in db's directory and
// finishes every transaction it finds in Prepare*: their markers are
// written and their offsets applied before the server answers anyone.
func newTxnCoordinator(db *passbook.DB, producers *producerStates, o *Options) (*txnCoordinator, error) {
	st, recs, err := openTxnStore(vfs.OS(), db.Dir())
	if err != nil {
		return nil, err
	}
	tc := &txnCoordinator{db: db, producers: producers, store: st, offsets: db.Offsets(), log: o.Logger,
		maxTimeout: o.TransactionMaxTimeout, stop: make(chan struct{}), done: make(chan struct{})}
	tc.newID = func(ctx context.Context) (int64, error) {
		return db.Offsets().NextID(ctx, offsets.KafkaProducerIDSequence)
	}
	tc.mu.byID = map[string]*txnMeta{}
	tc.mu.byPID = map[int64]*txnMeta{}
	for _, r := range recs {
		m, err := metaFromRecord(r)
		if err != nil {
			st.close()
			return nil, err
		}
		tc.mu.byID[m.id] = m
		tc.mu.byPID[m.pid] = m
	}
	recovered := 0
	for _, m := range tc.mu.byID {
		if m.state.preparing() {
			m.writing = true
			tc.complete(m)
			recovered++
		}
	}
	if len(recs) > 0 {
		tc.log.Info("kafka: transaction coordinator loaded", "transactional_ids", len(recs), "finished", recovered)
	}
	if st.needsCompaction() {
		tc.compact()
	}
	go tc.run(o.TransactionCheckInterval)
	return tc, nil
}

func (tc *txnCoordinator) close() {
	tc.stopOnce.Do(func() { close(tc.stop) })
	<-tc.done
	tc.store.close()
}

// run aborts the transactions open longer than their timeout, and
// retries markers whose writing failed, every interval.
func (tc *txnCoordinator) run(interval time.Duration) {
	defer close(tc.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-tc.stop:
			return
		case <-t.C:
			tc.sweep(time.Now())
		}
	}
}

// sweep is one round of run.
func (tc *txnCoordinator) sweep(now time.Time) {
	for _, m := range tc.all() {
		m.mu.Lock()
		switch {
		case m.state == txnOngoing && now.Sub(m.start) > m.timeout:
			tc.log.Warn("kafka: aborting a transaction open longer than its timeout (transaction.timeout.ms); its producer is fenced",
				"transactional_id", m.id, "producer", m.pid, "epoch", m.epoch, "timeout", m.timeout, "open", now.Sub(m.start).Round(time.Millisecond))
			if err := tc.fenceLocked(m); err != nil {
				m.mu.Unlock()
				continue
			}
			m.mu.Unlock()
			tc.complete(m)
		case m.state.preparing() && !m.writing:
			m.writing = true
			m.mu.Unlock()
			tc.complete(m)
		default:
			m.mu.Unlock()
		}
	}
	if tc.store.needsCompaction() {
		tc.compact()
	}
}

func (tc *txnCoordinator) all() []*txnMeta {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	out := make([]*txnMeta, 0, len(tc.mu.byID))
	for _, m := range tc.mu.byID {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// compact rewrites the transaction log with the current states, each
// id's lock held so that no transition races it.
func (tc *txnCoordinator) compact() {
	metas := tc.all()
	recs := make([]txnRecord, 0, len(metas))
	for _, m := range metas {
		m.mu.Lock()
		defer m.mu.Unlock()
		recs = append(recs, m.recordLocked())
	}
	if err := tc.store.compact(recs); err != nil {
		tc.log.Warn("kafka: compacting the transaction log failed", "err", err)
	}
}

func (tc *txnCoordinator) byID(id string) *txnMeta {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.mu.byID[id]
}

func (tc *txnCoordinator) byPID(pid int64) *txnMeta {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.mu.byPID[pid]
}

// persistLocked writes m's state; on failure it restores the state
// saved, so that memory never says what the log does not.
func (tc *txnCoordinator) persistLocked(m *txnMeta, saved txnRecord) error {
	return tc.persist(m, saved, true)
}

// persist is persistLocked, waiting for the fsync only with sync.
func (tc *txnCoordinator) persist(m *txnMeta, saved txnRecord, sync bool) error {
	m.updated = time.Now()
	r := m.recordLocked()
	if err := tc.store.put(&r, sync); err != nil {
		tc.log.Error("kafka: writing the transaction log failed; transactions are refused until the server restarts", "transactional_id", m.id, "err", err)
		old, _ := metaFromRecord(saved)
		m.pid, m.prevPID, m.epoch, m.lastEpoch, m.state = old.pid, old.prevPID, old.epoch, old.lastEpoch, old.state
		m.timeout, m.start, m.updated, m.parts, m.groups, m.offsets = old.timeout, old.start, old.updated, old.parts, old.groups, old.offsets
		return txnErr(kerr.CoordinatorNotAvailable, "the transaction log cannot be written: %v", err)
	}
	return nil
}

// initProducer is InitProducerID with a transactional id (Kafka's
// handleInitProducerId and prepareInitProducerIdTransit). expectPID and
// expectEpoch are −1 unless the producer asks to bump its own epoch
// (KIP-360).
func (tc *txnCoordinator) initProducer(ctx context.Context, id string, timeoutMs int32, expectPID int64, expectEpoch int16) (int64, int16, error) {
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > tc.maxTimeout {
		return 0, 0, txnErr(kerr.InvalidTransactionTimeout, "transaction.timeout.ms %d is not in (0, %d] (the broker's transaction.max.timeout.ms)",
			timeoutMs, tc.maxTimeout.Milliseconds())
	}
	m := tc.byID(id)
	if m == nil {
		pid, err := tc.newID(ctx)
		if err != nil {
			return 0, 0, err
		}
		tc.mu.Lock()
		if m = tc.mu.byID[id]; m == nil { // else another request made it meanwhile: pid is never used
			m = &txnMeta{id: id, pid: pid, prevPID: noProducerID, epoch: noEpoch, lastEpoch: noEpoch, state: txnEmpty,
				parts: map[partitionKey]bool{}, groups: map[string]bool{}, offsets: map[offsets.Key]txnOffset{}}
			tc.mu.byID[id] = m
			tc.mu.byPID[pid] = m
		}
		tc.mu.Unlock()
	}
	m.mu.Lock()
	if m.writing || m.state.preparing() {
		m.mu.Unlock()
		return 0, 0, txnErr(kerr.ConcurrentTransactions, "transactional id %q is completing a transaction", id)
	}
	expect := expectPID >= 0 && expectEpoch >= 0
	if expect && !(m.epoch == noEpoch || expectPID == m.pid || expectPID == m.prevPID && epochExhausted(expectEpoch)) {
		m.mu.Unlock()
		return 0, 0, txnErr(kerr.ProducerFenced, "producer %d is not transactional id %q's (%d)", expectPID, id, m.pid)
	}
	saved := m.recordLocked()
	switch m.state {
	case txnOngoing:
		// Fence the producer and abort its transaction; the client is
		// told to retry, and its retry bumps the epoch again, as Kafka.
		if err := tc.fenceLocked(m); err != nil {
			m.mu.Unlock()
			return 0, 0, err
		}
		m.mu.Unlock()
		tc.complete(m)
		return 0, 0, txnErr(kerr.ConcurrentTransactions, "transactional id %q's ongoing transaction was aborted; retry", id)
	default: // Empty, CompleteCommit, CompleteAbort
		if epochExhausted(m.epoch) && (!expect || expectEpoch == m.epoch) {
			pid, err := tc.newID(ctx)
			if err != nil {
				m.mu.Unlock()
				return 0, 0, err
			}
			// Kafka's prepareProducerIdRotation: a KIP-360 caller's
			// retry (the old id, the exhausted epoch) gets the new id.
			last := int16(noEpoch)
			if expect {
				last = m.epoch
			}
			m.prevPID, m.pid, m.epoch, m.lastEpoch = m.pid, pid, 0, last
		} else {
			switch {
			case !expect:
				m.epoch, m.lastEpoch = m.epoch+1, noEpoch
			case m.epoch == noEpoch || expectEpoch == m.epoch:
				m.epoch, m.lastEpoch = m.epoch+1, m.epoch
			case expectEpoch == m.lastEpoch:
				// A retry of a bump whose answer was lost: the same epoch.
			default:
				m.mu.Unlock()
				return 0, 0, txnErr(kerr.ProducerFenced, "epoch %d of producer %d is neither its current %d nor its last %d", expectEpoch, expectPID, m.epoch, m.lastEpoch)
			}
		}
		m.state, m.timeout, m.start = txnEmpty, time.Duration(timeoutMs)*time.Millisecond, time.Time{}
		clear(m.parts)
		clear(m.groups)
		clear(m.offsets)
		if err := tc.persistLocked(m, saved); err != nil {
			m.mu.Unlock()
			return 0, 0, err
		}
		pid, epoch := m.pid, m.epoch
		m.mu.Unlock()
		if saved.ProducerID != pid {
			tc.mu.Lock()
			tc.mu.byPID[pid] = m
			tc.mu.Unlock()
		}
		return pid, epoch, nil
	}
}

// epochExhausted is Kafka's isEpochExhausted: the epoch after it would
// leave no room for the fence of a timed-out transaction.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// fenceLocked bumps m's epoch, so that its producer can no longer
// write, and moves its ongoing transaction to PrepareAbort; the caller
// then calls complete once it has let go of the lock.
func (tc *txnCoordinator) fenceLocked(m *txnMeta) error {
	saved := m.recordLocked()
	if m.epoch < math.MaxInt16 {
		m.epoch++
	}
	m.lastEpoch = noEpoch
	m.state = txnPrepareAbort
	if err := tc.persistLocked(m, saved); err != nil {
		return err
	}
	m.writing = true
	return nil
}

// check finds id's metadata and checks the producer id and epoch of a
// request, with m.mu held (write-locked) on success.
func (tc *txnCoordinator) lockFor(id string, pid int64, epoch int16) (*txnMeta, error) {
	m := tc.byID(id)
	if m == nil {
		return nil, txnErr(kerr.InvalidProducerIDMapping, "transactional id %q has no producer id: call InitProducerID first", id)
	}
	m.mu.Lock()
	switch {
	case m.pid != pid:
		m.mu.Unlock()
		return nil, txnErr(kerr.InvalidProducerIDMapping, "producer %d is not transactional id %q's (%d)", pid, id, m.pid)
	case m.epoch != epoch:
		m.mu.Unlock()
		return nil, txnErr(kerr.ProducerFenced, "producer %d's epoch %d is not the current %d: a newer producer took transactional id %q", pid, epoch, m.epoch, id)
	case m.writing || m.state.preparing():
		m.mu.Unlock()
		return nil, txnErr(kerr.ConcurrentTransactions, "transactional id %q is completing a transaction", id)
	}
	return m, nil
}

// addPartitions is AddPartitionsToTxn: the partitions join id's
// transaction, which begins if it had not.
func (tc *txnCoordinator) addPartitions(id string, pid int64, epoch int16, parts []partitionKey) error {
	m, err := tc.lockFor(id, pid, epoch)
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	if m.state == txnOngoing && !slices.ContainsFunc(parts, func(k partitionKey) bool { return !m.parts[k] }) {
		return nil
	}
	saved := m.recordLocked()
	tc.beginLocked(m)
	for _, k := range parts {
		m.parts[k] = true
	}
	return tc.persistLocked(m, saved)
}

// verifyPartitions is AddPartitionsToTxn's verify_only: whether each
// partition is in id's ongoing transaction.
func (tc *txnCoordinator) verifyPartitions(id string, pid int64, epoch int16, parts []partitionKey) ([]bool, error) {
	m, err := tc.lockFor(id, pid, epoch)
	if err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	in := make([]bool, len(parts))
	for i, k := range parts {
		in[i] = m.state == txnOngoing && m.parts[k]
	}
	return in, nil
}

// beginLocked makes m Ongoing, starting a transaction if it was not.
func (tc *txnCoordinator) beginLocked(m *txnMeta) {
	if m.state != txnOngoing {
		m.state, m.start = txnOngoing, time.Now()
		clear(m.parts)
		clear(m.groups)
		clear(m.offsets)
	}
}

// addGroup is AddOffsetsToTxn: the group's offsets join the transaction.
func (tc *txnCoordinator) addGroup(id string, pid int64, epoch int16, group string) error {
	m, err := tc.lockFor(id, pid, epoch)
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	if m.state == txnOngoing && m.groups[group] {
		return nil
	}
	saved := m.recordLocked()
	tc.beginLocked(m)
	m.groups[group] = true
	return tc.persistLocked(m, saved)
}

// commitOffsets is TxnOffsetCommit's part in the transaction: the
// offsets are held until the transaction ends. fence, run with the
// transaction's lock held, checks the group membership; a non-zero code
// refuses the whole request.
func (tc *txnCoordinator) commitOffsets(id string, pid int64, epoch int16, group string, offs []txnOffset, fence func() int16) (int16, error) {
	m, err := tc.lockFor(id, pid, epoch)
	if err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	if m.state != txnOngoing || !m.groups[group] {
		return 0, txnErr(kerr.InvalidTxnState, "group %q is not in transactional id %q's transaction: call AddOffsetsToTxn first", group, id)
	}
	if code := fence(); code != 0 {
		return code, nil
	}
	if len(offs) == 0 {
		return 0, nil
	}
	saved := m.recordLocked()
	for _, o := range offs {
		m.offsets[offsets.Key{Consumer: o.Group, Topic: o.Topic, Partition: o.Partition}] = o
	}
	return 0, tc.persistLocked(m, saved)
}

// end is EndTxn (Kafka's endTransaction, for clients before KIP-890's
// epoch bump): commit or abort id's ongoing transaction. It returns once
// the markers are written and, for a commit, the offsets applied.
func (tc *txnCoordinator) end(id string, pid int64, epoch int16, commit bool) error {
	m, err := tc.lockFor(id, pid, epoch)
	if err != nil {
		return err
	}
	what := map[bool]string{true: "commit", false: "abort"}[commit]
	switch {
	case m.state == txnOngoing:
	case m.state == txnCompleteCommit && commit, m.state == txnCompleteAbort && !commit:
		m.mu.Unlock()
		return nil // a retry
	default:
		st := m.state
		m.mu.Unlock()
		return txnErr(kerr.InvalidTxnState, "cannot %s transactional id %q's transaction in state %v", what, id, st)
	}
	saved := m.recordLocked()
	m.state = txnPrepareAbort
	if commit {
		m.state = txnPrepareCommit
	}
	if err := tc.persistLocked(m, saved); err != nil {
		m.mu.Unlock()
		return err
	}
	m.writing = true
	m.mu.Unlock()
	tc.complete(m)
	return nil
}

// complete writes the markers of m's transaction, in Prepare* with
// m.writing set, to each of its partitions, applies a commit's offsets,
// and records the Complete* state. If a marker cannot be written, m
// stays in Prepare* and the next sweep tries again: the decision is
// durable, so the transaction ends the same way in the end.
func (tc *txnCoordinator) complete(m *txnMeta) {
	m.mu.RLock()
	commit := m.state == txnPrepareCommit
	pid, epoch := m.pid, m.epoch
	parts := make([]partitionKey, 0, len(m.parts))
	for k := range m.parts {
		parts = append(parts, k)
	}
	var offs []offsets.Entry
	if commit {
		for _, o := range m.offsets {
			offs = append(offs, offsets.Entry{Key: offsets.Key{Consumer: o.Group, Topic: o.Topic, Partition: o.Partition}, Offset: o.Offset, Metadata: o.Metadata})
		}
	}
	m.mu.RUnlock()
	sort.Slice(parts, func(i, j int) bool {
		return parts[i].topic < parts[j].topic || parts[i].topic == parts[j].topic && parts[i].partition < parts[j].partition
	})
	typ := storage.ControlAbort
	if commit {
		typ = storage.ControlCommit
	}
	failed := func(what string, err error) {
		tc.log.Warn("kafka: finishing a transaction failed; retrying at the next check", "transactional_id", m.id, "step", what, "err", err)
		m.mu.Lock()
		m.writing = false
		m.mu.Unlock()
	}
	// The markers are written one after the other, then made durable
	// together: each partition's fsync runs at once with the others'.
	type written struct {
		k   partitionKey
		l   *storage.Log
		end int64
	}
	var durable []written
	for _, k := range parts {
		t, err := tc.db.Topic(k.topic)
		if err != nil {
			if errors.Is(err, passbook.ErrUnknownTopic) {
				continue // deleted since: nowhere to write, nothing to end
			}
			failed("marker", fmt.Errorf("%s/%d: %w", k.topic, k.partition, err))
			return
		}
		l, err := t.Partition(k.partition)
		if err != nil {
			if errors.Is(err, passbook.ErrUnknownPartition) {
				continue
			}
			failed("marker", fmt.Errorf("%s/%d: %w", k.topic, k.partition, err))
			return
		}
		at, err := l.AppendMarker(storage.Marker{ProducerID: pid, ProducerEpoch: epoch, Type: typ, CoordinatorEpoch: coordinatorEpoch}, storage.InOS)
		if errors.Is(err, storage.ErrProducerFenced) {
			// The partition holds a newer epoch's transaction: this
			// one's batches there were ended by a newer marker.
			continue
		}
		if err != nil {
			failed("marker", fmt.Errorf("%s/%d: %w", k.topic, k.partition, err))
			return
		}
		durable = append(durable, written{k, l, at + 1})
	}
	errs := make([]error, len(durable))
	var wg sync.WaitGroup
	for i, w := range durable {
		wg.Go(func() { errs[i] = w.l.WaitDurable(w.end, storage.Fsync) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			failed("marker fsync", fmt.Errorf("%s/%d: %w", durable[i].k.topic, durable[i].k.partition, err))
			return
		}
	}
	if len(offs) > 0 {
		if err := tc.offsets.CommitEntries(context.Background(), offs); err != nil {
			failed("offsets", err)
			return
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	saved := m.recordLocked()
	m.state = txnCompleteAbort
	if commit {
		m.state = txnCompleteCommit
	}
	clear(m.parts)
	clear(m.groups)
	clear(m.offsets)
	// Complete* of a transaction without offsets is written without
	// waiting for an fsync of its own (the next state's covers it): lost
	// to a power cut, the transaction is found in Prepare* at the next
	// start and ended again the same way. One with offsets waits: applied
	// again after a power cut, they could undo a commit made since.
	if err := tc.persist(m, saved, len(offs) > 0); err != nil {
		m.writing = false // still Prepare*: the next sweep, or the next start, finishes it
		return
	}
	m.writing = false
}

// checkProduce is the coordinator's part in a transactional Produce: the
// batch's producer must have the current epoch of a transactional id
// whose ongoing transaction holds the partition. On success the
// producer's read lock is held: release it once the batch is appended.
func (tc *txnCoordinator) checkProduce(topic string, part int32, pid int64, epoch int16) (release func(), err error) {
	m := tc.byPID(pid)
	if m == nil {
		return nil, fmt.Errorf("%w: producer %d has no transactional id", errTxnState, pid)
	}
	m.mu.RLock()
	switch {
	case m.pid != pid:
		m.mu.RUnlock()
		return nil, fmt.Errorf("%w: producer %d was replaced by %d", errProducerEpoch, pid, m.pid)
	case epoch != m.epoch:
		m.mu.RUnlock()
		return nil, fmt.Errorf("%w: batch epoch %d, transactional id %q is at %d", errProducerEpoch, epoch, m.id, m.epoch)
	case m.state != txnOngoing || !m.parts[partitionKey{topic, part}]:
		m.mu.RUnlock()
		return nil, fmt.Errorf("%w: %s/%d is not in transactional id %q's ongoing transaction (AddPartitionsToTxn first)", errTxnState, topic, part, m.id)
	}
	return m.mu.RUnlock, nil
}

// unstable returns the partitions of group whose offsets an ongoing or
// completing transaction holds (KIP-447's unstable offsets).
func (tc *txnCoordinator) unstable(group string) map[partitionKey]bool {
	var out map[partitionKey]bool
	for _, m := range tc.all() {
		m.mu.RLock()
		if m.state == txnOngoing || m.state.preparing() {
			for k := range m.offsets {
				if k.Consumer == group {
					if out == nil {
						out = map[partitionKey]bool{}
					}
					out[partitionKey{k.Topic, k.Partition}] = true
				}
			}
		}
		m.mu.RUnlock()
	}
	return out
}

// txnSummary is what DescribeTransactions and ListTransactions report.
type txnSummary struct {
	id        string
	pid       int64
	epoch     int16
	state     txnState
	timeoutMs int32
	start     time.Time
	parts     []partitionKey
}

func (tc *txnCoordinator) summaries() []txnSummary {
	var out []txnSummary
	for _, m := range tc.all() {
		m.mu.RLock()
		if m.epoch == noEpoch {
			m.mu.RUnlock()
			continue // never initialized
		}
		s := txnSummary{id: m.id, pid: m.pid, epoch: m.epoch, state: m.state, timeoutMs: int32(m.timeout / time.Millisecond), start: m.start}
		for k := range m.parts {
			s.parts = append(s.parts, k)
		}
		m.mu.RUnlock()
		sort.Slice(s.parts, func(i, j int) bool {
			return s.parts[i].topic < s.parts[j].topic || s.parts[i].topic == s.parts[j].topic && s.parts[i].partition < s.parts[j].partition
		})
		out = append(out, s)
	}
	return out
}

// stateOf is the state of id (Empty if unknown).
func (tc *txnCoordinator) stateOf(id string) txnState {
	m := tc.byID(id)
	if m == nil {
		return txnEmpty
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.state
}

// txnCode is the error code of a coordinator error.
func txnCode(err error) int16 {
	var te *txnError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &te):
		return te.code.Code
	case errors.Is(err, offsets.ErrClosed), errors.Is(err, offsets.ErrUnavailable), errors.Is(err, context.Canceled):
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.UnknownServerError.Code
}

// fencedCode is PRODUCER_FENCED as a request version knows it: before
// KIP-588 (InitProducerID v4, AddPartitionsToTxn, AddOffsetsToTxn and
// EndTxn v2, TxnOffsetCommit v3) it was INVALID_PRODUCER_EPOCH.
func fencedCode(code int16, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
