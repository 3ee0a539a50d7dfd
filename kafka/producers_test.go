package kafka

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"math"
	"net"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// idemBatch is a batch of n records from producer pid at epoch and
// sequence seq.
func idemBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i].Value = []byte("idempotent")
	}
	b, err := batch.Append(nil, recs, batch.Options{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Idempotent: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produceRaw produces records to partition 0 of topic and returns the
// error code and base offset.
func produceRaw(rc *rawConn, topic string, records []byte) (int16, int64) {
	rc.t.Helper()
	resp := rc.do(produceRequest(9, -1, topic, 0, records)).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

func TestIdempotence_Sequences(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "idem", 1)
	l, _ := topic.Partition(0)
	rc := dialRaw(t, ts.addr)
	step := func(what string, b []byte, wantErr *kerr.Error, wantOffset, wantHead int64) {
		t.Helper()
		code, off := produceRaw(rc, "idem", b)
		wantErrCode(t, what, code, wantErr)
		if wantErr == nil && off != wantOffset {
			t.Fatalf("%s: base offset %d, want %d", what, off, wantOffset)
		}
		if l.Head() != wantHead {
			t.Fatalf("%s: head %d, want %d", what, l.Head(), wantHead)
		}
	}
	step("first batch", idemBatch(t, 7, 0, 0, 3), nil, 0, 3)
	step("its retry: the original offset, nothing written", idemBatch(t, 7, 0, 0, 3), nil, 0, 3)
	step("the next batch", idemBatch(t, 7, 0, 3, 2), nil, 3, 5)
	step("a retry of the one before last", idemBatch(t, 7, 0, 0, 3), nil, 0, 5)
	step("a gap", idemBatch(t, 7, 0, 10, 1), kerr.OutOfOrderSequenceNumber, 0, 5)
	step("overlapping no batch", idemBatch(t, 7, 0, 1, 2), kerr.OutOfOrderSequenceNumber, 0, 5)
	step("a new epoch not at sequence 0", idemBatch(t, 7, 1, 5, 1), kerr.OutOfOrderSequenceNumber, 0, 5)
	step("a new epoch at sequence 0", idemBatch(t, 7, 1, 0, 1), nil, 5, 6)
	step("the old epoch", idemBatch(t, 7, 0, 5, 1), kerr.InvalidProducerEpoch, 0, 6)
	step("the old epoch's retry", idemBatch(t, 7, 0, 3, 2), kerr.InvalidProducerEpoch, 0, 6)
	step("an unknown producer, any sequence", idemBatch(t, 8, 0, 42, 1), nil, 6, 7)
	step("then in order", idemBatch(t, 8, 0, 43, 1), nil, 7, 8)
	step("a plain batch", testBatch(t, 2, 5), nil, 8, 10)

	// Five batches are remembered; a sixth pushes the first out.
	for i := range int32(5) {
		step("epoch 1 batch", idemBatch(t, 7, 1, 1+i, 1), nil, int64(10+i), int64(11+i))
	}
	step("a retry of the sixth batch back", idemBatch(t, 7, 1, 0, 1), kerr.OutOfOrderSequenceNumber, 0, 15)
	step("a retry of the fifth", idemBatch(t, 7, 1, 1, 1), nil, 10, 15)

	// Sequence numbers wrap after 2^31−1.
	step("up to the last sequence", idemBatch(t, 9, 0, math.MaxInt32-1, 3), nil, 15, 18)
	step("after the wrap", idemBatch(t, 9, 0, 1, 1), nil, 18, 19)

	// A damaged batch is never taken for a duplicate.
	bad := idemBatch(t, 9, 0, 1, 1)
	bad[len(bad)-1] ^= 0xff
	step("a damaged retry", bad, kerr.CorruptMessage, 0, 19)
	for _, tc := range []struct {
		what string
		b    []byte
	}{
		{"a damaged batch out of order", idemBatch(t, 9, 0, 7, 1)},
		{"a damaged batch of the old epoch", idemBatch(t, 7, 0, 20, 1)},
		{"a damaged next batch", idemBatch(t, 9, 0, 2, 1)},
	} {
		tc.b[len(tc.b)-1] ^= 0xff
		step(tc.what, tc.b, kerr.CorruptMessage, 0, 19)
	}

	// A transactional batch of a producer no transactional id has.
	step("a transactional batch", txnBatch(t, 10, 0, 0, 1), kerr.InvalidTxnState, 0, 19)
}

// txnBatch is idemBatch with the transactional attribute.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int) []byte {
	t.Helper()
	b := idemBatch(t, pid, epoch, seq, n)
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|batch.AttrTransactional)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func wantErrCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if want == nil && got != 0 || want != nil && got != want.Code {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// After a restart, the producer state is rebuilt from the log: a retry
// of one of the last five batches gets its original offset, and
// sequence numbers are still checked.
func TestIdempotence_RebuiltAfterRestart(t *testing.T) {
	dir := t.TempDir()
	serve := func(opts *Options) (*testServer, func()) {
		db, err := passbook.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(db, opts)
		if err != nil {
			t.Fatal(err)
		}
		ts := serveOn(t, db, srv)
		return ts, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
			db.Close()
		}
	}
	ts, stop := serve(nil)
	ts.createTopic(t, "idem", 1)
	rc := dialRaw(t, ts.addr)
	for i := range int32(8) {
		if code, off := produceRaw(rc, "idem", idemBatch(t, 7, 0, 2*i, 2)); code != 0 || off != int64(4*i) {
			t.Fatalf("batch %d: %v at %d", i, kerr.ErrorForCode(code), off)
		}
		if code, _ := produceRaw(rc, "idem", testBatch(t, 2, 10)); code != 0 {
			t.Fatalf("plain batch %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	stop()

	ts, stop = serve(nil)
	rc = dialRaw(t, ts.addr)
	topic, _ := ts.db.Topic("idem")
	l, _ := topic.Partition(0)
	for _, tc := range []struct {
		what       string
		b          []byte
		want       *kerr.Error
		wantOffset int64
	}{
		{"a retry of the last batch", idemBatch(t, 7, 0, 14, 2), nil, 28},
		{"a retry of the fifth last", idemBatch(t, 7, 0, 6, 2), nil, 12},
		{"a retry of the sixth last: forgotten, so out of order", idemBatch(t, 7, 0, 4, 2), kerr.OutOfOrderSequenceNumber, 0},
		{"a gap", idemBatch(t, 7, 0, 17, 1), kerr.OutOfOrderSequenceNumber, 0},
		{"the next batch", idemBatch(t, 7, 0, 16, 1), nil, 32},
	} {
		code, off := produceRaw(rc, "idem", tc.b)
		wantErrCode(t, tc.what, code, tc.want)
		if tc.want == nil && off != tc.wantOffset {
			t.Fatalf("%s: offset %d, want %d", tc.what, off, tc.wantOffset)
		}
	}
	if l.Head() != 33 {
		t.Fatalf("head %d, want 33: a retry was written again", l.Head())
	}
	stop()

	// With a window too small to reach the producer's batches, a retry
	// is not recognized: the documented cost of a bounded scan.
	ts, stop = serve(&Options{ProducerStateBytes: 1})
	defer stop()
	rc = dialRaw(t, ts.addr)
	if code, off := produceRaw(rc, "idem", idemBatch(t, 7, 0, 16, 1)); code != 0 || off != 33 {
		t.Fatalf("retry beyond the window: %v at %d, want it written again at 33", kerr.ErrorForCode(code), off)
	}
}

// serveOn serves srv on a free loopback port until the test ends (or
// until the caller shuts it down first).
func serveOn(t *testing.T, db *passbook.DB, srv *Server) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(context.Background(), ln)
	t.Cleanup(func() { srv.Close() })
	return &testServer{addr: ln.Addr().String(), db: db, srv: srv}
}

func TestInitProducerID_NeverReused(t *testing.T) {
	dir := t.TempDir()
	var last, txnPID int64 = -1, -1
	for round := range 3 {
		db, err := passbook.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		ts := serveOn(t, db, srv)
		rc := dialRaw(t, ts.addr)
		for v := range int16(5) {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version, req.ProducerID, req.ProducerEpoch = v, -1, -1
			resp := rc.do(req).(*kmsg.InitProducerIDResponse)
			if resp.ErrorCode != 0 || resp.ProducerID <= last || resp.ProducerEpoch != 0 {
				t.Fatalf("round %d v%d: %+v after id %d", round, v, resp, last)
			}
			last = resp.ProducerID
		}
		// A transactional id keeps its producer id across restarts; ids
		// for idempotent producers are never one of them.
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, kmsg.StringPtr("txn"), 60_000
		resp := rc.do(req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerEpoch != int16(round) || round == 0 && resp.ProducerID <= last || round > 0 && resp.ProducerID != txnPID {
			t.Fatalf("round %d, transactional: %+v (its id %d, last %d)", round, resp, txnPID, last)
		}
		if round == 0 {
			txnPID, last = resp.ProducerID, resp.ProducerID
		}
		srv.Close()
		db.Close()
	}
}
