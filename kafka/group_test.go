package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group coordinator's state machine, driven directly with kmsg
// requests and the fake clock of testing/synctest: timeouts are exact
// and take no time.

// coord is a coordinator over a memory offset store that knows one
// topic, "t", of 6 partitions.
type coord struct {
	t     *testing.T
	co    *coordinator
	store offsets.Store
}

func newCoord(t *testing.T) *coord {
	store := offsets.NewMemory()
	parts := func(topic string) (int, error) {
		if topic == "t" {
			return 6, nil
		}
		return 0, passbook.ErrUnknownTopic
	}
	co := newCoordinator(store, parts, slog.New(slog.DiscardHandler), time.Second, time.Hour)
	t.Cleanup(co.close)
	return &coord{t: t, co: co, store: store}
}

// tm is a test member: its id and the generation it last joined.
type tm struct {
	id  string
	gen int32
}

func joinRequest(version int16, group, memberID string, session time.Duration, protocols ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID = version, group, memberID
	req.SessionTimeoutMillis = int32(session / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(2 * session / time.Millisecond)
	req.ProtocolType = "consumer"
	for _, p := range protocols {
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte("meta-" + p)})
	}
	return req
}

// newMember joins as a new member (v9: MEMBER_ID_REQUIRED, then again
// with the id) and returns the parked JoinGroup.
func (c *coord) newMember(group string, session time.Duration) (string, *waiter) {
	c.t.Helper()
	resp, w := c.co.join(joinRequest(9, group, "", session, "range"), "client", "/127.0.0.1")
	if w != nil || resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
		c.t.Fatalf("first join: %+v, parked %v; want MEMBER_ID_REQUIRED and an id", resp, w != nil)
	}
	resp, w = c.co.join(joinRequest(9, group, resp.MemberID, session, "range"), "client", "/127.0.0.1")
	if w == nil {
		c.t.Fatalf("second join answered at once: %+v", resp)
	}
	return resp.MemberID, w
}

// rejoin sends a known member's JoinGroup; it is parked or answered.
func (c *coord) rejoin(group, id string, session time.Duration) *waiter {
	resp, w := c.co.join(joinRequest(9, group, id, session, "range"), "client", "/127.0.0.1")
	if w == nil {
		w = newWaiter(resp)
		w.answer()
	}
	return w
}

// joined returns a JoinGroup's answer, failing if it is not answered
// once every goroutine is blocked.
func (c *coord) joined(w *waiter) *kmsg.JoinGroupResponse {
	c.t.Helper()
	synctest.Wait()
	select {
	case <-w.done:
	default:
		c.t.Fatal("JoinGroup not answered")
	}
	return w.resp.(*kmsg.JoinGroupResponse)
}

func parked(w *waiter) bool {
	synctest.Wait()
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

func (c *coord) sync(group string, m tm, assign map[string]string) *waiter {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 5, group, m.id, m.gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for id, a := range assign {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(a)})
	}
	resp, w := c.co.sync(req)
	if w == nil {
		w = newWaiter(resp)
		w.answer()
	}
	return w
}

func (c *coord) synced(w *waiter) *kmsg.SyncGroupResponse {
	c.t.Helper()
	if parked(w) {
		c.t.Fatal("SyncGroup not answered")
	}
	return w.resp.(*kmsg.SyncGroupResponse)
}

