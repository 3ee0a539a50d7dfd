package kafka

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnClient is a franz-go transactional producer of id.
func (ts *testServer) txnClient(t testing.TB, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return ts.client(t, append([]kgo.Opt{kgo.TransactionalID(id), kgo.TransactionTimeout(time.Minute),
		kgo.RecordRetries(3), kgo.RequestRetries(5)}, opts...)...)
}

// produceTxn produces n records to topic in one transaction and ends it.
func produceTxn(t testing.TB, cl *kgo.Client, topic string, n int, commit bool) error {
	t.Helper()
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			cl.EndTransaction(ctx, kgo.TryAbort)
			return err
		}
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

func describeTxn(t testing.TB, ts *testServer, id string) kadm.DescribedTransaction {
	t.Helper()
	adm := kadm.NewClient(ts.client(t))
	d, err := adm.DescribeTransactions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.On(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Err != nil {
		t.Fatalf("describe %s: %v", id, got.Err)
	}
	return got
}

// A committed transaction's records are stable (the LSO reaches the
// head, markers included); an aborted one's too, and DescribeTransactions
// follows the state machine.
func TestTxn_CommitAndAbort(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "out", 2)
	cl := ts.txnClient(t, "etl")

	if err := produceTxn(t, cl, "out", 10, true); err != nil {
		t.Fatal(err)
	}
	d := describeTxn(t, ts, "etl")
	if d.State != "CompleteCommit" || d.ProducerEpoch != 0 || len(d.Topics) != 0 {
		t.Fatalf("after commit: %+v", d)
	}
	if err := produceTxn(t, cl, "out", 5, false); err != nil {
		t.Fatal(err)
	}
	if d := describeTxn(t, ts, "etl"); d.State != "CompleteAbort" {
		t.Fatalf("after abort: %+v", d)
	}
	total := int64(0)
	for p := range int32(2) {
		l, err := topic.Partition(p)
		if err != nil {
			t.Fatal(err)
		}
		if lso, head := l.LastStableOffset(), l.Head(); lso != head {
			t.Errorf("partition %d: LSO %d, head %d: a transaction is still open", p, lso, head)
		}
		if open := l.OpenTxns(); len(open) != 0 {
			t.Errorf("partition %d: open transactions %+v", p, open)
		}
		total += l.Head()
	}
	// 15 records, and a marker per partition per transaction that
	// wrote to it.
	if total < 15+2 || total > 15+4 {
		t.Errorf("%d offsets used, want 15 records and 2 to 4 markers", total)
	}
}

// A second producer with the same transactional id fences the first:
// the first can neither produce nor commit, and its open transaction is
// aborted.
func TestTxn_ZombieFenced(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "out", 1)
	ctx := context.Background()
	zombie := ts.txnClient(t, "etl")
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := ts.txnClient(t, "etl")
	if err := produceTxn(t, fresh, "out", 3, true); err != nil {
		t.Fatalf("the new producer: %v", err)
	}
	err := zombie.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("zombie again")}).FirstErr()
	if err == nil {
		err = zombie.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the zombie: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	d := describeTxn(t, ts, "etl")
	if d.State != "CompleteCommit" || d.ProducerEpoch < 1 {
		t.Fatalf("after the new producer's commit: %+v", d)
	}
}

