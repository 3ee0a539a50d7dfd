package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/passbook-log/passbook/acl"
)

// BenchmarkEventFilter is what the ACLs cost one /api/events subscriber
// per update: a snapshot of 100 topics × 10 partitions and 200 consumer
// groups, filtered for a principal allowed half the topics by a prefixed
// ACL and every group.
func BenchmarkEventFilter(b *testing.B) {
	dir := b.TempDir()
	store, err := acl.OpenStore(dir)
	if err != nil {
		b.Fatal(err)
	}
	bind := func(rt acl.ResourceType, name string, pt acl.PatternType) {
		if err := store.Add(acl.Binding{ResourceType: rt, Name: name, Pattern: pt, Principal: "User:alice", Host: "*", Operation: acl.Describe, Permission: acl.Allow}); err != nil {
			b.Fatal(err)
		}
	}
	bind(acl.Topic, "a-", acl.Prefixed)
	bind(acl.Group, "*", acl.Literal)
	o := (&Options{}).withDefaults()
	o.Authorizer = acl.NewAuthorizer(store, nil, nil)
	s := &Server{o: o}
	u := update{T: 1, Topics: []*topicState{}, Groups: []*consumerGroup{}}
	for i := range 100 {
		name := fmt.Sprintf("%c-topic-%d", "ab"[i%2], i)
		ts := &topicState{Name: name, Config: nil, Partitions: make([]partState, 10)}
		u.Topics = append(u.Topics, ts)
		for c := range 2 {
			u.Groups = append(u.Groups, &consumerGroup{Consumer: fmt.Sprintf("c%d", c), Topic: name, Committed: make([]int64, 10), Lag: make([]int64, 10), Missed: make([]int64, 10)})
		}
	}
	msg, _ := json.Marshal(u)
	r := httptest.NewRequest("GET", "/api/events", nil)
	r = r.WithContext(context.WithValue(r.Context(), identityKey{}, identity{user: "alice", method: authBasic}))
	f := s.eventFilterFor(r)
	for _, t := range u.Topics {
		f.sent[t.Name] = true
	}
	b.SetBytes(int64(len(msg)))
	b.ResetTimer()
	for range b.N {
		if _, err := f.filter(msg); err != nil {
			b.Fatal(err)
		}
	}
}
