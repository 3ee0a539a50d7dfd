package offsets_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/passbook-log/passbook/offsets"
)

// A consumer resumes where it left off: its committed offset is the next
// offset to read.
func Example() {
	dir, err := os.MkdirTemp("", "offsets-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := offsets.Open(filepath.Join(dir, "offsets.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	k := offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}
	if _, err := s.Committed(ctx, k); errors.Is(err, offsets.ErrNotFound) {
		fmt.Println("new consumer: start from the log start offset")
	}
	for offset := int64(0); offset < 3; offset++ {
		// ... process the record at offset, then:
		if err := s.Commit(ctx, k, offset+1); err != nil {
			log.Fatal(err)
		}
	}
	s.Close()

	s, err = offsets.Open(filepath.Join(dir, "offsets.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	next, err := s.Committed(ctx, k)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after a restart, read from offset", next)
	// Output:
	// new consumer: start from the log start offset
	// after a restart, read from offset 3
}

// The output row and the offset commit land in one transaction: a crash
// leaves both or neither, so no record is applied twice.
func ExampleSQLite_CommitTx() {
	dir, err := os.MkdirTemp("", "offsets-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := offsets.Open(filepath.Join(dir, "offsets.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	if _, err := db.Exec(`CREATE TABLE totals (customer TEXT PRIMARY KEY, cents INTEGER)`); err != nil {
		log.Fatal(err)
	}

	k := offsets.Key{Consumer: "totals", Topic: "payments", Partition: 0}
	apply := func(offset int64, customer string, cents int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op after Commit
		_, err = tx.Exec(`INSERT INTO totals VALUES (?1, ?2)
			ON CONFLICT (customer) DO UPDATE SET cents = cents + ?2`, customer, cents)
		if err != nil {
			return err
		}
		if err := s.CommitTx(ctx, tx, k, offset+1); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := apply(0, "ada", 500); err != nil {
		log.Fatal(err)
	}
	if err := apply(1, "ada", 250); err != nil {
		log.Fatal(err)
	}

	var cents int
	if err := db.QueryRow(`SELECT cents FROM totals WHERE customer = 'ada'`).Scan(&cents); err != nil {
		log.Fatal(err)
	}
	next, err := s.Committed(ctx, k)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ada: %d cents, next offset %d\n", cents, next)
	// Output: ada: 750 cents, next offset 2
}

// A holder that lost its lease can no longer move the bookmark.
func ExampleSQLite_CommitFenced() {
	dir, err := os.MkdirTemp("", "offsets-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := offsets.Open(filepath.Join(dir, "offsets.db"), &offsets.Options{
		Now: func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	k := offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}
	a, err := s.Acquire(ctx, k.Consumer, k.Topic, "host-a", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.Acquire(ctx, k.Consumer, k.Topic, "host-b", 10*time.Second)
	fmt.Println(err)

	now = now.Add(time.Minute) // host-a stalls past its lease
	b, err := s.Acquire(ctx, k.Consumer, k.Topic, "host-b", 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("host-b has generation", b.Generation)
	err = s.CommitFenced(ctx, a, k, 42)
	fmt.Println(errors.Is(err, offsets.ErrFenced))
	// Output:
	// offsets: lease held: consumer "billing" topic "orders" is held by "host-a" until 2026-01-01T00:00:10Z (10s from now, generation 1)
	// host-b has generation 2
	// true
}

// Verify checks a store on disk against the heads of the partitions it
// commits for; each finding says its kind, so that a tool acts on it
// without reading its text. Repair would set this offset to the head.
func ExampleVerify() {
	dir, err := os.MkdirTemp("", "offsets-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "offsets.db")
	s, err := offsets.Open(path, nil)
	if err != nil {
		log.Fatal(err)
	}
	k := offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}
	if err := s.Commit(context.Background(), k, 120); err != nil {
		log.Fatal(err)
	}
	s.Close()

	// The log of orders/0 ends at 100: a crash took records out of it.
	r := offsets.Verify(path, &offsets.CheckOptions{Heads: map[string][]int64{"orders": {100}}})
	for _, f := range r.Findings {
		fmt.Println(f.Kind == offsets.FindingPastHead, f.Offset, f.Head)
		fmt.Println(f)
	}
	// Output:
	// true 120 100
	// committed offset 120 of consumer "billing" topic "orders" partition 0 is past the head 100: records were taken out of the log after they were processed
}