// The coordinator's answers, request by request, as Kafka gives them.
func TestTxn_StateMachine(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "out", 1)
	rc := dialRaw(t, ts.addr)

	initPID := func(version int16, id string, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = version, kmsg.StringPtr(id), timeoutMs, pid, epoch
		return rc.do(req).(*kmsg.InitProducerIDResponse)
	}
	addParts := func(version int16, id string, pid int64, epoch int16, topic string, parts ...int32) []int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, id, pid, epoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, parts
		req.Topics = append(req.Topics, rt)
		resp := rc.do(req).(*kmsg.AddPartitionsToTxnResponse)
		var codes []int16
		for _, p := range resp.Topics[0].Partitions {
			codes = append(codes, p.ErrorCode)
		}
		return codes
	}
	endTxn := func(version int16, id string, pid int64, epoch int16, commit bool) int16 {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, id, pid, epoch, commit
		return rc.do(req).(*kmsg.EndTxnResponse).ErrorCode
	}
	code := func(what string, got int16, want *kerr.Error) {
		t.Helper()
		wantErrCode(t, what, got, want)
	}

	code("a timeout of 0", initPID(4, "a", 0, -1, -1).ErrorCode, kerr.InvalidTransactionTimeout)
	code("a timeout over transaction.max.timeout.ms", initPID(4, "a", int32((16*time.Minute).Milliseconds()), -1, -1).ErrorCode, kerr.InvalidTransactionTimeout)
	code("an empty transactional id", initPID(4, "", 1000, -1, -1).ErrorCode, kerr.InvalidRequest)

	first := initPID(4, "a", 60_000, -1, -1)
	code("the first InitProducerID", first.ErrorCode, nil)
	if first.ProducerEpoch != 0 {
		t.Fatalf("first epoch %d, want 0", first.ProducerEpoch)
	}
	pid := first.ProducerID
	second := initPID(4, "a", 60_000, -1, -1)
	if second.ErrorCode != 0 || second.ProducerID != pid || second.ProducerEpoch != 1 {
		t.Fatalf("a second InitProducerID: %+v, want producer %d epoch 1", second, pid)
	}
	code("KIP-360: a bump with the current id and epoch", initPID(4, "a", 60_000, pid, 1).ErrorCode, nil)
	code("KIP-360: a retry of that bump", initPID(4, "a", 60_000, pid, 1).ErrorCode, nil)
	code("KIP-360: a fenced epoch", initPID(4, "a", 60_000, pid, 0).ErrorCode, kerr.ProducerFenced)
	code("KIP-360: another producer id", initPID(4, "a", 60_000, pid+1000, 0).ErrorCode, kerr.ProducerFenced)
	epoch := int16(2)

	code("EndTxn with no transaction", endTxn(3, "a", pid, epoch, true), kerr.InvalidTxnState)
	code("AddPartitionsToTxn for an id never initialized", addParts(3, "nobody", pid, epoch, "out", 0)[0], kerr.InvalidProducerIDMapping)
	code("AddPartitionsToTxn with another producer id", addParts(3, "a", pid+1, epoch, "out", 0)[0], kerr.InvalidProducerIDMapping)
	code("AddPartitionsToTxn v3 with an old epoch", addParts(3, "a", pid, epoch-1, "out", 0)[0], kerr.ProducerFenced)
	code("AddPartitionsToTxn v1 with an old epoch", addParts(1, "a", pid, epoch-1, "out", 0)[0], kerr.InvalidProducerEpoch)
	codes := addParts(3, "a", pid, epoch, "out", 0, 7)
	code("AddPartitionsToTxn: a partition that does not exist", codes[1], kerr.UnknownTopicOrPartition)
	code("AddPartitionsToTxn: the other is not attempted", codes[0], kerr.OperationNotAttempted)
	code("AddPartitionsToTxn: an unknown topic", addParts(3, "a", pid, epoch, "nowhere", 0)[0], kerr.UnknownTopicOrPartition)
	code("EndTxn still has no transaction", endTxn(3, "a", pid, epoch, false), kerr.InvalidTxnState)

	code("AddPartitionsToTxn", addParts(3, "a", pid, epoch, "out", 0)[0], nil)
	code("AddPartitionsToTxn again", addParts(3, "a", pid, epoch, "out", 0)[0], nil)
	if d := describeTxn(t, ts, "a"); d.State != "Ongoing" || len(d.Topics) != 1 {
		t.Fatalf("after AddPartitionsToTxn: %+v", d)
	}
	code("EndTxn v1 with an old epoch", endTxn(1, "a", pid, epoch-1, true), kerr.InvalidProducerEpoch)
	code("EndTxn v3 with an old epoch", endTxn(3, "a", pid, epoch-1, true), kerr.ProducerFenced)
	code("EndTxn commit", endTxn(3, "a", pid, epoch, true), nil)
	code("EndTxn commit, retried", endTxn(3, "a", pid, epoch, true), nil)
	code("EndTxn abort after the commit", endTxn(3, "a", pid, epoch, false), kerr.InvalidTxnState)

	// InitProducerID during a transaction aborts it first.
	code("AddPartitionsToTxn, a second transaction", addParts(3, "a", pid, epoch, "out", 0)[0], nil)
	code("InitProducerID while it is open", initPID(4, "a", 60_000, -1, -1).ErrorCode, kerr.ConcurrentTransactions)
	if d := describeTxn(t, ts, "a"); d.State != "CompleteAbort" || d.ProducerEpoch != epoch+1 {
		t.Fatalf("after the fence: %+v, want CompleteAbort at epoch %d", d, epoch+1)
	}
	retry := initPID(4, "a", 60_000, -1, -1)
	if retry.ErrorCode != 0 || retry.ProducerEpoch != epoch+2 {
		t.Fatalf("the retry: %+v, want epoch %d", retry, epoch+2)
	}
	code("the fenced producer's EndTxn", endTxn(3, "a", pid, epoch, true), kerr.ProducerFenced)
	code("InitProducerID v3's fenced error", initPID(3, "a", 60_000, pid, epoch).ErrorCode, kerr.InvalidProducerEpoch)
}

