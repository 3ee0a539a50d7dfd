package offsets

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSQLite_DamagedEntry flips each byte of a stored committed offset in
// the database file: every read of it then fails with ErrCorrupt instead
// of returning another offset. (SQLite's integrity_check does not look
// inside rows.)
func TestSQLite_DamagedEntry(t *testing.T) {
	const offset = 0x0123_4567_89ab // stored by SQLite as 6 bytes, big-endian
	var want [8]byte
	binary.BigEndian.PutUint64(want[:], offset)
	k := Key{Consumer: "billing", Topic: "orders", Partition: 3}
	other := Key{Consumer: "billing", Topic: "orders", Partition: 4}
	for i := 2; i < 8; i++ {
		path := filepath.Join(t.TempDir(), "offsets.db")
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := s.Commit(ctx, k, offset); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(ctx, other, 7); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil { // checkpoints the WAL into the file
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(b, want[2:])
		if at < 0 || bytes.Count(b, want[2:]) != 1 {
			t.Fatalf("the offset's bytes are not in the file once")
		}
		b[at+i-2] ^= 0x10
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err = Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Committed(ctx, k); !errors.Is(err, ErrCorrupt) {
			t.Errorf("byte %d flipped: Committed = %d, %v; want ErrCorrupt", i, got, err)
		}
		if _, err := s.List(ctx, Filter{Consumer: "billing"}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("byte %d flipped: List err = %v; want ErrCorrupt", i, err)
		}
		if got, err := s.Committed(ctx, other); err != nil || got != 7 {
			t.Errorf("the undamaged entry: Committed = %d, %v; want 7", got, err)
		}
		// A new commit replaces the damaged entry whole.
		if err := s.Commit(ctx, k, 42); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Committed(ctx, k); err != nil || got != 42 {
			t.Errorf("after a new commit: Committed = %d, %v; want 42", got, err)
		}
		s.Close()
	}
}

// TestOpen_FillsChecksums opens a store written before schema version 3:
// its entries get their checksums and read as before.
func TestOpen_FillsChecksums(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets.db")
	c := rawConn(t, path)
	if err := migrate(c, path, migrations[:2]); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(`INSERT INTO passbook_offsets (consumer, topic, partition, next_offset, metadata, updated_ms)
		VALUES ('billing', 'orders', 0, 1000, 'm', 1), ('billing', 'orders', 1, 2000, '', 2)`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.List(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Offset != 1000 || list[0].Metadata != "m" || list[1].Offset != 2000 {
		t.Fatalf("List = %+v", list)
	}
}
