package kafka

// Topic IDs (KIP-516) on the wire, in one place.
//
// Every topic has a durable ID (passbook.Topic.ID: random, kept in its
// topic.json, never reused — a topic deleted and created again under the
// same name gets a new one). Metadata v10+ returns it and v12+ looks
// topics up by it (03_metadata.go), DeleteTopics v6 deletes by it
// (20_delete_topics.go), and the responses of CreateTopics v7 and
// DescribeTopicPartitions carry it (filled in here).
//
// The newest versions of four APIs name topics by ID alone: Produce v13,
// Fetch v13+ (and its forgotten topics), OffsetCommit v10 and OffsetFetch
// v10. Their handlers work with names: topicIDsIn rewrites the decoded
// request's IDs into names before the handler runs, and the returned
// rewrite puts the IDs into its response after it (after the reply's
// wait, for Produce and Fetch, whose responses are filled in there). An
// ID no topic has becomes a name no topic can have, which every handler
// answers as unknown; its partitions are then answered UNKNOWN_TOPIC_ID,
// as Kafka does, whatever the handler said of the name (Kafka resolves
// IDs before it checks ACLs, so an unknown ID tells nothing about a
// topic). A fetch by the ID of a topic that was deleted, or deleted and
// created again, while the fetch waited is answered UNKNOWN_TOPIC_ID and
// none of its records: the records of a new topic are never served for
// an old one's ID. A produce or a commit that races a delete and a
// re-create of the same name (between the lookup here and the handler's,
// microseconds) lands on the new topic.

import (
	"context"
	"strings"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unknownIDPrefix starts the name given to an ID that names no topic
// ("<unknown topic id AAAA…>", as logs show it): '<' and spaces are in no
// valid topic name, so no topic can ever have it.
const unknownIDPrefix = "<unknown topic id "

// topicNameByID returns the name of the topic whose ID is id. The
// connection keeps the IDs it has seen, checked against the topic on
// every use; a miss lists the topics again.
func (c *conn) topicNameByID(id [16]byte) (string, bool) {
	if id == ([16]byte{}) {
		return "", false
	}
	if name, ok := c.topicIDs[id]; ok {
		if t, err := c.s.db.Topic(name); err == nil && t.ID() == passbook.TopicID(id) {
			return name, true
		}
	}
	m := make(map[[16]byte]string)
	for _, t := range c.s.db.Topics() {
		m[t.ID()] = t.Name()
	}
	c.topicIDs = m
	name, ok := m[id]
	return name, ok
}

// topicIDOf returns the ID of the topic named name, or the zero ID.
func (s *Server) topicIDOf(name string) [16]byte {
	t, err := s.db.Topic(name)
	if err != nil {
		return [16]byte{}
	}
	return t.ID()
}

// idRewrite is what topicIDsIn did to one request, for its response.
type idRewrite struct {
	req kmsg.Request
	// ids holds every name the request's IDs became, with the ID; the
	// names of unknown IDs start with unknownIDPrefix.
	ids map[string][16]byte
	// none lists the ListOffsets partitions (topic, partition index)
	// answered "no such offset" (versions.go).
	none [][2]int
}

// topicIDsIn rewrites the topic IDs of a request that names topics by
// ID into names (and the ListOffsets timestamps of versions.go). The rewrite it returns fills the response in; it is nil
// when the request's response needs nothing.
func (c *conn) topicIDsIn(req kmsg.Request) *idRewrite {
	rw := &idRewrite{req: req, ids: map[string][16]byte{}}
	name := func(id [16]byte) string {
		n, ok := c.topicNameByID(id)
		if !ok {
			n = unknownIDPrefix + passbook.TopicID(id).String() + ">"
		}
		rw.ids[n] = id
		return n
	}
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		if r.Version < 13 {
			return nil
		}
		for i := range r.Topics {
			r.Topics[i].Topic = name(r.Topics[i].TopicID)
		}
	case *kmsg.FetchRequest:
		if r.Version < 13 {
			return nil
		}
		for i := range r.Topics {
			r.Topics[i].Topic = name(r.Topics[i].TopicID)
		}
		for i := range r.ForgottenTopics {
			r.ForgottenTopics[i].Topic = name(r.ForgottenTopics[i].TopicID)
		}
	case *kmsg.OffsetCommitRequest:
		if r.Version < 10 {
			return nil
		}
		for i := range r.Topics {
			r.Topics[i].Topic = name(r.Topics[i].TopicID)
		}
	case *kmsg.OffsetFetchRequest:
		if r.Version < 10 {
			return nil
		}
		for i := range r.Groups {
			for j := range r.Groups[i].Topics {
				r.Groups[i].Topics[j].Topic = name(r.Groups[i].Topics[j].TopicID)
			}
		}
	case *kmsg.CreateTopicsRequest:
		if r.Version < 7 || r.ValidateOnly {
			return nil
		}
	case *kmsg.DescribeTopicPartitionsRequest:
	case *kmsg.ListOffsetsRequest:
		if r.Version < 8 {
			return nil
		}
		listOffsetsIn(r, rw)
	default:
		return nil
	}
	return rw
}