// AddPartitionsToTxn v4+: several transactions at once, verify_only,
// and only for brokers (ClusterAction; everything is allowed here).
func TestTxn_AddPartitionsBatched(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "out", 2)
	rc := dialRaw(t, ts.addr)
	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.Version, initReq.TransactionalID, initReq.TransactionTimeoutMillis = 4, kmsg.StringPtr("b"), 60_000
	ip := rc.do(initReq).(*kmsg.InitProducerIDResponse)
	if ip.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(ip.ErrorCode))
	}
	send := func(verify bool, parts ...int32) []int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 5
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "b", ip.ProducerID, ip.ProducerEpoch, verify
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "out", parts
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		resp := rc.do(req).(*kmsg.AddPartitionsToTxnResponse)
		if resp.ErrorCode != 0 || len(resp.Transactions) != 1 {
			t.Fatalf("v5: %+v", resp)
		}
		var codes []int16
		for _, p := range resp.Transactions[0].Topics[0].Partitions {
			codes = append(codes, p.ErrorCode)
		}
		return codes
	}
	wantErrCode(t, "verify before adding", send(true, 0)[0], kerr.InvalidTxnState)
	wantErrCode(t, "add", send(false, 0)[0], nil)
	codes := send(true, 0, 1)
	wantErrCode(t, "verify the added partition", codes[0], nil)
	wantErrCode(t, "verify one not added", codes[1], kerr.InvalidTxnState)
}

// A transactional batch goes only to a partition of its producer's
// ongoing transaction, from its current epoch.
func TestTxn_ProduceChecks(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "out", 2)
	ctx := context.Background()
	cl := ts.txnClient(t, "p", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d := describeTxn(t, ts, "p")
	rc := dialRaw(t, ts.addr)
	produce := func(what string, part int32, epoch int16, seq int32, want *kerr.Error) {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 5000, kmsg.StringPtr("p")
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "out"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = part, txnBatch(t, d.ProducerID, epoch, seq, 1)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rc.do(req).(*kmsg.ProduceResponse)
		wantErrCode(t, what, resp.Topics[0].Partitions[0].ErrorCode, want)
	}
	produce("to a partition not added", 1, d.ProducerEpoch, 0, kerr.InvalidTxnState)
	produce("from an older epoch", 0, d.ProducerEpoch-1, 0, kerr.InvalidProducerEpoch)
	produce("to the partition added", 0, d.ProducerEpoch, 1, nil)
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	produce("after the commit", 0, d.ProducerEpoch, 2, kerr.InvalidTxnState)
}

