package jsonfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/internal/jsonfile"
)

type doc struct {
	N     int      `json:"n"`
	Names []string `json:"names"`
}

func TestUpdate_ConcurrentWritersLoseNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "doc.json")
	a, err := jsonfile.Open[doc](path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := jsonfile.Open[doc](path) // another process, in effect: its own lock file descriptor
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			f := a
			if i%2 == 1 {
				f = b
			}
			if err := f.Update(func(d *doc) error { d.N++; return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c, _ := jsonfile.Open[doc](path)
	if d, err := c.Get(); err != nil || d.N != 20 {
		t.Fatalf("after 20 increments from two handles: %d, %v", d.N, err)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600: the file holds credentials", info.Mode().Perm())
	}
}

func TestGet_SeesAnotherWriterAfterRecheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.json")
	reader, _ := jsonfile.Open[doc](path)
	writer, _ := jsonfile.Open[doc](path)
	if d, _ := reader.Get(); d.N != 0 {
		t.Fatal(d)
	}
	writer.Update(func(d *doc) error { d.N = 7; return nil })
	time.Sleep(jsonfile.Recheck)
	if d, err := reader.Get(); err != nil || d.N != 7 {
		t.Fatalf("reader sees %d, %v after Recheck; want 7", d.N, err)
	}
}

func TestDamagedFileNamesFileAndByte(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.json")
	os.WriteFile(path, []byte(`{"n": 1, "names": [}`), 0o600)
	_, err := jsonfile.Open[doc](path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "at byte 20") {
		t.Fatalf("err = %v, want the path and the byte", err)
	}
	// A good file damaged later: Get reports it rather than the old value,
	// and an Update changes nothing.
	os.WriteFile(path, []byte(`{"n": 1}`), 0o600)
	f, err := jsonfile.Open[doc](path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(`{"n": 1`), 0o600)
	time.Sleep(jsonfile.Recheck)
	if _, err := f.Get(); err == nil {
		t.Error("Get of a damaged file returned no error")
	}
	if err := f.Update(func(d *doc) error { d.N = 2; return nil }); err == nil {
		t.Error("Update over a damaged file succeeded")
	}
	if data, _ := os.ReadFile(path); string(data) != `{"n": 1` {
		t.Errorf("a failed Update changed the file: %q", data)
	}
}
