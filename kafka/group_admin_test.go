package kafka

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A Kafka group is a consumer name in the offset store: an embedded
// consumer's commits are the group's committed offsets, and a Kafka
// consumer's commits are what the embedded consumer resumes from.
func TestGroup_SharesTheOffsetStore(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "ledger", 2)
	fill(t, topic, 0, 50)
	fill(t, topic, 1, 50)
	ctx := context.Background()

	// The embedded consumer "billing" handles 30 records and stops.
	c, err := consumer.New(ctx, topic, ts.db.Offsets(), consumer.Options{Name: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	handled := 0
	err = c.Drain(ctx, func(context.Context, consumer.Message) error {
		if handled == 30 {
			return consumer.Stop
		}
		handled++
		return nil
	})
	if err != nil && !errors.Is(err, consumer.Stop) {
		t.Fatal(err)
	}
	embedded := c.Positions()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// A Kafka client reads those as the group's offsets …
	adm := kadm.NewClient(ts.client(t))
	got, err := adm.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for p, next := range embedded {
		if next == 0 {
			continue // nothing read there, nothing committed
		}
		if o, ok := got.Lookup("ledger", p); !ok || o.At != next {
			t.Fatalf("partition %d: OffsetFetch says %+v, the embedded consumer committed %d", p, o, next)
		}
	}

	// … a franz-go member of group "billing" resumes there and consumes
	// the rest …
	rest := 100
	for _, next := range embedded {
		rest -= int(next)
	}
	cl := ts.client(t, kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("ledger"), kgo.DisableAutoCommit())
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < rest {
		fs := cl.PollFetches(pctx)
		if pctx.Err() != nil {
			t.Fatalf("consumed %d of %d", len(recs), rest)
		}
		recs = append(recs, fs.Records()...)
	}
	for _, r := range recs {
		if r.Offset < embedded[r.Partition] {
			t.Fatalf("partition %d offset %d consumed again: the group starts at %d", r.Partition, r.Offset, embedded[r.Partition])
		}
	}
	if err := cl.CommitUncommittedOffsets(pctx); err != nil {
		t.Fatal(err)
	}
	// … and its commits are what the embedded consumer resumes from.
	for p := range int32(2) {
		off, err := ts.db.Offsets().Committed(ctx, offsets.Key{Consumer: "billing", Topic: "ledger", Partition: p})
		if err != nil || off != 50 {
			t.Fatalf("partition %d: the store holds %d, %v; want 50", p, off, err)
		}
	}

	// Admin: the live group and the embedded consumers are listed; a
	// live group is not deleted, nor moved by a plain commit.
	if err := ts.db.Offsets().Commit(ctx, offsets.Key{Consumer: "audit", Topic: "ledger", Partition: 0}, 7); err != nil {
		t.Fatal(err)
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, g := range listed.Sorted() {
		states[g.Group] = g.State
	}
	if states["billing"] != "Stable" || states["audit"] != "Empty" {
		t.Fatalf("ListGroups: %v", states)
	}
	described, err := adm.DescribeGroups(ctx, "billing", "audit", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["billing"]; d.State != "Stable" || d.ProtocolType != "consumer" || len(d.Members) != 1 || d.Protocol == "" {
		t.Fatalf("billing: %+v", d)
	}
	if d := described["billing"]; len(d.AssignedPartitions()["ledger"]) != 2 {
		t.Fatalf("billing's assignment: %v", d.AssignedPartitions())
	}
	if described["audit"].State != "Empty" || described["nobody"].State != "Dead" {
		t.Fatalf("audit %q, nobody %q", described["audit"].State, described["nobody"].State)
	}
	deleted, err := adm.DeleteGroups(ctx, "billing", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(deleted["billing"].Err, kerr.NonEmptyGroup) || !errors.Is(deleted["nobody"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("DeleteGroups: %+v", deleted)
	}
	committed, err := adm.CommitOffsets(ctx, "billing", kadm.OffsetsFromRecords(kgo.Record{Topic: "ledger", Partition: 0, Offset: 0}))
	if err == nil {
		err = committed.Error()
	}
	if !errors.Is(err, kerr.UnknownMemberID) {
		t.Fatalf("a plain commit to a live group: %v, want UNKNOWN_MEMBER_ID", err)
	}

	// Once its member leaves, the group is Empty: plain commits (a reset
	// by an admin tool) go through, and deleting it deletes its offsets.
	cl.Close()
	if d, _ := adm.DescribeGroups(ctx, "billing"); d["billing"].State != "Empty" {
		t.Fatalf("after the member left: %q", d["billing"].State)
	}
	committed, err = adm.CommitOffsets(ctx, "billing", kadm.OffsetsFromRecords(kgo.Record{Topic: "ledger", Partition: 0, Offset: 9}))
	if err != nil || committed.Error() != nil {
		t.Fatalf("a plain commit to an empty group: %v %v", err, committed.Error())
	}
	if off, _ := ts.db.Offsets().Committed(ctx, offsets.Key{Consumer: "billing", Topic: "ledger", Partition: 0}); off != 10 {
		t.Fatalf("after the reset: %d, want 10", off)
	}
	deleted, err = adm.DeleteGroups(ctx, "billing", "audit")
	if err != nil || deleted.Error() != nil {
		t.Fatalf("DeleteGroups: %v %v", err, deleted.Error())
	}
	if left, _ := ts.db.Offsets().List(ctx, offsets.Filter{}); len(left) != 0 {
		t.Fatalf("offsets left after deleting both groups: %+v", left)
	}
	t.Logf("franz-go and kadm negotiated: %s", ts.log)
}

// The server keeps groups in memory: after a restart a member's
// heartbeat gets UNKNOWN_MEMBER_ID, it joins again, and it resumes from
// the offsets committed before the restart — nothing is read twice.
func TestGroup_MembersRejoinAfterRestart(t *testing.T) {
	dir := t.TempDir()
	start := func(addr string) (*Server, *passbook.DB, string) {
		db, err := passbook.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := NewServer(db, &Options{GroupMinSessionTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var ln net.Listener
		for range 100 { // the old listener's port may take a moment to free
			if ln, err = net.Listen("tcp", addr); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(context.Background(), ln)
		return srv, db, ln.Addr().String()
	}
	stop := func(srv *Server, db *passbook.DB) {
		srv.Close()
		db.Close()
	}
	srv, db, addr := start("127.0.0.1:0")
	topic, err := db.CreateTopic("restart", passbook.TopicConfig{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, topic, 0, 50)
	fill(t, topic, 1, 50)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("survivor"), kgo.ConsumeTopics("restart"),
		kgo.SessionTimeout(time.Second), kgo.HeartbeatInterval(100*time.Millisecond), quickRetries, quickMetadata,
		kgo.AutoCommitInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen, total := map[string]int{}, 0
	poll := func(want int) {
		for total < want {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d", total, want)
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; total++ })
		}
	}
	poll(100)
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	stop(srv, db)

	srv, db, _ = start(addr)
	defer stop(srv, db)
	restarted := time.Now()
	topic, _ = db.Topic("restart")
	fill(t, topic, 0, 50) // values repeat "0-0"…: new offsets 50–99
	fill(t, topic, 1, 50)
	poll(200) // the same values again, from offsets 50–99
	for v, k := range seen {
		if k != 2 {
			t.Fatalf("%s seen %d times, want 2 (once before the restart, once after)", v, k)
		}
	}
	consumed := time.Since(restarted)
	adm := kadm.NewClient(cl)
	for {
		d, err := adm.DescribeGroups(ctx, "survivor")
		if err == nil && d["survivor"].State == "Stable" && len(d["survivor"].Members) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the member did not rejoin: %+v %v", d["survivor"], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("after the restart: the new records consumed in %v, the member back in the group in %v",
		consumed.Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))
}
