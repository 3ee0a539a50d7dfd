package offsets_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/offsets/offsetstest"
)

var ctx = context.Background()

func open(t testing.TB, path string, opts *offsets.Options) *offsets.SQLite {
	t.Helper()
	s, err := offsets.Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func tempPath(t testing.TB) string { return filepath.Join(t.TempDir(), "offsets.db") }

func TestSQLite_Conformance(t *testing.T) {
	tests := []struct {
		name   string
		opts   *offsets.Options
		withDB bool // use DB first: the store runs in shared locking
	}{
		{name: "Default"},
		{name: "SyncFull", opts: &offsets.Options{Synchronous: offsets.SyncFull}},
		{name: "Shared", opts: &offsets.Options{Shared: true}},
		{name: "AfterDB", withDB: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			offsetstest.RunStoreTests(t, func(t *testing.T) offsets.Store {
				s := open(t, tempPath(t), tt.opts)
				if tt.withDB {
					if err := s.DB().Ping(); err != nil {
						t.Fatal(err)
					}
				}
				return s
			})
		})
	}
}

func TestMemory_Conformance(t *testing.T) {
	offsetstest.RunStoreTests(t, func(t *testing.T) offsets.Store { return offsets.NewMemory() })
}

func TestSQLite_Reopen(t *testing.T) {
	for _, sync := range []offsets.Sync{offsets.SyncNormal, offsets.SyncFull} {
		t.Run(sync.String(), func(t *testing.T) {
			path := tempPath(t)
			opts := &offsets.Options{Synchronous: sync}
			want := map[offsets.Key]int64{}
			for round := range 3 {
				s := open(t, path, opts)
				for k, off := range want {
					if got, err := s.Committed(ctx, k); err != nil || got != off {
						t.Fatalf("round %d: Committed(%v) = %d, %v; want %d", round, k, got, err, off)
					}
				}
				for p := range int32(3) {
					k := offsets.Key{Consumer: "c", Topic: "t", Partition: p}
					want[k] = int64(100*round) + int64(p)
					if err := s.Commit(ctx, k, want[k]); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestSQLite_CommitTx(t *testing.T) {
	s := open(t, tempPath(t), nil)
	db := s.DB()
	if _, err := db.Exec(`CREATE TABLE output (id INTEGER PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	k := offsets.Key{Consumer: "etl", Topic: "orders", Partition: 0}
	if err := s.Commit(ctx, k, 10); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		commit   bool
		offset   int64
		wantRows int
		want     int64
	}{
		{"RolledBack", false, 11, 0, 10},
		{"Committed", true, 11, 1, 11},
		{"RolledBackAgain", false, 12, 1, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(`INSERT INTO output (id, value) VALUES (?, 'processed')`, tt.offset-1); err != nil {
				t.Fatal(err)
			}
			if err := s.CommitTx(ctx, tx, k, tt.offset); err != nil {
				t.Fatal(err)
			}
			if tt.commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			var rows int
			if err := db.QueryRow(`SELECT count(*) FROM output`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			got, err := s.Committed(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if rows != tt.wantRows || got != tt.want {
				t.Errorf("rows = %d, offset = %d; want %d, %d", rows, got, tt.wantRows, tt.want)
			}
		})
	}
	t.Run("OtherDB", func(t *testing.T) {
		other := open(t, tempPath(t), nil)
		tx, err := other.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := s.CommitTx(ctx, tx, k, 99); err == nil {
			t.Error("CommitTx with a transaction of another store succeeded")
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := s.CommitTx(ctx, tx, k, -1); !errors.Is(err, offsets.ErrInvalid) {
			t.Errorf("CommitTx(-1): err = %v, want ErrInvalid", err)
		}
	})
}

// Direct commits and transactions on DB share the file under -race.
func TestSQLite_CommitTx_Concurrent(t *testing.T) {
	s := open(t, tempPath(t), nil)
	db := s.DB()
	if _, err := db.Exec(`CREATE TABLE output (consumer TEXT, n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	const workers, n = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := range workers {
		wg.Go(func() {
			k := offsets.Key{Consumer: fmt.Sprintf("tx%d", w), Topic: "t"}
			for i := range int64(n) {
				err := func() error {
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					defer tx.Rollback()
					if _, err := tx.Exec(`INSERT INTO output VALUES (?, ?)`, k.Consumer, i); err != nil {
						return err
					}
					if err := s.CommitTx(ctx, tx, k, i+1); err != nil {
						return err
					}
					return tx.Commit()
				}()
				if err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			k := offsets.Key{Consumer: fmt.Sprintf("direct%d", w), Topic: "t"}
			for i := range int64(n) {
				if err := s.Commit(ctx, k, i+1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	list, err := s.List(ctx, offsets.Filter{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2*workers {
		t.Fatalf("List = %d entries, want %d", len(list), 2*workers)
	}
	for _, e := range list {
		if e.Offset != n {
			t.Errorf("%v = %d, want %d", e.Key, e.Offset, n)
		}
	}
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM output`).Scan(&rows); err != nil || rows != workers*n {
		t.Errorf("output rows = %d, %v; want %d", rows, err, workers*n)
	}
}

func TestSQLite_Open_Locked(t *testing.T) {
	tests := []struct {
		name       string
		first      offsets.Options
		wantLocked bool
	}{
		{"Exclusive", offsets.Options{}, true},
		{"Shared", offsets.Options{Shared: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t)
			open(t, path, &tt.first)
			second, err := offsets.Open(path, &offsets.Options{Shared: true, BusyTimeout: 50 * time.Millisecond})
			if tt.wantLocked {
				if !errors.Is(err, offsets.ErrLocked) {
					t.Fatalf("second Open: err = %v, want ErrLocked", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("second Open: %v", err)
			}
			defer second.Close()
			k := offsets.Key{Consumer: "c", Topic: "t"}
			if err := second.Commit(ctx, k, 3); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The first use of DB switches the direct connection to shared locking
// while other goroutines commit.
func TestSQLite_DB_SwitchWhileCommitting(t *testing.T) {
	path := tempPath(t)
	s := open(t, path, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	start := make(chan struct{})
	for w := range 3 {
		wg.Go(func() {
			k := offsets.Key{Consumer: "c", Topic: "t", Partition: int32(w)}
			for i := range int64(300) {
				if i == 50 && w == 0 {
					close(start)
				}
				if err := s.Commit(ctx, k, i+1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		<-start
		if _, err := s.DB().Exec(`CREATE TABLE app (x)`); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Now shared: another connection may open the file too.
	other := open(t, path, &offsets.Options{Shared: true, BusyTimeout: time.Second})
	for w := range int32(3) {
		got, err := other.Committed(ctx, offsets.Key{Consumer: "c", Topic: "t", Partition: w})
		if err != nil || got != 300 {
			t.Errorf("partition %d: %d, %v; want 300", w, got, err)
		}
	}
}

// After Close, the file is free for the next owner.
func TestSQLite_Close_ReleasesLock(t *testing.T) {
	path := tempPath(t)
	s := open(t, path, nil)
	s.DB().Ping()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path, &offsets.Options{BusyTimeout: 50 * time.Millisecond})
}

func TestSQLite_DB_AfterClose(t *testing.T) {
	s := open(t, tempPath(t), nil)
	s.Close()
	if err := s.DB().Ping(); err == nil {
		t.Fatal("Ping after Close succeeded")
	}
}

func TestOptions_Validate(t *testing.T) {
	tests := []struct {
		name string
		opts *offsets.Options
		ok   bool
	}{
		{"nil", nil, true},
		{"zero", &offsets.Options{}, true},
		{"full", &offsets.Options{Synchronous: offsets.SyncFull, BusyTimeout: time.Second}, true},
		{"unknown sync", &offsets.Options{Synchronous: 7}, false},
		{"negative busy timeout", &offsets.Options{BusyTimeout: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, offsets.ErrInvalid)) {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			s, err := offsets.Open(tempPath(t), tt.opts)
			if (err == nil) != tt.ok {
				t.Fatalf("Open: %v, want ok=%v", err, tt.ok)
			}
			if s != nil {
				s.Close()
			}
		})
	}
	if _, err := offsets.Open("", nil); !errors.Is(err, offsets.ErrInvalid) {
		t.Errorf("Open(\"\"): err = %v, want ErrInvalid", err)
	}
}