// KIP-447: while a transaction holds a group's offsets, OffsetFetch with
// require_stable answers UNSTABLE_OFFSET_COMMIT for them; the offsets
// reach the group when the transaction commits, never when it aborts.
func TestTxn_OffsetsAndRequireStable(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "in", 1)
	ts.createTopic(t, "out", 1)
	ctx := context.Background()
	store := ts.db.Offsets()
	key := offsets.Key{Consumer: "g", Topic: "in", Partition: 0}
	if err := store.Commit(ctx, key, 5); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, ts.addr)
	fetch := func(stable bool) (int64, int16) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = 7, "g", stable
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "in", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := rc.do(req).(*kmsg.OffsetFetchResponse)
		p := resp.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	cl := ts.txnClient(t, "t")
	round := func(offset int64, commit bool) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		_ = adm
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		d := describeTxn(t, ts, "t")
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "t", d.ProducerID, d.ProducerEpoch, "g"
		if resp, err := req.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("AddOffsetsToTxn: %v %+v", err, resp)
		}
		oc := kmsg.NewPtrTxnOffsetCommitRequest()
		oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch, oc.Generation = "t", "g", d.ProducerID, d.ProducerEpoch, -1
		ot := kmsg.NewTxnOffsetCommitRequestTopic()
		ot.Topic = "in"
		op := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset = 0, offset
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
		resp, err := oc.RequestWith(ctx, cl)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("TxnOffsetCommit: %v %+v", err, resp)
		}
		if o, c := fetch(true); c != kerr.UnstableOffsetCommit.Code || o != -1 {
			t.Fatalf("require_stable during the transaction: offset %d, %v", o, kerr.ErrorForCode(c))
		}
		if o, c := fetch(false); c != 0 {
			t.Fatalf("without require_stable: offset %d, %v", o, kerr.ErrorForCode(c))
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	round(9, false)
	if o, c := fetch(true); c != 0 || o != 5 {
		t.Fatalf("after the abort: offset %d, %v; want 5", o, kerr.ErrorForCode(c))
	}
	round(12, true)
	if o, c := fetch(true); c != 0 || o != 12 {
		t.Fatalf("after the commit: offset %d, %v; want 12", o, kerr.ErrorForCode(c))
	}
}

// A transaction open longer than its timeout is aborted by the broker,
// which fences its producer.
func TestTxn_Timeout(t *testing.T) {
	ts := startServer(t, &Options{TransactionCheckInterval: 20 * time.Millisecond})
	topic := ts.createTopic(t, "out", 1)
	ctx := context.Background()
	cl := ts.txnClient(t, "slow", kgo.TransactionTimeout(200*time.Millisecond))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for describeTxn(t, ts, "slow").State != "CompleteAbort" {
		time.Sleep(20 * time.Millisecond)
	}
	l, _ := topic.Partition(0)
	if l.LastStableOffset() != l.Head() {
		t.Fatalf("after the timeout: LSO %d, head %d", l.LastStableOffset(), l.Head())
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the timed-out producer committed")
	}
}

// DescribeProducers, ListTransactions with its filters.
func TestTxn_ListAndDescribe(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "out", 1)
	ctx := context.Background()
	done := ts.txnClient(t, "done")
	if err := produceTxn(t, done, "out", 2, true); err != nil {
		t.Fatal(err)
	}
	open := ts.txnClient(t, "open")
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(ts.client(t))
	list := func(states []string, pids []int64) []string {
		t.Helper()
		got, err := adm.ListTransactions(ctx, pids, states)
		if err != nil {
			t.Fatal(err)
		}
		return got.TransactionalIDs()
	}
	if got := list(nil, nil); fmt.Sprint(got) != "[done open]" {
		t.Errorf("all: %v", got)
	}
	if got := list([]string{"Ongoing"}, nil); fmt.Sprint(got) != "[open]" {
		t.Errorf("Ongoing: %v", got)
	}
	openD := describeTxn(t, ts, "open")
	if got := list(nil, []int64{openD.ProducerID}); fmt.Sprint(got) != "[open]" {
		t.Errorf("by producer id: %v", got)
	}
	req := kmsg.NewPtrListTransactionsRequest()
	req.Version, req.DurationFilterMillis, req.StateFilters = 1, int64(time.Hour/time.Millisecond), []string{"Ongoing", "Bogus"}
	resp, err := req.RequestWith(ctx, ts.client(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransactionStates) != 0 || fmt.Sprint(resp.UnknownStateFilters) != "[Bogus]" {
		t.Errorf("open for over an hour: %+v", resp)
	}

	ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"out": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	ps.EachProducer(func(p kadm.DescribedProducer) {
		if p.ProducerID == openD.ProducerID {
			found = true
			if p.CurrentTxnStartOffset < 0 || p.CoordinatorEpoch != 0 {
				t.Errorf("the open transaction's producer: %+v", p)
			}
		}
	})
	if !found {
		t.Errorf("DescribeProducers does not name producer %d: %+v", openD.ProducerID, ps)
	}
}

