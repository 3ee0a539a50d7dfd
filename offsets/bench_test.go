package offsets_test

import (
	"database/sql"
	"sync/atomic"
	"testing"

	"github.com/passbook-log/passbook/offsets"
)

// Run: go test -run '^$' -bench . -benchtime 2s ./offsets/

func reportCommits(b *testing.B, n int) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "commits/s")
}

func benchCommit(b *testing.B, opts *offsets.Options, withDB bool) {
	s := open(b, tempPath(b), opts)
	if withDB {
		if err := s.DB().Ping(); err != nil {
			b.Fatal(err)
		}
	}
	k := offsets.Key{Consumer: "bench", Topic: "orders", Partition: 0}
	n := 0
	for b.Loop() {
		if err := s.Commit(ctx, k, int64(n)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportCommits(b, n)
}

// BenchmarkSQLite_Commit is a consumer committing after every record.
func BenchmarkSQLite_Commit(b *testing.B) { benchCommit(b, nil, false) }

// After DB has connected, the store runs in shared locking.
func BenchmarkSQLite_Commit_Shared(b *testing.B) { benchCommit(b, nil, true) }

func BenchmarkSQLite_Commit_SyncFull(b *testing.B) {
	benchCommit(b, &offsets.Options{Synchronous: offsets.SyncFull}, false)
}

// SyncGroup alone: an fsync per commit, as SyncFull, through the store's
// own WAL handle.
func BenchmarkSQLite_Commit_SyncGroup(b *testing.B) {
	benchCommit(b, &offsets.Options{Synchronous: offsets.SyncGroup}, false)
}

// Goroutines commit their own partitions; the connection serializes them.
func BenchmarkSQLite_Commit_Parallel(b *testing.B) { benchParallel(b, nil) }

// SyncGroup's committers share fsyncs.
func BenchmarkSQLite_Commit_Parallel_SyncGroup(b *testing.B) {
	benchParallel(b, &offsets.Options{Synchronous: offsets.SyncGroup})
}

func BenchmarkSQLite_Commit_Parallel_SyncFull(b *testing.B) {
	benchParallel(b, &offsets.Options{Synchronous: offsets.SyncFull})
}

func benchParallel(b *testing.B, opts *offsets.Options) {
	s := open(b, tempPath(b), opts)
	b.SetParallelism(8)
	var next atomic.Int32
	b.RunParallel(func(pb *testing.PB) {
		k := offsets.Key{Consumer: "bench", Topic: "orders", Partition: next.Add(1)}
		for i := int64(0); pb.Next(); i++ {
			if err := s.Commit(ctx, k, i); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportCommits(b, b.N)
}

func BenchmarkSQLite_CommitFenced(b *testing.B) {
	s := open(b, tempPath(b), nil)
	k := offsets.Key{Consumer: "bench", Topic: "orders", Partition: 0}
	l, err := s.Acquire(ctx, k.Consumer, k.Topic, "me", 1<<40)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for b.Loop() {
		if err := s.CommitFenced(ctx, l, k, int64(n)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportCommits(b, n)
}

// BenchmarkSQLite_CommitTx: BEGIN, CommitTx, COMMIT through database/sql.
func BenchmarkSQLite_CommitTx(b *testing.B) {
	s := open(b, tempPath(b), nil)
	db := s.DB()
	k := offsets.Key{Consumer: "bench", Topic: "orders", Partition: 0}
	n := 0
	for b.Loop() {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.CommitTx(ctx, tx, k, int64(n)); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportCommits(b, n)
}

// BenchmarkDatabaseSQL_BeginUpsertCommit is the baseline: plain
// database/sql, SQLite defaults (4 KiB pages, normal locking), WAL and
// synchronous=NORMAL, one BEGIN/UPSERT/COMMIT per commit.
func BenchmarkDatabaseSQL_BeginUpsertCommit(b *testing.B) {
	db, err := sql.Open("sqlite3", "file:"+tempPath(b)+
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE offsets (consumer TEXT NOT NULL, topic TEXT NOT NULL,
		partition INTEGER NOT NULL, next_offset INTEGER NOT NULL, metadata TEXT NOT NULL DEFAULT '',
		updated_ms INTEGER NOT NULL, PRIMARY KEY (consumer, topic, partition)) WITHOUT ROWID`)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for b.Loop() {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		_, err = tx.Exec(`INSERT INTO offsets (consumer, topic, partition, next_offset, updated_ms)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (consumer, topic, partition) DO UPDATE SET
			next_offset = excluded.next_offset, updated_ms = excluded.updated_ms`, "bench", "orders", 0, n, n)
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportCommits(b, n)
}

func BenchmarkMemory_Commit(b *testing.B) {
	s := offsets.NewMemory()
	k := offsets.Key{Consumer: "bench", Topic: "orders", Partition: 0}
	n := 0
	for b.Loop() {
		if err := s.Commit(ctx, k, int64(n)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportCommits(b, n)
}
