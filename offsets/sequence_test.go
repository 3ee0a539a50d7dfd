package offsets

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

func TestSQLite_NextID(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "offsets.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for want := range int64(3) {
		if got, err := s.NextID(ctx, "producer"); err != nil || got != want {
			t.Fatalf("NextID = %d, %v; want %d", got, err, want)
		}
	}
	if got, err := s.NextID(ctx, "other"); err != nil || got != 0 {
		t.Fatalf("NextID of another sequence = %d, %v; want 0", got, err)
	}
	if _, err := s.NextID(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NextID(\"\"): err = %v, want ErrInvalid", err)
	}
	// Commits go on at the store's own synchronous setting afterwards.
	if v, err := pragmaOf(s, `PRAGMA synchronous`); err != nil || v != "1" {
		t.Fatalf("synchronous after NextID = %q, %v; want 1 (normal)", v, err)
	}
	s.Close()
	if _, err := s.NextID(ctx, "producer"); !errors.Is(err, ErrClosed) {
		t.Fatalf("NextID after Close: err = %v, want ErrClosed", err)
	}

	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.NextID(ctx, "producer"); err != nil || got != 3 {
		t.Fatalf("NextID after reopening = %d, %v; want 3", got, err)
	}
}

func pragmaOf(s *SQLite, sql string) (v string, err error) {
	err = s.do(context.Background(), func(c *sqlite3.Conn) error {
		v, err = pragma(c, sql)
		return err
	})
	return v, err
}
