package web

import (
	"io/fs"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/vfs"
)

// fullDisk is the OS file system with a switch that makes every write
// fail with ENOSPC, as a full disk does.
type fullDisk struct {
	vfs.FS
	full atomic.Bool
}

func (d *fullDisk) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: f, d: d}, nil
}

type fullFile struct {
	vfs.File
	d *fullDisk
}

func (f *fullFile) Write(p []byte) (int, error) {
	if f.d.full.Load() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// TestServer_Readyz_UnwritablePartition: while a partition cannot write
// (a full disk), appends to it answer 503 partition_unwritable, /readyz
// answers 503 naming it and why, and the metrics count it; once space is
// back the partition takes appends by itself and /readyz is 200 again.
func TestServer_Readyz_UnwritablePartition(t *testing.T) {
	disk := &fullDisk{FS: vfs.OS()}
	e := newEnvDB(t, &passbook.Options{FS: disk}, nil)
	e.createTopic("orders", 2)
	const recs = `{"records": [{"value": "v"}]}`
	e.want(e.postJSON("/api/topics/orders/partitions/0/records", recs), http.StatusOK, "")
	e.want(e.get("/readyz"), http.StatusOK, "")

	disk.full.Store(true)
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

	disk.full.Store(false)
	waitFor(t, "appends taken again once space is back", func() bool {
		return e.postJSON("/api/topics/orders/partitions/0/records", recs).status == http.StatusOK
	})
	e.want(e.get("/readyz"), http.StatusOK, "")
	if got := e.metric("passbook_partitions_unwritable"); got != 0 {
		t.Fatalf("passbook_partitions_unwritable = %v after recovery", got)
	}
}