func commitRequest(group string, m tm, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 9, group, m.id, m.gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.Metadata = p, o, kmsg.StringPtr("meta")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// commit commits offsets on topic "t" and returns the one error code of
// every partition (failing the test if they differ).
func (c *coord) commit(group string, m tm, offsets map[int32]int64) int16 {
	c.t.Helper()
	resp := c.co.commit(context.Background(), commitRequest(group, m, "t", offsets))
	code := int16(-1)
	for _, p := range resp.Topics[0].Partitions {
		if code != -1 && p.ErrorCode != code {
			c.t.Fatalf("partitions answered differently: %+v", resp.Topics[0].Partitions)
		}
		code = p.ErrorCode
	}
	return code
}

func (c *coord) committed(group string, p int32) int64 {
	c.t.Helper()
	off, err := c.store.Committed(context.Background(), offsets.Key{Consumer: group, Topic: "t", Partition: p})
	if errors.Is(err, offsets.ErrNotFound) {
		return -1
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return off
}

func wantErr(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if w := int16(0); want != nil && got != want.Code || want == nil && got != w {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func TestGroup_JoinSyncRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		const session = 10 * time.Second

		// A alone: generation 1, leader, stable once it syncs.
		aID, wa := c.newMember("g", session)
		ja := c.joined(wa)
		wantErr(t, "A joins", ja.ErrorCode, nil)
		a := tm{aID, ja.Generation}
		if ja.Generation != 1 || ja.LeaderID != aID || len(ja.Members) != 1 || string(ja.Members[0].ProtocolMetadata) != "meta-range" {
			t.Fatalf("A's join: %+v", ja)
		}
		if sa := c.synced(c.sync("g", a, map[string]string{aID: "all six"})); string(sa.MemberAssignment) != "all six" {
			t.Fatalf("A's sync: %+v", sa)
		}
		wantErr(t, "A commits", c.commit("g", a, map[int32]int64{0: 10}), nil)

		// B joins: a rebalance; A learns of it by heartbeat, may still
		// commit at its generation, and rejoins.
		bID, wb := c.newMember("g", session)
		if !parked(wb) {
			t.Fatal("B's join answered before A rejoined")
		}
		wantErr(t, "A's heartbeat", c.co.heartbeat("g", aID, nil, a.gen), kerr.RebalanceInProgress)
		wantErr(t, "A's commit while preparing the rebalance", c.commit("g", a, map[int32]int64{0: 11}), nil)
		wa = c.rejoin("g", aID, session)
		ja, jb := c.joined(wa), c.joined(wb)
		if ja.Generation != 2 || jb.Generation != 2 || ja.LeaderID != aID || jb.LeaderID != aID {
			t.Fatalf("generation 2: A %+v, B %+v", ja, jb)
		}
		if len(ja.Members) != 2 || len(jb.Members) != 0 {
			t.Fatalf("the leader gets the %d members' metadata, a follower none: leader %d, follower %d", 2, len(ja.Members), len(jb.Members))
		}
		a.gen = 2
		b := tm{bID, 2}

		// B syncs first and waits for the leader's assignment.
		wb = c.sync("g", b, nil)
		if !parked(wb) {
			t.Fatal("B's sync answered before the leader's")
		}
		wantErr(t, "commit while completing the rebalance", c.commit("g", b, map[int32]int64{3: 1}), kerr.RebalanceInProgress)
		sa := c.synced(c.sync("g", a, map[string]string{aID: "0,1,2", bID: "3,4,5"}))
		sb := c.synced(wb)
		if string(sa.MemberAssignment) != "0,1,2" || string(sb.MemberAssignment) != "3,4,5" || *sb.Protocol != "range" {
			t.Fatalf("assignments relayed: A %q, B %q", sa.MemberAssignment, sb.MemberAssignment)
		}
		wantErr(t, "B commits", c.commit("g", b, map[int32]int64{3: 30}), nil)
		// A's commit from generation 1 is refused: its partitions may be
		// someone else's now.
		wantErr(t, "commit from a stale generation", c.commit("g", tm{aID, 1}, map[int32]int64{0: 99}), kerr.IllegalGeneration)
		if got := c.committed("g", 0); got != 11 {
			t.Fatalf("partition 0 committed %d, want 11 (the stale commit must not land)", got)
		}
		if got := c.committed("g", 3); got != 30 {
			t.Fatalf("partition 3 committed %d, want 30", got)
		}

		// B leaves: A rebalances alone at generation 3.
		codes, code := c.co.leave("g", []kmsg.LeaveGroupRequestMember{{MemberID: bID}})
		if code != 0 || codes[0] != 0 {
			t.Fatalf("leave: %v %v", codes, code)
		}
		wantErr(t, "A's heartbeat after B left", c.co.heartbeat("g", aID, nil, 2), kerr.RebalanceInProgress)
		wantErr(t, "B's heartbeat after it left", c.co.heartbeat("g", bID, nil, 2), kerr.UnknownMemberID)
		if ja := c.joined(c.rejoin("g", aID, session)); ja.Generation != 3 || len(ja.Members) != 1 {
			t.Fatalf("generation 3: %+v", ja)
		}
	})
}

// A member that stops heartbeating is removed at its session timeout,
// to the millisecond, and the others rebalance without it.
func TestGroup_SessionTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		const session = 6 * time.Second
		a, b := c.stableGroup("g", session)
		start := time.Now()
		// A heartbeats every second, from 0.5s; B has died.
		var removedAfter time.Duration
		time.Sleep(time.Second / 2)
		for range 20 {
			time.Sleep(time.Second)
			if code := c.co.heartbeat("g", a.id, nil, a.gen); code != 0 {
				wantErr(t, "A's heartbeat", code, kerr.RebalanceInProgress)
				removedAfter = time.Since(start)
				break
			}
		}
		if want := session + time.Second/2; removedAfter != want {
			// B's session ran out at 6s; A's next heartbeat, at 6.5s, hears of it.
			t.Fatalf("A told to rebalance after %v, want %v", removedAfter, want)
		}
		wantErr(t, "B's heartbeat", c.co.heartbeat("g", b.id, nil, b.gen), kerr.UnknownMemberID)
		wantErr(t, "B's commit", c.commit("g", b, map[int32]int64{1: 5}), kerr.UnknownMemberID)
		ja := c.joined(c.rejoin("g", a.id, session))
		if ja.Generation != a.gen+1 || len(ja.Members) != 1 || ja.Members[0].MemberID != a.id {
			t.Fatalf("after B's removal: %+v", ja)
		}
	})
}

