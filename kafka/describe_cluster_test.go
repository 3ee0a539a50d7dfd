package kafka

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster answers with this one broker, as Metadata advertises
// it, the cluster ID and itself as the controller, at every version.
func TestDescribeCluster_TheBrokerAsAdvertised(t *testing.T) {
	ts := startServer(t, &Options{ClusterID: "pb-test-cluster"})
	cl := ts.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 {
		t.Fatalf("metadata brokers %v, want one", md.Brokers)
	}
	host, port, _ := net.SplitHostPort(ts.addr)
	r := dialRaw(t, ts.addr)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		resp := r.do(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		if resp.ClusterID != "pb-test-cluster" || resp.ControllerID != NodeID || len(resp.Brokers) != 1 {
			t.Fatalf("v%d: cluster %q controller %d brokers %v", v, resp.ClusterID, resp.ControllerID, resp.Brokers)
		}
		b, m := resp.Brokers[0], md.Brokers[0]
		if b.NodeID != m.NodeID || b.Host != m.Host || b.Port != m.Port || b.Host != host || strconv.Itoa(int(b.Port)) != port || b.IsFenced {
			t.Errorf("v%d: broker %d %s:%d fenced %v, metadata says %d %s:%d (dialled %s)", v, b.NodeID, b.Host, b.Port, b.IsFenced, m.NodeID, m.Host, m.Port, ts.addr)
		}
		if resp.ClusterAuthorizedOperations != -2147483648 {
			t.Errorf("v%d: authorized operations %d when not asked for", v, resp.ClusterAuthorizedOperations)
		}
	}
}

// Only the broker endpoint type is served: a controller's is
// MISMATCHED_ENDPOINT_TYPE, an unknown one UNSUPPORTED_ENDPOINT_TYPE.
func TestDescribeCluster_EndpointTypes(t *testing.T) {
	ts := startServer(t, nil)
	r := dialRaw(t, ts.addr)
	for _, tc := range []struct {
		endpoint int8
		want     *kerr.Error
	}{
		{endpointController, kerr.MismatchedEndpointType},
		{0, kerr.UnsupportedEndpointType},
		{7, kerr.UnsupportedEndpointType},
	} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = 1, tc.endpoint
		resp := r.do(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != tc.want.Code || len(resp.Brokers) != 0 {
			t.Errorf("endpoint type %d: error %d, brokers %v; want %s and none", tc.endpoint, resp.ErrorCode, resp.Brokers, tc.want)
		}
	}
}

// As in Kafka, anyone may describe the cluster; the cluster's
// authorized operations need Describe on it (0 without, every one for a
// super user), and a denial is counted.
func TestDescribeCluster_AuthorizedOperations(t *testing.T) {
	w := newACLWorld(t)
	all := int32(1<<acl.Create | 1<<acl.ClusterAction | 1<<acl.DescribeConfigs | 1<<acl.AlterConfigs | 1<<acl.IdempotentWrite | 1<<acl.Alter | 1<<acl.Describe)
	for _, tc := range []struct {
		name  string
		grant []acl.Binding
		user  string
		want  int32
	}{
		{"super user", nil, "admin", all},
		{"Describe and IdempotentWrite", []acl.Binding{clusterACL(acl.Describe), clusterACL(acl.IdempotentWrite)}, "alice", 1<<acl.Describe | 1<<acl.IdempotentWrite},
		{"IdempotentWrite without Describe", []acl.Binding{clusterACL(acl.IdempotentWrite)}, "alice", 0},
		{"nothing", nil, "alice", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.grant(t, tc.grant...)
			before := metricValue(t, w.ts.srv, "passbook_kafka_authorization_denied_total", "api", "DescribeCluster")
			r := dialRaw(t, w.ts.addr)
			if resp := r.authenticatePlain(2, tc.user, testUsers[tc.user]); resp.ErrorCode != 0 {
				t.Fatalf("%s: error %d", tc.user, resp.ErrorCode)
			}
			req := kmsg.NewPtrDescribeClusterRequest()
			req.Version, req.IncludeClusterAuthorizedOperations = 2, true
			resp := r.do(req).(*kmsg.DescribeClusterResponse)
			if resp.ErrorCode != 0 || len(resp.Brokers) != 1 {
				t.Fatalf("error %d, brokers %v", resp.ErrorCode, resp.Brokers)
			}
			if resp.ClusterAuthorizedOperations != tc.want {
				t.Errorf("authorized operations %b, want %b", resp.ClusterAuthorizedOperations, tc.want)
			}
			after := metricValue(t, w.ts.srv, "passbook_kafka_authorization_denied_total", "api", "DescribeCluster")
			if denied := tc.want == 0; denied != (after > max(before, 0)) {
				t.Errorf("denials counted %v → %v", before, after)
			}
		})
	}
}
