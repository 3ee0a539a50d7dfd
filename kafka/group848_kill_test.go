package kafka

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitUntil polls cond until it holds; the deadline only keeps a broken
// run from hanging, it asserts nothing about speed.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Three franz-go members of a KIP-848 group, in child processes, share a
// 6-partition topic: the broker gives each partition to exactly one. One
// is killed with SIGKILL mid-way; at its session timeout the broker gives
// its partitions to the other two, which resume from its committed
// offsets: every record is processed, and twice only those the dead
// member processed without its commit returning. A classic group reads
// the same topic beside them, with its own offsets.
func TestConsumerGroup_ThreeMembers_Kill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs group members in child processes")
	}
	const (
		partitions = 6
		perPart    = 400
		group      = "orders-848"
		classic    = "orders-classic"
	)
	ts := startServer(t, nil)
	ts.consumerTimeouts(2*time.Second, 100*time.Millisecond)
	topic := ts.createTopic(t, "orders", partitions)
	// Session and Heartbeat are the classic protocol's: a KIP-848 member takes the broker's.
	cfg := memberConfig{Addr: ts.addr, Group: group, Topic: "orders", KIP848: true, Session: 2 * time.Second, Heartbeat: 100 * time.Millisecond,
		Delay: 2 * time.Millisecond, KillAt: -1, DoneAt: -1}
	var members []*memberProc
	for i := range 3 {
		members = append(members, startMember(t, fmt.Sprintf("member-%d", i), cfg))
	}

	// The classic group, in this process, reads everything and commits.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	classicSeen := make(chan map[[2]int64]bool, 1)
	cc := ts.client(t, kgo.ConsumerGroup(classic), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	go func() {
		seen := map[[2]int64]bool{}
		for len(seen) < partitions*perPart && ctx.Err() == nil {
			fs := cc.PollFetches(ctx)
			for _, r := range fs.Records() {
				seen[[2]int64{int64(r.Partition), r.Offset}] = true
			}
			cc.CommitUncommittedOffsets(ctx)
		}
		classicSeen <- seen
	}()

	cl := ts.client(t)
	owners := func() (map[int32]string, kmsg.ConsumerGroupDescribeResponseGroup) {
		d := describeConsumerGroup(t, cl, group)
		owner := map[int32]string{}
		for _, m := range d.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				for _, p := range tp.Partitions {
					if prev, dup := owner[p]; dup {
						t.Fatalf("partition %d assigned to %s and %s", p, prev, m.MemberID)
					}
					owner[p] = m.MemberID
				}
			}
		}
		return owner, d
	}
	reported := func(ms []*memberProc) map[int32]int {
		n := map[int32]int{}
		for _, m := range ms {
			m.mu.Lock()
			for _, p := range m.assigned {
				n[p]++
			}
			m.mu.Unlock()
		}
		return n
	}
	onceEach := func(n map[int32]int) bool {
		for p := range int32(partitions) {
			if n[p] != 1 {
				return false
			}
		}
		return len(n) == partitions
	}
	waitUntil(t, "a stable group of three, each partition owned by one", func() bool {
		owner, d := owners()
		return d.State == "Stable" && len(d.Members) == 3 && len(owner) == partitions && onceEach(reported(members))
	})
	_, d := owners()
	epochBefore := d.Epoch

	for p := range int32(partitions) {
		fill(t, topic, p, perPart)
	}
	victim, survivors := members[0], members[1:]
	waitUntil(t, "the victim processing", func() bool { done, _ := victim.counts(); return done >= 60 })
	victim.cmd.Process.Kill()
	<-victim.exited
	killed := time.Now()
	victim.mu.Lock()
	lost := slices.Clone(victim.assigned)
	victim.mu.Unlock()

	waitUntil(t, "the dead member removed and its partitions given to the two others", func() bool {
		owner, d := owners()
		return len(d.Members) == 2 && len(owner) == partitions && onceEach(reported(survivors))
	})
	movedAfter := time.Since(killed) // reported, not asserted
	_, d = owners()
	if d.Epoch <= epochBefore {
		t.Errorf("group epoch %d after the member died, want more than %d", d.Epoch, epochBefore)
	}

	seen := func(at [2]int64) int { return timesProcessed(members, at) }
	waitUntil(t, "every record processed", func() bool {
		for p := range int64(partitions) {
			for o := range int64(perPart) {
				if seen([2]int64{p, o}) == 0 {
					return false
				}
			}
		}
		return true
	})
	dups, inDoubt := auditDuplicates(t, members, victim, partitions, perPart)
	adm := kadm.NewClient(cl)
	waitUntil(t, "the KIP-848 group's last commits", func() bool {
		offs, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			return false
		}
		for p := range int32(partitions) {
			if o, _ := offs.Lookup("orders", p); o.At != perPart {
				return false
			}
		}
		return true
	})

	// The classic group read every record too, with its own offsets.
	cs := <-classicSeen
	if len(cs) != partitions*perPart {
		t.Errorf("the classic group saw %d records, want %d", len(cs), partitions*perPart)
	}
	waitUntil(t, "the classic group's commits", func() bool {
		offs, err := adm.FetchOffsets(context.Background(), classic)
		if err != nil {
			return false
		}
		for p := range int32(partitions) {
			if o, _ := offs.Lookup("orders", p); o.At != perPart {
				return false
			}
		}
		return true
	})
	listed, err := adm.ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, g := range listed {
		types[g.Group] = g.GroupType + " " + g.ProtocolType
	}
	if types[group] != "consumer consumer" || types[classic] != "classic consumer" {
		t.Errorf("ListGroups types: %v, want %s consumer and %s classic", types, group, classic)
	}
	victimDone, _ := victim.counts()
	t.Logf("killed %s (partitions %v) after %d records; the two others owned them %v after the kill (session timeout 2 s); %d records processed once, %d twice (%d in doubt at the kill), 0 missed",
		victim.name, lost, victimDone, movedAfter.Round(time.Millisecond), partitions*perPart-dups, dups, inDoubt)
}