// stableGroup makes a stable group of two members, A (the leader) and B.
func (c *coord) stableGroup(group string, session time.Duration) (tm, tm) {
	c.t.Helper()
	aID, wa := c.newMember(group, session)
	c.joined(wa)
	bID, wb := c.newMember(group, session)
	wa = c.rejoin(group, aID, session)
	ja, _ := c.joined(wa), c.joined(wb)
	a, b := tm{aID, ja.Generation}, tm{bID, ja.Generation}
	wb = c.sync(group, b, nil)
	c.synced(c.sync(group, a, map[string]string{aID: "a", bID: "b"}))
	c.synced(wb)
	return a, b
}

// A member that does not rejoin within the rebalance timeout is left out
// of the next generation, even though it heartbeats.
func TestGroup_RebalanceTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		const session = 5 * time.Second // rebalance timeout: 10s
		a, b := c.stableGroup("g", session)
		cID, wc := c.newMember("g", session)
		start := time.Now()
		wa := c.rejoin("g", a.id, session)
		for parked(wa) {
			time.Sleep(time.Second)
			c.co.heartbeat("g", b.id, nil, b.gen) // alive, but never rejoins
		}
		if took := time.Since(start); took != 10*time.Second {
			t.Fatalf("join completed after %v, want the rebalance timeout, 10s", took)
		}
		ja, jc := c.joined(wa), c.joined(wc)
		if len(ja.Members) != 2 || jc.Generation != ja.Generation || jc.MemberID != cID {
			t.Fatalf("without B: A %+v, C %+v", ja, jc)
		}
		wantErr(t, "B's heartbeat", c.co.heartbeat("g", b.id, nil, b.gen), kerr.UnknownMemberID)
	})
}

