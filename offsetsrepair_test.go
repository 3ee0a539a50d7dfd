package passbook_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/offsets"
)

// TestRepair_OffsetStoreDamaged: an offsets.db that SQLite cannot read
// whole — a page overwritten, the file cut in half. verify reports it and
// says repair rebuilds it; repair moves the damaged file aside, builds a
// new store from every committed offset that reads back with a valid
// checksum, and says what it kept and lost; the data directory then
// opens, verify finds nothing wrong, and every offset kept is the one
// committed (none is moved).
func TestRepair_OffsetStoreDamaged(t *testing.T) {
	ctx := context.Background()
	const consumers = 300
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"PageOverwritten", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			mid := len(b) / 2 / 512 * 512
			copy(b[mid:mid+512], strings.Repeat("\xff", 512))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"TruncatedInHalf", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2/512*512); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openDB(t, dir)
			tp := createOrders(t, db)
			for range 10 {
				if _, err := tp.Append(passbook.Record{Value: []byte("v")}); err != nil {
					t.Fatal(err)
				}
			}
			committed := map[string]int64{}
			for i := range consumers {
				name := fmt.Sprintf("consumer-%03d-%s", i, strings.Repeat("x", 40))
				committed[name] = int64(i % 11)
				if err := db.Offsets().Commit(ctx, offsets.Key{Consumer: name, Topic: "orders"}, committed[name]); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			path := filepath.Join(dir, "offsets.db")
			tt.damage(t, path)

			r, err := passbook.Verify(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.AllProblems()) == 0 {
				t.Fatalf("verify of a damaged store found nothing: %+v", r)
			}
			r, err = passbook.Repair(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ps := r.AllProblems(); len(ps) != 0 {
				t.Fatalf("after repair: problems %v", ps)
			}
			var rebuilt string
			for _, a := range r.Actions {
				if a.What == "rebuild offset store" {
					rebuilt = a.Detail
				}
			}
			if !strings.Contains(rebuilt, "damaged file moved to offsets.db.damaged-") {
				t.Fatalf("repair's actions %+v: want a rebuild that says where the damaged file went", r.Actions)
			}
			if m, _ := filepath.Glob(path + ".damaged-*"); len(m) == 0 {
				t.Fatalf("the damaged file is not kept aside")
			}
			if r, err := passbook.Verify(dir, nil); err != nil || len(r.AllProblems()) != 0 {
				t.Fatalf("verify after repair: %v, %v", r.AllProblems(), err)
			}

			db = openDB(t, dir)
			defer db.Close()
			kept, err := db.Offsets().List(ctx, offsets.Filter{Topic: "orders"})
			if err != nil {
				t.Fatal(err)
			}
			if len(kept) == 0 {
				t.Fatalf("nothing salvaged of %d committed offsets", consumers)
			}
			for _, e := range kept {
				if want, ok := committed[e.Consumer]; !ok || e.Offset != want {
					t.Fatalf("salvaged %v at %d; committed %d", e.Key, e.Offset, want)
				}
			}
			if !strings.Contains(rebuilt, fmt.Sprintf("with the %d committed offsets", len(kept))) {
				t.Fatalf("repair says %q; want it to say it kept %d", rebuilt, len(kept))
			}
			t.Logf("kept %d of %d: %s", len(kept), consumers, rebuilt)
			if _, err := db.Offsets().Committed(ctx, offsets.Key{Consumer: "nobody", Topic: "orders"}); !errors.Is(err, offsets.ErrNotFound) {
				t.Fatal(err)
			}
		})
	}
}