// A broker that dies between writing one partition's marker and the
// next comes back and writes the rest, and applies the transaction's
// offsets: the transaction is committed everywhere. One that dies with a
// transaction open aborts it once its timeout passes.
func TestTxn_RecoveredAfterCrash(t *testing.T) {
	dir := t.TempDir()
	open := func(opts *Options) (*passbook.DB, *Server, *rawConn) {
		db, err := passbook.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(db, opts)
		if err != nil {
			t.Fatal(err)
		}
		ts := serveOn(t, db, srv)
		return db, srv, dialRaw(t, ts.addr)
	}
	db, srv, rc := open(nil)
	topic, err := db.CreateTopic("out", passbook.TopicConfig{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	begin := func(rc *rawConn, id string, timeoutMs int32) (int64, int16) {
		t.Helper()
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.Version, ip.TransactionalID, ip.TransactionTimeoutMillis = 4, kmsg.StringPtr(id), timeoutMs
		resp := rc.do(ip).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
		ap := kmsg.NewPtrAddPartitionsToTxnRequest()
		ap.Version, ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = 3, id, resp.ProducerID, resp.ProducerEpoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = "out", []int32{0, 1}
		ap.Topics = append(ap.Topics, rt)
		if c := rc.do(ap).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatal(kerr.ErrorForCode(c))
		}
		for p := range int32(2) {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 5000, kmsg.StringPtr(id)
			pt := kmsg.NewProduceRequestTopic()
			pt.Topic = "out"
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition, pp.Records = p, txnBatch(t, resp.ProducerID, resp.ProducerEpoch, 0, 3)
			pt.Partitions = append(pt.Partitions, pp)
			req.Topics = append(req.Topics, pt)
			if c := rc.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
				t.Fatal(kerr.ErrorForCode(c))
			}
		}
		return resp.ProducerID, resp.ProducerEpoch
	}

	// "committing": PrepareCommit is durable, the marker is on partition
	// 0 only, and the transaction commits offset 7 of group g.
	pid, epoch := begin(rc, "committing", 60_000)
	m := srv.txns.byID("committing")
	m.mu.Lock()
	saved := m.recordLocked()
	m.groups["g"] = true
	m.offsets[offsets.Key{Consumer: "g", Topic: "out", Partition: 0}] = txnOffset{Group: "g", Topic: "out", Partition: 0, Offset: 7}
	m.state = txnPrepareCommit
	if err := srv.txns.persistLocked(m, saved); err != nil {
		t.Fatal(err)
	}
	m.mu.Unlock()
	l0, _ := topic.Partition(0)
	if _, err := l0.AppendMarker(storage.Marker{ProducerID: pid, ProducerEpoch: epoch, Type: storage.ControlCommit}, storage.Fsync); err != nil {
		t.Fatal(err)
	}
	// "hung": open on both partitions, its producer gone.
	begin(rc, "hung", 300)
	srv.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, srv, _ = open(&Options{TransactionCheckInterval: 20 * time.Millisecond})
	defer db.Close()
	if st := srv.txns.stateOf("committing"); st != txnCompleteCommit {
		t.Fatalf("after the restart: %v, want CompleteCommit", st)
	}
	committed, err := db.Offsets().Committed(context.Background(), offsets.Key{Consumer: "g", Topic: "out", Partition: 0})
	if err != nil || committed != 7 {
		t.Fatalf("the transaction's offset: %d, %v; want 7", committed, err)
	}
	for srv.txns.stateOf("hung") != txnCompleteAbort {
		time.Sleep(20 * time.Millisecond)
	}
	topic, _ = db.Topic("out")
	for p := range int32(2) {
		l, _ := topic.Partition(p)
		if open := l.OpenTxns(); len(open) != 0 || l.LastStableOffset() != l.Head() {
			t.Errorf("partition %d: open %+v, LSO %d, head %d", p, open, l.LastStableOffset(), l.Head())
		}
		// The hung transaction's three records are aborted; the
		// committed one's are not.
		aborted := l.AbortedTxns(0, l.Head())
		if len(aborted) != 1 || aborted[0].ProducerID == pid {
			t.Errorf("partition %d: aborted %+v, want only the hung transaction", p, aborted)
		}
	}
}