// out puts the topic IDs into r's response, once it is filled in.
func (rw *idRewrite) out(c *conn, r reply) reply {
	if rw == nil || r.resp == nil {
		return r
	}
	if wait := r.wait; wait != nil {
		resp := r.resp
		r.wait = func(ctx context.Context) {
			wait(ctx)
			rw.fill(c, resp)
		}
		return r
	}
	rw.fill(c, r.resp)
	return r
}

// unknown reports whether name stands for an ID no topic had.
func unknown(name string) bool { return strings.HasPrefix(name, unknownIDPrefix) }

// idOf is the ID name stands for: the request's, or, for a name the
// request did not give by ID (OffsetFetch of every topic), the topic's.
func (rw *idRewrite) idOf(c *conn, name string) [16]byte {
	if id, ok := rw.ids[name]; ok {
		return id
	}
	return c.s.topicIDOf(name)
}

func (rw *idRewrite) fill(c *conn, resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			t := &r.Topics[i]
			t.TopicID = rw.idOf(c, t.Topic)
			if !unknown(t.Topic) {
				continue
			}
			for j := range t.Partitions {
				p := &t.Partitions[j]
				p.ErrorCode, p.ErrorMessage, p.ErrorRecords = kerr.UnknownTopicID.Code, nil, nil
				p.BaseOffset, p.LogAppendTime, p.LogStartOffset = -1, -1, -1
			}
		}
	case *kmsg.FetchResponse:
		for i := range r.Topics {
			t := &r.Topics[i]
			t.TopicID = rw.idOf(c, t.Topic)
			// Still the topic the ID named when the fetch began?
			if !unknown(t.Topic) && c.s.topicIDOf(t.Topic) == t.TopicID {
				continue
			}
			for j := range t.Partitions {
				p := &t.Partitions[j]
				p.ErrorCode = kerr.UnknownTopicID.Code
				p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
				p.AbortedTransactions, p.RecordBatches = nil, noRecords
			}
		}
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			t := &r.Topics[i]
			t.TopicID = rw.idOf(c, t.Topic)
			if !unknown(t.Topic) {
				continue
			}
			for j := range t.Partitions {
				if p := &t.Partitions[j]; topicLevel(p.ErrorCode) {
					p.ErrorCode = kerr.UnknownTopicID.Code
				}
			}
		}
	case *kmsg.OffsetFetchResponse:
		for i := range r.Groups {
			g := &r.Groups[i]
			for j := range g.Topics {
				t := &g.Topics[j]
				t.TopicID = rw.idOf(c, t.Topic)
				if !unknown(t.Topic) || g.ErrorCode != 0 {
					continue
				}
				for k := range t.Partitions {
					if p := &t.Partitions[k]; topicLevel(p.ErrorCode) {
						p.ErrorCode, p.Offset, p.Metadata = kerr.UnknownTopicID.Code, -1, nil
					}
				}
			}
		}
	case *kmsg.CreateTopicsResponse:
		for i := range r.Topics {
			if t := &r.Topics[i]; t.ErrorCode == 0 && t.TopicID == ([16]byte{}) {
				t.TopicID = c.s.topicIDOf(t.Topic)
			}
		}
	case *kmsg.ListOffsetsResponse:
		listOffsetsOut(r, rw)
	case *kmsg.DescribeTopicPartitionsResponse:
		for i := range r.Topics {
			if t := &r.Topics[i]; t.ErrorCode == 0 && t.Topic != nil && t.TopicID == ([16]byte{}) {
				t.TopicID = c.s.topicIDOf(*t.Topic)
			}
		}
	}
}

// topicLevel reports whether a partition's error code is one a handler
// gives a topic it cannot find or may not see: for an unknown ID, Kafka
// answers UNKNOWN_TOPIC_ID instead.
func topicLevel(code int16) bool {
	switch code {
	case 0, kerr.UnknownTopicOrPartition.Code, kerr.TopicAuthorizationFailed.Code, kerr.InvalidTopicException.Code:
		return true
	}
	return false
}
