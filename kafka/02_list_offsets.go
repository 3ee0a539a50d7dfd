package kafka

// ListOffsets (key 2): versions 1–11 (v8–v11's timestamps −4, −5, −6:
// versions.go).
//
// Timestamp −2 asks for the log start offset, −1 for the high watermark
// (the head; with isolation_level 1, read_committed, the last stable
// offset), −3 (v7) for the record with the largest timestamp (the
// first of several with it; storage.Log.MaxTimestamp, through the time
// index: timestamps 3000, 9000, 5000 answer offset 1, not the last
// record) — and a timestamp ≥ 0 for the first record at or after it,
// found through the time index; when there is none the answer is offset
// −1, as Kafka's.
//
// ACLs: Describe on each topic (TOPIC_AUTHORIZATION_FAILED for each of
// its partitions).

import (
	"context"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ListOffsets, 1, 11, listOffsets) }

const (
	latestTimestamp   = -1
	earliestTimestamp = -2
	maxTimestamp      = -3
)

func listOffsets(_ context.Context, c *conn, req *kmsg.ListOffsetsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt, t := &req.Topics[i], &resp.Topics[i]
		t.Default()
		t.Topic = rt.Topic
		t.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(rt.Partitions))
		var topic *passbook.Topic
		terr := errTopicDenied
		if c.allowed(acl.Describe, acl.Topic, rt.Topic) {
			topic, terr = c.s.db.Topic(rt.Topic)
		}
		for j := range rt.Partitions {
			rp, p := &rt.Partitions[j], &t.Partitions[j]
			p.Default()
			p.Partition = rp.Partition
			if terr != nil {
				p.ErrorCode = errorCode(terr)
				continue
			}
			l, err := topic.Partition(rp.Partition)
			if err != nil {
				p.ErrorCode = errorCode(err)
				continue
			}
			p.LeaderEpoch = leaderEpoch
			if rp.Timestamp == maxTimestamp && req.Version < 7 || rp.Timestamp < maxTimestamp {
				p.ErrorCode = kerr.InvalidRequest.Code
				continue
			}
			p.Offset, p.Timestamp, err = offsetFor(l, rp.Timestamp)
			if rp.Timestamp == latestTimestamp && req.IsolationLevel == 1 {
				p.Offset = l.LastStableOffset() // read_committed: the last stable offset (01_fetch.go)
			}
			p.ErrorCode = errorCode(err)
		}
	}
	return reply{resp: resp}, nil
}

// offsetFor answers one partition of a ListOffsets request.
func offsetFor(l *storage.Log, ts int64) (offset, timestamp int64, err error) {
	switch ts {
	case earliestTimestamp:
		return l.StartOffset(), -1, nil
	case latestTimestamp:
		return l.Head(), -1, nil
	case maxTimestamp:
		off, ms, found, err := l.MaxTimestamp()
		if err != nil || !found {
			return -1, -1, err
		}
		return off, ms, nil
	}
	off, err := l.OffsetForTime(time.UnixMilli(ts))
	if err != nil {
		return -1, -1, err
	}
	if off >= l.Head() {
		return -1, -1, nil
	}
	return recordAt(l, off)
}

// recordAt returns the offset and timestamp of the record at off (or the
// first after it, should off be a gap left by compaction).
func recordAt(l *storage.Log, off int64) (int64, int64, error) {
	for rec, err := range l.Records(off) {
		if err != nil {
			return -1, -1, err
		}
		return rec.Offset, rec.Timestamp.UnixMilli(), nil
	}
	return -1, -1, nil
}