// A leader that never sends its SyncGroup is removed at the rebalance
// timeout; the member waiting for its assignment is told to rejoin.
func TestGroup_LeaderNeverSyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		const session = 5 * time.Second
		a, b := c.stableGroup("g", session)
		wa, wb := c.rejoin("g", a.id, session), c.rejoin("g", b.id, session)
		ja := c.joined(wa)
		c.joined(wb)
		start := time.Now()
		time.Sleep(time.Second)
		wsb := c.sync("g", tm{b.id, ja.Generation}, nil)
		for parked(wsb) {
			time.Sleep(time.Second / 10)
		}
		if took := time.Since(start); took != 5*time.Second {
			// The leader's session (5s from the join) runs out before
			// the sync timeout (10s).
			t.Fatalf("B's sync answered %v after the join, want 5s", took)
		}
		wantErr(t, "B's sync", c.synced(wsb).ErrorCode, kerr.RebalanceInProgress)
		wantErr(t, "A's heartbeat", c.co.heartbeat("g", a.id, nil, ja.Generation), kerr.UnknownMemberID)
		jb := c.joined(c.rejoin("g", b.id, session))
		if jb.LeaderID != b.id {
			t.Fatalf("B is not the new leader: %+v", jb)
		}
	})
}

// The server shutting down answers a parked JoinGroup with
// COORDINATOR_NOT_AVAILABLE, so that the client finds the coordinator
// again.
func TestGroup_AwaitCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		a, b := c.stableGroup("g", 5*time.Second)
		w := c.rejoin("g", a.id, 5*time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			c.co.await(ctx, w)
			close(done)
		}()
		cancel()
		<-done
		wantErr(t, "parked join", c.joined(w).ErrorCode, kerr.CoordinatorNotAvailable)
		// The join completing later leaves the answered response alone:
		// the connection's writer owns it.
		if jb := c.joined(c.rejoin("g", b.id, 5*time.Second)); jb.ErrorCode != 0 {
			t.Fatalf("B's join: %v", kerr.ErrorForCode(jb.ErrorCode))
		}
		wantErr(t, "A's answered join after the rebalance", c.joined(w).ErrorCode, kerr.CoordinatorNotAvailable)
	})
}

func TestGroup_BadJoins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		a, _ := c.stableGroup("g", 5*time.Second)
		noProtocols := joinRequest(9, "g2", "", 5*time.Second)
		noType := joinRequest(9, "g2", "", 5*time.Second, "range")
		noType.ProtocolType = ""
		otherType := joinRequest(9, "g", "", 5*time.Second, "range")
		otherType.ProtocolType = "connect"
		for _, tc := range []struct {
			name string
			req  *kmsg.JoinGroupRequest
			want *kerr.Error
		}{
			{"empty protocol list", noProtocols, kerr.InconsistentGroupProtocol},
			{"empty protocol type", noType, kerr.InconsistentGroupProtocol},
			{"a protocol no member supports", joinRequest(9, "g", "", 5*time.Second, "roundrobin"), kerr.InconsistentGroupProtocol},
			{"another protocol type", otherType, kerr.InconsistentGroupProtocol},
			{"session under the minimum", joinRequest(9, "g2", "", 10*time.Millisecond, "range"), kerr.InvalidSessionTimeout},
			{"session over the maximum", joinRequest(9, "g2", "", 2*time.Hour, "range"), kerr.InvalidSessionTimeout},
			{"empty group id", joinRequest(9, "", "", 5*time.Second, "range"), kerr.InvalidGroupID},
			{"unknown member id", joinRequest(9, "g", "who", 5*time.Second, "range"), kerr.UnknownMemberID},
			{"unknown member id, unknown group", joinRequest(9, "g3", "who", 5*time.Second, "range"), kerr.UnknownMemberID},
			{"v4+ without a member id", joinRequest(4, "g2", "", 5*time.Second, "range"), kerr.MemberIDRequired},
		} {
			resp, w := c.co.join(tc.req, "client", "/127.0.0.1")
			if w != nil {
				t.Fatalf("%s: parked", tc.name)
			}
			wantErr(t, tc.name, resp.ErrorCode, tc.want)
		}
		// Before v4 a new member joins at once, with no MEMBER_ID_REQUIRED.
		resp, w := c.co.join(joinRequest(3, "g4", "", 5*time.Second, "range"), "client", "/127.0.0.1")
		if w == nil || c.joined(w).ErrorCode != 0 || resp.MemberID == "" || resp.Generation != 1 {
			t.Fatalf("v3 join: %+v", resp)
		}
		// SyncGroup and Heartbeat fencing.
		wantErr(t, "sync of an unknown member", c.synced(c.sync("g", tm{"who", a.gen}, nil)).ErrorCode, kerr.UnknownMemberID)
		wantErr(t, "sync at another generation", c.synced(c.sync("g", tm{a.id, a.gen + 1}, nil)).ErrorCode, kerr.IllegalGeneration)
		wantErr(t, "heartbeat at another generation", c.co.heartbeat("g", a.id, nil, a.gen-1), kerr.IllegalGeneration)
		wantErr(t, "heartbeat in an unknown group", c.co.heartbeat("nope", a.id, nil, a.gen), kerr.UnknownMemberID)
		codes, _ := c.co.leave("g", []kmsg.LeaveGroupRequestMember{{MemberID: "who"}})
		wantErr(t, "leave of an unknown member", codes[0], kerr.UnknownMemberID)
	})
}