// An epoch that reaches 32,766 rotates to a new producer id, which a
// KIP-360 retry of that rotation is given too; the old id is fenced.
func TestTxn_EpochExhausted(t *testing.T) {
	ts := startServer(t, nil)
	rc := dialRaw(t, ts.addr)
	initPID := func(pid int64, epoch int16) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = 4, kmsg.StringPtr("x"), 60_000, pid, epoch
		return rc.do(req).(*kmsg.InitProducerIDResponse)
	}
	first := initPID(-1, -1)
	m := ts.srv.txns.byID("x")
	m.mu.Lock()
	m.epoch = math.MaxInt16 - 1
	m.mu.Unlock()
	rotated := initPID(first.ProducerID, math.MaxInt16-1)
	if rotated.ErrorCode != 0 || rotated.ProducerID == first.ProducerID || rotated.ProducerEpoch != 0 {
		t.Fatalf("at the last epoch: %+v, want a new producer id at epoch 0", rotated)
	}
	if retry := initPID(first.ProducerID, math.MaxInt16-1); retry.ErrorCode != 0 || retry.ProducerID != rotated.ProducerID || retry.ProducerEpoch != 0 {
		t.Fatalf("the retry of the rotation: %+v, want %d epoch 0", retry, rotated.ProducerID)
	}
	wantErrCode(t, "the old id at an old epoch", initPID(first.ProducerID, 3).ErrorCode, kerr.ProducerFenced)
	if next := initPID(-1, -1); next.ErrorCode != 0 || next.ProducerID != rotated.ProducerID || next.ProducerEpoch != 1 {
		t.Fatalf("a new producer after the rotation: %+v", next)
	}
}

// TxnOffsetCommit v3+ checks the member and its generation as
// OffsetCommit does (KIP-447): a group the server does not know refuses
// a generation ≥ 0; before v3 nothing names a member.
func TestTxn_OffsetCommitFencing(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "in", 1)
	rc := dialRaw(t, ts.addr)
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version, ip.TransactionalID, ip.TransactionTimeoutMillis = 4, kmsg.StringPtr("f"), 60_000
	p := rc.do(ip).(*kmsg.InitProducerIDResponse)
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.Version, ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = 3, "f", p.ProducerID, p.ProducerEpoch, "g"
	wantErrCode(t, "AddOffsetsToTxn", rc.do(ao).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
	commit := func(version int16, member string, generation int32, partition int32) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = version, "f", "g", p.ProducerID, p.ProducerEpoch
		req.MemberID, req.Generation = member, generation
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "in"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = partition, 3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rc.do(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	wantErrCode(t, "v3, a generation of a group the server does not know", commit(3, "ghost", 7, 0), kerr.IllegalGeneration)
	wantErrCode(t, "v3, no member", commit(3, "", -1, 0), nil)
	wantErrCode(t, "v2, nothing to check", commit(2, "", 0, 0), nil)
	wantErrCode(t, "a partition that does not exist", commit(3, "", -1, 9), kerr.UnknownTopicOrPartition)
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = 3, "f", "other", p.ProducerID, p.ProducerEpoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "in"
	rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	wantErrCode(t, "a group not added to the transaction", rc.do(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.InvalidTxnState)
}
