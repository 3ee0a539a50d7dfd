package kafka

// The server-side assignors of KIP-848 consumer groups, chosen by a
// member's server_assignor (the group takes the one most members ask
// for; uniform by default, as Kafka 4's group.consumer.assignors):
//
//   - uniform spreads the subscribed partitions as evenly as the
//     subscriptions allow, and is sticky: a member keeps the partitions
//     of its previous target up to its share, so a member joining or
//     leaving moves only what must move. Topics with fewer subscribers
//     are placed first, so that a member subscribed to more topics does
//     not take its share from those the others cannot read.
//   - range gives each member of a topic's subscribers (sorted by member
//     id, by instance id for static members) a contiguous range of its
//     partitions, the first P mod N members one more: members subscribed
//     to the same co-partitioned topics get the same partition numbers
//     of each, as Kafka's range assignor.
//
// Both give every partition of a subscribed topic to exactly one member
// that subscribes to it.

import (
	"cmp"
	"slices"
	"strings"
)

type assignSpec struct {
	members []assignMember // sorted by id
	topics  []topicMeta    // sorted by name: the topics some member subscribes to
}

type assignMember struct {
	id         string
	key        string // the order of range: the instance id of a static member, else the member id
	subscribes func(topic string) bool
	prev       tpSet // its previous target
}

func emptyTarget(spec assignSpec) map[string]tpSet {
	out := make(map[string]tpSet, len(spec.members))
	for _, m := range spec.members {
		out[m.id] = tpSet{}
	}
	return out
}

// assignRange is the range assignor.
func assignRange(spec assignSpec) map[string]tpSet {
	out := emptyTarget(spec)
	for _, t := range spec.topics {
		var subs []assignMember
		for _, m := range spec.members {
			if m.subscribes(t.name) {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		slices.SortFunc(subs, func(a, b assignMember) int { return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.id, b.id)) })
		n := int32(len(subs))
		q, r := t.partitions/n, t.partitions%n
		p := int32(0)
		for i, m := range subs {
			k := q
			if int32(i) < r {
				k++
			}
			for range k {
				out[m.id][tp{t.id, p}] = struct{}{}
				p++
			}
		}
	}
	return out
}

// assignUniform is the uniform assignor.
func assignUniform(spec assignSpec) map[string]tpSet {
	out := emptyTarget(spec)
	if len(spec.members) == 0 {
		return out
	}
	type part struct {
		tp
		subs []int // indexes into members, in order of preference
	}
	// Members that held more before come first, so that they keep the
	// larger shares when the partitions do not divide evenly.
	members := slices.Clone(spec.members)
	slices.SortStableFunc(members, func(a, b assignMember) int { return len(b.prev) - len(a.prev) })
	var parts []part
	for _, t := range spec.topics {
		var subs []int
		for i, m := range members {
			if m.subscribes(t.name) {
				subs = append(subs, i)
			}
		}
		if len(subs) == 0 {
			continue
		}
		for p := range t.partitions {
			parts = append(parts, part{tp{t.id, p}, subs})
		}
	}
	slices.SortStableFunc(parts, func(a, b part) int { return len(a.subs) - len(b.subs) })

	// The shares: each partition to the subscriber with the fewest so
	// far. This is balanced; what follows keeps the same counts but
	// prefers the partitions each member had.
	quota := make([]int, len(members))
	for _, p := range parts {
		best := p.subs[0]
		for _, i := range p.subs[1:] {
			if quota[i] < quota[best] {
				best = i
			}
		}
		quota[best]++
	}
	count := make([]int, len(members))
	taken := make(map[tp]bool, len(parts))
	valid := make(map[tp][]int, len(parts))
	for _, p := range parts {
		valid[p.tp] = p.subs
	}
	for i, m := range members {
		for _, p := range m.prev.sorted() {
			if count[i] >= quota[i] {
				break
			}
			if subs, ok := valid[p]; ok && !taken[p] && slices.Contains(subs, i) {
				taken[p] = true
				count[i]++
				out[m.id][p] = struct{}{}
			}
		}
	}
	for _, p := range parts {
		if taken[p.tp] {
			continue
		}
		best := -1
		for _, i := range p.subs {
			room := count[i] < quota[i]
			switch {
			case best < 0:
				best = i
			case room && count[best] >= quota[best]:
				best = i
			case room == (count[best] < quota[best]) && count[i] < count[best]:
				best = i
			}
		}
		taken[p.tp] = true
		count[best]++
		out[members[best].id][p.tp] = struct{}{}
	}
	return out
}
