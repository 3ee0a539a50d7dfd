package librdkafka

import (
	"slices"
	"strings"
	"testing"
)

// Static membership (KIP-345) with librdkafka's classic protocol: a
// member with group.instance.id is SIGKILLed and restarted within its
// session timeout (6 s); the restarted member, under a new member id,
// gets the same partitions, and the group does not rebalance: the
// server logs no new generation and the other member's assignment never
// changes.
func TestStatic_RestartedMemberKeepsPartitions(t *testing.T) {
	const partitions, topic = 4, "static"
	srv := launch(t, t.TempDir())
	createTopic(t, srv.Addr, topic, partitions)
	produce(t, srv.Addr, topic, partitions, 50)
	cfg := kip848Member{Addr: srv.Addr, Group: "static-group", Topic: topic, Protocol: "classic", InstanceID: "instance-s"}
	static := startMember(t, "static", cfg)
	cfg.InstanceID = "instance-o"
	other := startMember(t, "other", cfg)
	waitUntil(t, "the two members sharing the partitions", func() bool {
		return eachOnce(partitions, static, other) && len(static.partitions()) > 0 && len(other.partitions()) > 0 &&
			strings.Count(srv.Log(), "kafka: group rebalanced") > 0
	})
	waitUntil(t, "every record read", func() bool { return static.count()+other.count() >= partitions*50 })
	before, otherBefore := static.partitions(), other.partitions()
	other.mu.Lock()
	otherChanges := other.changes
	other.mu.Unlock()
	rebalances := strings.Count(srv.Log(), "kafka: group rebalanced")

	static.cmd.Process.Kill()
	<-static.exited
	cfg.InstanceID = "instance-s"
	restarted := startMember(t, "restarted", cfg)
	waitUntil(t, "the restarted static member assigned", func() bool { return len(restarted.partitions()) > 0 })
	if got := restarted.partitions(); !slices.Equal(got, before) {
		t.Errorf("the restarted member owns %v, want %v as before", got, before)
	}
	if !strings.Contains(srv.Log(), "static group member rejoined under a new member id") {
		t.Errorf("the server did not log the static member's return:\n%s", srv.Log())
	}
	if n := strings.Count(srv.Log(), "kafka: group rebalanced"); n != rebalances {
		t.Errorf("the group rebalanced %d more times after the restart, want 0", n-rebalances)
	}
	other.mu.Lock()
	changes := other.changes
	other.mu.Unlock()
	if got := other.partitions(); !slices.Equal(got, otherBefore) || changes != otherChanges {
		t.Errorf("the other member owns %v after %d changes, want %v after %d", got, changes, otherBefore, otherChanges)
	}
}
