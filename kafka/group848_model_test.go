package kafka

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

// The reconciliation of KIP-848 groups under any order of joins,
// heartbeats, leaves, subscription and assignor changes, static members
// restarting (−2, then a new member id) and topics growing: members that
// behave as clients do (they drop what an answer no longer assigns them
// and heartbeat with what they own) never own the same partition at
// once, and once every member has heartbeated a few more times the group
// is Stable with every subscribed partition owned by exactly one member.
func TestConsumerGroup_Model(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		co := newCoordinator(nil, nil, slog.New(slog.DiscardHandler), time.Second, time.Hour)
		defer co.close()
		co.mu.Lock()
		co.consumer.session = time.Hour // no timer fires during a check
		co.mu.Unlock()
		topics := map[string]topicMeta{
			"a": {name: "a", id: offsets.TopicID{1}, partitions: 3},
			"b": {name: "b", id: offsets.TopicID{2}, partitions: 2},
		}
		type client struct {
			id    string
			inst  *string
			subs  []string
			epoch int32
			owned map[tp]bool
			live  bool
		}
		var clients []*client
		beat := func(c *client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
			req.Version, req.Group, req.MemberID, req.InstanceID = 1, "g", c.id, c.inst
			cp := map[string]topicMeta{}
			for k, v := range topics {
				cp[k] = v
			}
			resp, e := co.consumerHeartbeat(heartbeatReq{ConsumerGroupHeartbeatRequest: req, topics: cp})
			if e != nil {
				rt.Fatalf("%s: %v %s", c.id, e.err, e.msg)
			}
			return resp
		}
		take := func(c *client, resp *kmsg.ConsumerGroupHeartbeatResponse) {
			c.epoch = resp.MemberEpoch
			if resp.Assignment != nil {
				c.owned = map[tp]bool{}
				for _, t := range resp.Assignment.Topics {
					for _, p := range t.Partitions {
						c.owned[tp{t.TopicID, p}] = true
					}
				}
			}
			// Nobody else owns what c owns now.
			for _, o := range clients {
				if o == c || !o.live {
					continue
				}
				for p := range c.owned {
					if o.owned[p] {
						rt.Fatalf("%s and %s both own %v", c.id, o.id, p)
					}
				}
			}
		}
		heartbeat := func(c *client, assignor string, subs []string) {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.MemberEpoch, req.RebalanceTimeoutMillis, req.SubscribedTopicNames = c.epoch, -1, subs
			if assignor != "" {
				req.ServerAssignor = &assignor
			}
			byTopic := map[offsets.TopicID][]int32{}
			for p := range c.owned {
				byTopic[p.id] = append(byTopic[p.id], p.p)
			}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			for id, ps := range byTopic {
				slices.Sort(ps)
				req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: ps})
			}
			take(c, beat(c, req))
		}
		live := func() []*client {
			var out []*client
			for _, c := range clients {
				if c.live {
					out = append(out, c)
				}
			}
			return out
		}
		subscriptions := rapid.SampledFrom([][]string{{"a"}, {"b"}, {"a", "b"}})
		join := func(c *client) {
			clients = append(clients, c)
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.MemberEpoch, req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 0, 30_000, c.subs
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			take(c, beat(c, req))
		}
		rt.Repeat(map[string]func(*rapid.T){
			"join": func(rt *rapid.T) {
				if len(live()) >= 6 {
					rt.Skip("enough members")
				}
				c := &client{id: fmt.Sprintf("m%d", len(clients)), owned: map[tp]bool{}, live: true, subs: subscriptions.Draw(rt, "subscription")}
				if rapid.Bool().Draw(rt, "static") {
					c.inst = kmsg.StringPtr("instance-" + c.id)
				}
				join(c)
			},
			"heartbeat": func(rt *rapid.T) {
				ls := live()
				if len(ls) == 0 {
					rt.Skip("no members")
				}
				heartbeat(rapid.SampledFrom(ls).Draw(rt, "member"), rapid.SampledFrom([]string{"", "", "uniform", "range"}).Draw(rt, "assignor"), nil)
			},
			"resubscribe": func(rt *rapid.T) {
				ls := live()
				if len(ls) == 0 {
					rt.Skip("no members")
				}
				c := rapid.SampledFrom(ls).Draw(rt, "member")
				c.subs = subscriptions.Draw(rt, "subscription")
				heartbeat(c, "", c.subs)
			},
			"restart a static member": func(rt *rapid.T) {
				var ss []*client
				for _, c := range live() {
					if c.inst != nil {
						ss = append(ss, c)
					}
				}
				if len(ss) == 0 {
					rt.Skip("no static member")
				}
				old := rapid.SampledFrom(ss).Draw(rt, "member")
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.MemberEpoch = -2
				beat(old, req)
				old.live, old.owned = false, nil // the process is gone; the broker keeps its partitions
				join(&client{id: fmt.Sprintf("m%d", len(clients)), inst: old.inst, subs: old.subs, owned: map[tp]bool{}, live: true})
			},
			"leave": func(rt *rapid.T) {
				ls := live()
				if len(ls) == 0 {
					rt.Skip("no members")
				}
				c := rapid.SampledFrom(ls).Draw(rt, "member")
				req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				req.MemberEpoch = -1
				beat(c, req)
				c.live, c.owned = false, nil
			},
			"grow a topic": func(rt *rapid.T) {
				name := rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "topic")
				t := topics[name]
				if t.partitions >= 8 {
					rt.Skip("big enough")
				}
				t.partitions++
				topics[name] = t
			},
		})
		// Settle: every member heartbeats until the group is Stable.
		for round := 0; ; round++ {
			for _, c := range live() {
				heartbeat(c, "", nil)
			}
			co.mu.Lock()
			g := co.mu.cgroups["g"]
			state := "Empty"
			if g != nil {
				state = g.stateLocked()
			}
			co.mu.Unlock()
			if state == "Stable" || state == "Empty" {
				break
			}
			if round == 10 {
				rt.Fatalf("the group is %s after 10 rounds of heartbeats", state)
			}
		}
		owner := map[tp]*client{}
		for _, c := range live() {
			for p := range c.owned {
				owner[p] = c
			}
		}
		for _, t := range topics {
			subscribed := slices.ContainsFunc(live(), func(c *client) bool { return slices.Contains(c.subs, t.name) })
			for p := range t.partitions {
				o, ok := owner[tp{t.id, p}]
				if subscribed && !ok {
					rt.Fatalf("%s/%d owned by nobody once stable", t.name, p)
				}
				if ok && !slices.Contains(o.subs, t.name) {
					rt.Fatalf("%s/%d owned by %s, which does not subscribe to it", t.name, p, o.id)
				}
			}
		}
	})
}
