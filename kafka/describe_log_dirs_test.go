package kafka

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logDirSizes is every partition's size as kadm's DescribeAllLogDirs
// reports it, by topic and partition, from the one log dir there must be.
func logDirSizes(t *testing.T, adm *kadm.Client, s kadm.TopicsSet) (kadm.DescribedLogDir, map[string]map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	all, err := adm.DescribeAllLogDirs(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[NodeID]
	if len(all) != 1 || len(dirs) != 1 {
		t.Fatalf("log dirs %v, want one broker with one dir", all)
	}
	var dir kadm.DescribedLogDir
	for _, d := range dirs {
		dir = d
	}
	sizes := map[string]map[int32]int64{}
	dir.Topics.Each(func(p kadm.DescribedLogDirPartition) {
		if p.OffsetLag != 0 || p.IsFuture {
			t.Errorf("%s/%d: offset lag %d, future %v", p.Topic, p.Partition, p.OffsetLag, p.IsFuture)
		}
		if sizes[p.Topic] == nil {
			sizes[p.Topic] = map[int32]int64{}
		}
		sizes[p.Topic][p.Partition] = p.Size
	})
	return dir, sizes
}

// realSizes is each partition's bytes as `passbook topic describe`
// reports them.
func realSizes(ts *testServer) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	for _, topic := range ts.db.Topics() {
		out[topic.Name()] = map[int32]int64{}
		for _, p := range topic.Describe().Partitions {
			out[topic.Name()][p.Partition] = p.Bytes
		}
	}
	return out
}

func equalSizes(a, b map[string]map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for topic, ps := range a {
		if len(ps) != len(b[topic]) {
			return false
		}
		for p, n := range ps {
			if m, ok := b[topic][p]; !ok || m != n {
				return false
			}
		}
	}
	return true
}

// DescribeLogDirs reports the data directory and every partition's real
// size, which grows with what is produced; v4+ the file system's total
// and usable bytes.
func TestDescribeLogDirs_RealSizes(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "orders", 3)
	ts.createTopic(t, "empty", 1)
	cl := ts.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 50 {
		r := &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte("a record of some size")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	dir, before := logDirSizes(t, adm, nil)
	if want := realSizes(ts); !equalSizes(before, want) {
		t.Fatalf("sizes %v, want the partitions' real sizes %v", before, want)
	}
	if before["orders"][0] == 0 || before["orders"][1] == 0 {
		t.Fatalf("orders partitions 0 and 1 hold records but have sizes %v", before["orders"])
	}
	if abs, _ := filepath.Abs(ts.db.Dir()); dir.Dir != abs {
		t.Errorf("log dir %q, want the data directory %q", dir.Dir, abs)
	}
	if dir.TotalBytes <= 0 || dir.UsableBytes < 0 || dir.UsableBytes > dir.TotalBytes {
		t.Errorf("total %d usable %d bytes, want 0 ≤ usable ≤ total, total > 0", dir.TotalBytes, dir.UsableBytes)
	}

	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 2, Value: []byte("one more")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	_, after := logDirSizes(t, adm, nil)
	if want := realSizes(ts); !equalSizes(after, want) {
		t.Fatalf("after a produce: sizes %v, want %v", after, want)
	}
	if after["orders"][2] <= before["orders"][2] {
		t.Errorf("orders/2 is %d bytes after a produce, %d before", after["orders"][2], before["orders"][2])
	}
}