func TestGroup_BadCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		a, _ := c.stableGroup("g", 5*time.Second)
		// One request: an unknown topic, a partition out of range, too much
		// metadata and a negative offset are refused; the rest commits.
		req := commitRequest("g", a, "t", map[int32]int64{0: 5})
		req.Topics[0].Partitions = append(req.Topics[0].Partitions,
			kmsg.OffsetCommitRequestTopicPartition{Partition: 6, Offset: 1},
			kmsg.OffsetCommitRequestTopicPartition{Partition: 1, Offset: 1, Metadata: kmsg.StringPtr(strings.Repeat("m", 4097))},
			kmsg.OffsetCommitRequestTopicPartition{Partition: 2, Offset: -1})
		req.Topics = append(req.Topics, commitRequest("g", a, "unknown-topic", map[int32]int64{0: 5}).Topics...)
		resp := c.co.commit(context.Background(), req)
		want := [][]*kerr.Error{{nil, kerr.UnknownTopicOrPartition, kerr.OffsetMetadataTooLarge, kerr.InvalidRequest}, {kerr.UnknownTopicOrPartition}}
		for i, rt := range resp.Topics {
			for j, rp := range rt.Partitions {
				wantErr(t, fmt.Sprintf("%s partition %d", rt.Topic, rp.Partition), rp.ErrorCode, want[i][j])
			}
		}
		if c.committed("g", 0) != 5 || c.committed("g", 1) != -1 || c.committed("g", 2) != -1 {
			t.Fatal("the refused partitions were committed, or the good one was not")
		}
		for _, tc := range []struct {
			name  string
			group string
			m     tm
			want  *kerr.Error
		}{
			{"stale generation", "g", tm{a.id, a.gen - 1}, kerr.IllegalGeneration},
			{"unknown member", "g", tm{"who", a.gen}, kerr.UnknownMemberID},
			{"a plain commit to a group with members", "g", tm{"", -1}, kerr.UnknownMemberID},
			{"a generation in a group the server does not know", "forgotten", tm{a.id, 3}, kerr.IllegalGeneration},
			{"empty group id", "", tm{"", -1}, kerr.InvalidGroupID},
		} {
			wantErr(t, tc.name, c.commit(tc.group, tc.m, map[int32]int64{4: 7}), tc.want)
		}
		if c.committed("g", 4) != -1 || c.committed("forgotten", 4) != -1 {
			t.Fatal("a refused commit was written")
		}
		// A group that only stores offsets commits with generation −1.
		wantErr(t, "plain commit", c.commit("offsets-only", tm{"", -1}, map[int32]int64{4: 7}), nil)
		if c.committed("offsets-only", 4) != 7 {
			t.Fatal("the plain commit was not written")
		}
	})
}
