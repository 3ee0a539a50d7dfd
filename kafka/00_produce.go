package kafka

// Produce (key 0): versions 0–13. Advertised from 0 because librdkafka
// before 2.11 drops compression unless Produce starts at 0; only
// RecordBatch v2 (magic 2) is stored, which every client sends from v3.
// v13 names topics by ID (translated to names before this handler and
// back after it: topicids.go). Batches of idempotent producers are deduplicated
// and their sequence numbers checked (see producers.go). A
// transactional batch (attribute 0x10) must come from the current epoch
// of a transactional id (INVALID_PRODUCER_EPOCH otherwise: a fenced
// zombie) whose ongoing transaction holds the partition (AddPartitionsToTxn
// first: INVALID_TXN_STATE otherwise, as Kafka's KIP-890 verification
// answers); the storage engine then counts it in the partition's open
// transaction until the coordinator writes the marker (txn.go). Produce
// v12 does not add a partition to a transaction by itself: that is
// KIP-890's transaction.version 2, which ApiVersions does not advertise.
//
// Each partition's records must be one batch. storage.Log.AppendBatch
// validates it completely before writing anything — CRC-32C, lengths,
// record count and offset deltas (CORRUPT_MESSAGE); record and header
// counts against the bytes that hold them, checked before anything is
// allocated (INVALID_RECORD); each record's size, headers included,
// against max.message.bytes (MESSAGE_TOO_LARGE); every timestamp against
// the topic's message.timestamp.before.max.ms and after.max.ms
// (INVALID_TIMESTAMP) — assigns its offsets by patching the base offset,
// sets the partition leader epoch to 0, and stores the bytes as
// received: compressed batches stay compressed. See docs/kafka.md, "What
// a produced batch must satisfy". The append happens on the connection's reader,
// in request order; the wait for durability happens on its writer:
// acks=−1 waits for an fsync (shared by every append made meanwhile, on
// any connection), acks=1 for the topic's durability (by default, the
// batch is in the OS), and acks=0 gets no response at all.
//
// ACLs: Write on each topic (TOPIC_AUTHORIZATION_FAILED for each of its
// partitions), and Write on the transactional id if the request names
// one (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition).

import (
	"context"
	"sync"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.Produce, 0, 13, produce) }

// leaderEpoch is the one leader epoch of every partition: this broker
// has led them since they were created.
const leaderEpoch = 0

func produce(_ context.Context, c *conn, req *kmsg.ProduceRequest) (reply, error) {
	d := storage.DefaultDurability // acks=1 and acks=0: the topic's durability
	badAcks := false
	switch req.Acks {
	case -1:
		d = storage.Fsync
	case 0, 1:
	default:
		badAcks = true
	}
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	// Kafka: Write on the transactional id, if one is set, for the
	// whole request; then Write on each topic.
	txnDenied := req.TransactionID != nil && !c.allowed(acl.Write, acl.TransactionalID, *req.TransactionID)
	type appended struct {
		l           *storage.Log
		end         int64
		topic, part int
	}
	var waits []appended
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		t := &resp.Topics[i]
		t.Default()
		t.Topic = rt.Topic
		t.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		denied := kerr.TransactionalIDAuthorizationFailed.Code
		if !txnDenied {
			denied = 0
			if !c.allowed(acl.Write, acl.Topic, rt.Topic) {
				denied = kerr.TopicAuthorizationFailed.Code
			}
		}
		topic, terr := c.s.db.Topic(rt.Topic)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			p := &t.Partitions[j]
			p.Default()
			p.Partition = rp.Partition
			if denied != 0 {
				p.ErrorCode = denied
				continue
			}
			if badAcks {
				p.ErrorCode = kerr.InvalidRequiredAcks.Code
				continue
			}
			if terr != nil {
				p.ErrorCode = errorCode(terr)
				continue
			}
			l, err := topic.Partition(rp.Partition)
			if err != nil {
				p.ErrorCode, p.ErrorMessage = errorCode(err), errorMessage(err) // a fenced partition says why
				continue
			}
			end, err := c.s.appendBatch(rt.Topic, rp.Partition, l, rp.Records)
			if err != nil {
				p.ErrorCode = errorCode(err)
				if l.Err() != nil {
					p.ErrorCode = kerr.KafkaStorageError.Code
				}
				p.ErrorMessage = errorMessage(err)
				c.s.log.Debug("kafka: produce refused", "topic", rt.Topic, "partition", rp.Partition, "err", err)
				continue
			}
			p.BaseOffset = end.first
			p.LogAppendTime = logAppendTime(l, end.first) // configs_produce.go
			p.LogStartOffset = l.StartOffset()
			waits = append(waits, appended{l: l, end: end.next, topic: i, part: j})
		}
	}
	if req.Acks == 0 {
		return reply{}, nil
	}
	if len(waits) == 0 {
		return reply{resp: resp}, nil
	}
	return reply{resp: resp, wait: func(context.Context) {
		// Every partition's wait runs at once: the request is answered
		// when the slowest is durable, not after the sum of their waits.
		// Each goroutine writes only its own partition's response.
		fail := func(w appended, err error) {
			p := &resp.Topics[w.topic].Partitions[w.part]
			p.BaseOffset, p.ErrorCode, p.ErrorMessage = -1, kerr.KafkaStorageError.Code, errorMessage(err)
		}
		pending := waits[:0:0]
		for _, w := range waits {
			if !w.l.IsDurable(w.end, d) {
				pending = append(pending, w)
			}
		}
		if len(pending) == 1 {
			if err := pending[0].l.WaitDurable(pending[0].end, d); err != nil {
				fail(pending[0], err)
			}
			return
		}
		var wg sync.WaitGroup
		for _, w := range pending {
			wg.Go(func() {
				if err := w.l.WaitDurable(w.end, d); err != nil {
					fail(w, err)
				}
			})
		}
		wg.Wait()
	}}, nil
}

type span struct{ first, next int64 }

// appendBatch appends one produced batch, without waiting for
// durability, and returns the offsets it got — for the retry of a batch
// of an idempotent producer, those its original got (see producers.go).
func (s *Server) appendBatch(topic string, part int32, l *storage.Log, b []byte) (span, error) {
	h, err := batch.ParseHeader(b)
	if err == nil && h.IsControl() {
		// Only a transaction coordinator writes control batches.
		return span{}, errControlBatch
	}
	if err == nil {
		// This broker has always led the partition: epoch 0. The CRC
		// does not cover the field (storage stamps it too, and verify
		// checks it).
		batch.SetLeaderEpoch(b, leaderEpoch)
		if h.ProducerID >= 0 && h.Attributes&batch.AttrTransactional != 0 {
			// The coordinator says whether the partition is in the
			// producer's ongoing transaction, and keeps the transaction
			// from ending until the batch is in the log.
			release, err := s.txns.checkProduce(topic, part, h.ProducerID, h.ProducerEpoch)
			if err != nil {
				return span{}, err
			}
			defer release()
		}
		if h.ProducerID >= 0 {
			return s.producers.append(topic, part, l, b, h)
		}
	}
	first, err := l.AppendBatch(b, storage.InOS)
	if err != nil {
		return span{}, err
	}
	return span{first: first, next: first + int64(h.LastOffsetDelta) + 1}, nil
}
