package offsets

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

func rawConn(t *testing.T, path string) *sqlite3.Conn {
	t.Helper()
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func versionOf(t *testing.T, c *sqlite3.Conn) int64 {
	t.Helper()
	v, _, err := schemaVersion(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func hasColumn(t *testing.T, c *sqlite3.Conn, column string) bool {
	t.Helper()
	v, err := pragma(c, `SELECT count(*) FROM pragma_table_info('passbook_offsets') WHERE name = '`+column+`'`)
	if err != nil {
		t.Fatal(err)
	}
	return v == "1"
}

func TestSchemaVersion(t *testing.T) {
	if SchemaVersion != len(migrations) {
		t.Fatalf("SchemaVersion = %d, but there are %d migrations", SchemaVersion, len(migrations))
	}
	path := filepath.Join(t.TempDir(), "offsets.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := versionOf(t, rawConn(t, path)); got != SchemaVersion {
		t.Errorf("version after Open = %d, want %d", got, SchemaVersion)
	}
}

func TestMigrate(t *testing.T) {
	addEpoch := `ALTER TABLE passbook_offsets ADD COLUMN leader_epoch INTEGER NOT NULL DEFAULT -1`
	v2 := append(slices.Clone(migrations), addEpoch)
	cur := int64(len(migrations))
	tests := []struct {
		name        string
		steps       [][]string // migration lists applied in turn
		wantErr     bool
		wantVersion int64
		wantEpoch   bool
	}{
		{"Fresh", [][]string{migrations}, false, cur, false},
		{"Twice", [][]string{migrations, migrations}, false, cur, false},
		{"Upgrade", [][]string{migrations, v2}, false, cur + 1, true},
		{"AllAtOnce", [][]string{v2}, false, cur + 1, true},
		{"FromFirst", [][]string{migrations[:1], v2}, false, cur + 1, true},
		// A failing step rolls back the whole run, earlier steps included.
		{"FailureRollsBack", [][]string{migrations, append(slices.Clone(v2), `CREATE TABLE broken (`)}, true, cur, false},
		{"Downgrade", [][]string{v2, migrations}, true, cur + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rawConn(t, filepath.Join(t.TempDir(), "offsets.db"))
			var err error
			for _, list := range tt.steps {
				if err = migrate(c, "test.db", list); err != nil {
					break
				}
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("migrate: err = %v, want error %v", err, tt.wantErr)
			}
			if tt.name == "Downgrade" && !errors.Is(err, ErrSchemaVersion) {
				t.Errorf("err = %v, want ErrSchemaVersion", err)
			}
			if got := versionOf(t, c); got != tt.wantVersion {
				t.Errorf("version = %d, want %d", got, tt.wantVersion)
			}
			if got := hasColumn(t, c, "leader_epoch"); got != tt.wantEpoch {
				t.Errorf("leader_epoch column = %v, want %v", got, tt.wantEpoch)
			}
			if !c.GetAutocommit() {
				t.Error("a transaction was left open")
			}
		})
	}
}

func TestOpen_NewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	c := rawConn(t, path)
	if err := c.Exec(`UPDATE passbook_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err = Open(path, nil)
	if !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("Open: err = %v, want ErrSchemaVersion", err)
	}
	if !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q names neither the version nor the file", err)
	}
}
