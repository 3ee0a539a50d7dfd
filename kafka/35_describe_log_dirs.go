package kafka

// DescribeLogDirs (key 35): versions 0–5.
//
// One log dir: the data directory, by its absolute path. Each
// partition asked for (every partition of every topic for a null topic
// list) that exists and is open is listed with its size — the bytes of
// its segment files, as `passbook topic describe` reports them —, an
// offset lag of 0 and is_future false; a topic or partition that does
// not exist, or a fenced partition, is left out, as Kafka leaves out
// what it has no log of. From v4 the data directory's file system's
// total and usable bytes (statfs; −1 where unknown); never cordoned
// (v5).
//
// ACLs: Describe on the cluster, as Kafka's handleDescribeLogDirsRequest;
// without it the answer lists no log dir, with CLUSTER_AUTHORIZATION_FAILED
// from v3 (before v3 the response has no error code: just nothing).

import (
	"context"
	"path/filepath"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeLogDirs, 0, 5, describeLogDirs) }

func describeLogDirs(_ context.Context, c *conn, req *kmsg.DescribeLogDirsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !c.allowedCluster(acl.Describe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return reply{resp: resp}, nil
	}
	// want is the partitions asked for, by topic; nil asks for all.
	var want map[string]map[int32]bool
	if req.Topics != nil {
		want = map[string]map[int32]bool{}
		for _, rt := range req.Topics {
			if want[rt.Topic] == nil {
				want[rt.Topic] = map[int32]bool{}
			}
			for _, p := range rt.Partitions {
				want[rt.Topic][p] = true
			}
		}
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = c.s.db.Dir()
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	dir.Topics = []kmsg.DescribeLogDirsResponseDirTopic{}
	for _, t := range c.s.db.Topics() {
		parts, asked := want[t.Name()]
		if want != nil && !asked {
			continue
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = t.Name()
		for _, p := range t.Describe().Partitions {
			if want != nil && !parts[p.Partition] || p.Fenced != "" {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = p.Partition, p.Bytes
			dt.Partitions = append(dt.Partitions, dp)
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	if req.Version >= 4 {
		dir.TotalBytes, dir.UsableBytes = diskSpace(dir.Dir)
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
	return reply{resp: resp}, nil
}
