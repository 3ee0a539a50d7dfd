package web

import (
	"net/http"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/vfs"
)

// TestServer_Readyz_UnwritablePartition: while a partition cannot write
// (a full disk), appends to it answer 503 partition_unwritable, /readyz
// answers 503 naming it and why, and the metrics count it; once space is
// back the partition takes appends by itself and /readyz is 200 again.
func TestServer_Readyz_UnwritablePartition(t *testing.T) {
	// write(2): through a mapping, appends into the space allocated
	// before the disk filled still succeed (storage's TestMapped_FullDisk).
	disk := vfs.NewFull(vfs.WithoutMapping(vfs.OS()))
	e := newEnvDB(t, &passbook.Options{FS: disk}, nil)
	e.createTopic("orders", 2)
	const recs = `{"records": [{"value": "v"}]}`
	e.want(e.postJSON("/api/topics/orders/partitions/0/records", recs), http.StatusOK, "")
	e.want(e.get("/readyz"), http.StatusOK, "")

	disk.SetFull(true)
	e.want(e.postJSON("/api/topics/orders/partitions/0/records", recs), http.StatusServiceUnavailable, CodeUnwritable)
	r := e.get("/readyz")
	var body struct {
		Status     string                      `json:"status"`
		Partitions []passbook.PartitionProblem `json:"partitions"`
	}
	r.decode(t, &body)
	if r.status != http.StatusServiceUnavailable || body.Status != "degraded" || len(body.Partitions) != 1 {
		t.Fatalf("/readyz = %d %s", r.status, r.body)
	}
	if p := body.Partitions[0]; p.Topic != "orders" || p.Partition != 0 || p.State != passbook.StateUnwritable || !p.Retrying || p.Since.IsZero() {
		t.Fatalf("/readyz lists %+v", p)
	}
	if got := e.metric("passbook_partitions_unwritable"); got != 1 {
		t.Fatalf("passbook_partitions_unwritable = %v", got)
	}
	if got := e.metric("passbook_partition_write_failures_total"); got != 1 {
		t.Fatalf("passbook_partition_write_failures_total = %v", got)
	}

	disk.SetFull(false)
	waitFor(t, "appends taken again once space is back", func() bool {
		return e.postJSON("/api/topics/orders/partitions/0/records", recs).status == http.StatusOK
	})
	e.want(e.get("/readyz"), http.StatusOK, "")
	if got := e.metric("passbook_partitions_unwritable"); got != 0 {
		t.Fatalf("passbook_partitions_unwritable = %v after recovery", got)
	}
}
