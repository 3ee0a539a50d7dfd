package kafka

// Metadata (key 3): versions 0–13.
//
// One broker, NodeID, leads every partition, with leader epoch 0 and
// itself as the only replica. In v0 an empty topic list asks for every
// topic; from v1 a null list does, and an empty one for none. A missing
// topic is created with the default partition count when the client
// allows it (allow_auto_topic_creation, v4+; always allowed before) and
// the server has auto-creation on. From v10 every topic carries its ID
// (topicids.go). v10 and v11 may not name a topic by ID or leave its
// name null (INVALID_REQUEST for every topic asked for, as Kafka); from
// v12 topics are asked for by ID: once any topic is, the names are
// ignored, an ID no topic has is UNKNOWN_TOPIC_ID, and the answers name
// no topic the client may not Describe (TOPIC_AUTHORIZATION_FAILED with
// a null name: IDs are not secret, names are). Nothing is auto-created
// by ID. v13's top-level error code is always 0: there is no other
// broker to rebootstrap to.
//
// ACLs, as Kafka's: the all-topics list holds only the topics the
// client may Describe; a topic named that it may not Describe gets
// TOPIC_AUTHORIZATION_FAILED, whether it exists or not; auto-creating
// one needs Create on the cluster or on the topic (else
// TOPIC_AUTHORIZATION_FAILED). The authorized operations of the
// cluster (v8–v10) and of each topic (v8+) are filled in when asked
// for.

import (
	"context"
	"errors"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.Metadata, 0, 13, metadata) }

func metadata(_ context.Context, c *conn, req *kmsg.MetadataRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = NodeID, c.host, c.port
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	resp.ClusterID = &c.s.o.ClusterID
	resp.ControllerID = NodeID
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = c.authorizedOperations(acl.Cluster, acl.ClusterName)
	}
	describe := func(mt kmsg.MetadataResponseTopic) kmsg.MetadataResponseTopic {
		if req.IncludeTopicAuthorizedOperations && mt.Topic != nil {
			mt.AuthorizedOperations = c.authorizedOperations(acl.Topic, *mt.Topic)
		}
		return mt
	}

	if req.Topics == nil || req.Version == 0 && len(req.Topics) == 0 {
		// Every topic the client may Describe; the others are not
		// mentioned.
		for _, t := range c.s.db.Topics() {
			if c.may(acl.Describe, acl.Topic, t.Name()) {
				resp.Topics = append(resp.Topics, describe(topicMetadata(t)))
			}
		}
		return reply{resp: resp}, nil
	}
	if req.Version < 12 {
		for _, rt := range req.Topics {
			if rt.Topic == nil || rt.TopicID != ([16]byte{}) {
				// Kafka: "Topic IDs are not supported in requests for
				// version 10/11", and every topic gets the error.
				for _, rt := range req.Topics {
					mt := kmsg.NewMetadataResponseTopic()
					mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
					if mt.Topic == nil {
						mt.Topic = new(string)
					}
					mt.ErrorCode = kerr.InvalidRequest.Code
					resp.Topics = append(resp.Topics, mt)
				}
				return reply{resp: resp}, nil
			}
		}
	} else if byID := metadataByID(req.Topics); len(byID) > 0 {
		for _, id := range byID {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = id
			name, ok := c.topicNameByID(id)
			t, err := c.s.db.Topic(name)
			switch {
			case !ok || err != nil:
				mt.ErrorCode = kerr.UnknownTopicID.Code
			case !c.allowed(acl.Describe, acl.Topic, name):
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			default:
				mt = describe(topicMetadata(t))
			}
			resp.Topics = append(resp.Topics, mt)
		}
		return reply{resp: resp}, nil
	}
	autoCreate := (req.Version < 4 || req.AllowAutoTopicCreation) && !c.s.o.DisableAutoCreateTopics
	fail := func(name *string, err error) {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = name
		mt.ErrorCode = errorCode(err)
		resp.Topics = append(resp.Topics, mt)
	}
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if !c.allowed(acl.Describe, acl.Topic, *rt.Topic) {
			fail(rt.Topic, errTopicDenied) // whether it exists or not
			continue
		}
		t, err := c.s.db.Topic(*rt.Topic)
		if errors.Is(err, passbook.ErrUnknownTopic) && autoCreate {
			if c.mayCluster(acl.Create) || c.allowed(acl.Create, acl.Topic, *rt.Topic) {
				t, err = c.s.autoCreate(*rt.Topic)
			} else {
				err = errTopicDenied
			}
		}
		if err != nil {
			fail(rt.Topic, err)
			continue
		}
		resp.Topics = append(resp.Topics, describe(topicMetadata(t)))
	}
	return reply{resp: resp}, nil
}

// autoCreate creates a topic a client asked for, with the defaults.
func (s *Server) autoCreate(name string) (*passbook.Topic, error) {
	t, err := s.db.CreateTopic(name, passbook.TopicConfig{Partitions: s.o.DefaultPartitions})
	if errors.Is(err, passbook.ErrTopicExists) {
		return s.db.Topic(name) // another connection won the race
	}
	if err != nil {
		return nil, err
	}
	s.log.Info("kafka: auto-created topic", "topic", name, "partitions", t.Partitions())
	return t, nil
}

// metadataByID returns the distinct nonzero topic IDs asked for, in
// request order.
func metadataByID(topics []kmsg.MetadataRequestTopic) [][16]byte {
	var ids [][16]byte
	seen := map[[16]byte]bool{}
	for _, rt := range topics {
		if id := rt.TopicID; id != ([16]byte{}) && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

func topicMetadata(t *passbook.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name()
	mt.Topic = &name
	mt.TopicID = t.ID()
	for p := range t.Partitions() {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(p)
		mp.Leader = NodeID
		mp.LeaderEpoch = leaderEpoch
		mp.Replicas = []int32{NodeID}
		mp.ISR = []int32{NodeID}
		mp.OfflineReplicas = []int32{}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