// Asked for some partitions, the answer lists those and no others; an
// unknown topic or partition is left out, as in Kafka (kadm checks
// those against Metadata before asking: the raw request shows the
// broker's answer).
func TestDescribeLogDirs_OnlyWhatIsAsked(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "orders", 3)
	ts.createTopic(t, "other", 1)
	real := realSizes(ts)
	set := kadm.TopicsSet{}
	set.Add("orders", 0, 2)
	_, sizes := logDirSizes(t, kadm.NewClient(ts.client(t)), set)
	want := map[string]map[int32]int64{"orders": {0: real["orders"][0], 2: real["orders"][2]}}
	if !equalSizes(sizes, want) {
		t.Errorf("kadm: sizes %v, want %v", sizes, want)
	}

	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	for topic, ps := range map[string][]int32{"orders": {0, 2, 7}, "no-such-topic": {0}} {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = topic, ps
		req.Topics = append(req.Topics, rt)
	}
	resp := dialRaw(t, ts.addr).do(req).(*kmsg.DescribeLogDirsResponse)
	if resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
		t.Fatalf("error %d, dirs %+v", resp.ErrorCode, resp.Dirs)
	}
	got := map[string]map[int32]int64{}
	for _, dt := range resp.Dirs[0].Topics {
		got[dt.Topic] = map[int32]int64{}
		for _, dp := range dt.Partitions {
			got[dt.Topic][dp.Partition] = dp.Size
		}
	}
	if !equalSizes(got, want) {
		t.Errorf("raw: sizes %v, want %v", got, want)
	}

	req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
	resp = dialRaw(t, ts.addr).do(req).(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 1 || len(resp.Dirs[0].Topics) != 0 {
		t.Errorf("an empty topic list: dirs %+v, want the log dir and no topic", resp.Dirs)
	}
}

// Every version answers; the disk space is there from v4, −1 before.
func TestDescribeLogDirs_Versions(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic(t, "orders", 2)
	r := dialRaw(t, ts.addr)
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = v
		resp := r.do(req).(*kmsg.DescribeLogDirsResponse)
		if resp.ErrorCode != 0 || len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 {
			t.Fatalf("v%d: error %d, dirs %+v", v, resp.ErrorCode, resp.Dirs)
		}
		d := resp.Dirs[0]
		if len(d.Topics) != 1 || d.Topics[0].Topic != "orders" || len(d.Topics[0].Partitions) != 2 {
			t.Errorf("v%d: topics %+v, want orders with two partitions", v, d.Topics)
		}
		if hasSpace := d.TotalBytes > 0 && d.UsableBytes >= 0; hasSpace != (v >= 4) {
			t.Errorf("v%d: total %d usable %d bytes", v, d.TotalBytes, d.UsableBytes)
		}
	}
}

// Without Describe on the cluster: CLUSTER_AUTHORIZATION_FAILED and no
// log dir (v3+; before v3 there is no error code, just no log dir).
func TestDescribeLogDirs_NeedsDescribeOnTheCluster(t *testing.T) {
	w := newACLWorld(t)
	w.grant(t, clusterACL(acl.DescribeConfigs), topicACL(acl.Literal, "orders", acl.Describe))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(w.alice).DescribeAllLogDirs(ctx, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("kadm: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	r := dialRaw(t, w.ts.addr)
	if resp := r.authenticatePlain(2, "alice", testUsers["alice"]); resp.ErrorCode != 0 {
		t.Fatalf("alice: error %d", resp.ErrorCode)
	}
	for _, v := range []int16{2, 4} {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = v
		resp := r.do(req).(*kmsg.DescribeLogDirsResponse)
		want := kerr.ClusterAuthorizationFailed.Code
		if v < 3 {
			want = 0
		}
		if resp.ErrorCode != want || len(resp.Dirs) != 0 {
			t.Errorf("v%d: error %d, dirs %+v; want %d and none", v, resp.ErrorCode, resp.Dirs, want)
		}
	}
	if n := metricValue(t, w.ts.srv, "passbook_kafka_authorization_denied_total", "api", "DescribeLogDirs"); n < 3 {
		t.Errorf("denials counted: %v, want 3", n)
	}

	w.grant(t, clusterACL(acl.Describe))
	if _, sizes := logDirSizes(t, kadm.NewClient(w.alice), nil); len(sizes["orders"]) != 1 {
		t.Errorf("with Describe on the cluster: sizes %v", sizes)
	}
}
