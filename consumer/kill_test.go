package consumer_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

const killRecords = 20_000

// TestConsumer_RunTx_Kill9 runs a transactional consumer in a child
// process that writes each record into an output table in the same
// transaction as its offset commit, kills it with SIGKILL at random
// moments, and restarts it until the topic is consumed. The output table
// must end with every record exactly once: the table's primary key would
// refuse a second insert, and a missing row shows a loss.
func TestConsumer_RunTx_Kill9(t *testing.T) {
	if dir := os.Getenv("PASSBOOK_TX_CHILD"); dir != "" {
		if err := txChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	topic, _ := db.CreateTopic("payments", passbook.TopicConfig{})
	recs := make([]passbook.Record, killRecords)
	for i := range recs {
		recs[i].Value = fmt.Appendf(nil, "payment-%d", i)
	}
	if _, err := topic.AppendTo(0, recs, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Offsets().DB().Exec(`CREATE TABLE charges (offset INTEGER PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	kills := 0
	for round := 0; ; round++ {
		if round > 200 {
			t.Fatal("the consumer never finished")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestConsumer_RunTx_Kill9$")
		cmd.Env = append(os.Environ(), "PASSBOOK_TX_CHILD="+dir)
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		started := sc.Scan() // "started": the consumer holds its lease
		killed := false
		if started && kills < 20 {
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
			kills++
		}
		for sc.Scan() {
		}
		err := cmd.Wait()
		if !killed && err != nil {
			t.Fatalf("round %d: child failed: %v", round, err)
		}
		if !killed {
			break
		}
	}

	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows, distinct, lo, hi int64
	err = db.Offsets().DB().QueryRow(`SELECT count(*), count(DISTINCT offset), min(offset), max(offset) FROM charges`).Scan(&rows, &distinct, &lo, &hi)
	if err != nil {
		t.Fatal(err)
	}
	if rows != killRecords || distinct != killRecords || lo != 0 || hi != killRecords-1 {
		t.Fatalf("after %d kills: %d rows, %d distinct, offsets %d..%d; want each of %d exactly once", kills, rows, distinct, lo, hi, killRecords)
	}
	committed, _ := db.Offsets().Committed(context.Background(), offsets.Key{Consumer: "charger", Topic: "payments"})
	if committed != killRecords {
		t.Fatalf("committed offset %d, want %d", committed, killRecords)
	}
	t.Logf("%d kills, every one of %d records written exactly once", kills, killRecords)
}

func txChild(dir string) error {
	db, err := passbook.Open(dir, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	topic, err := db.Topic("payments")
	if err != nil {
		return err
	}
	ctx := context.Background()
	// The killed predecessor's lease is live, but its process is gone:
	// New takes it over without waiting for it to expire.
	c, err := consumer.New(ctx, topic, db.Offsets(), consumer.Options{Name: "charger"})
	if err != nil {
		return err
	}
	fmt.Println("started")
	err = c.RunTx(ctx, false, func(ctx context.Context, tx *sql.Tx, m consumer.Message) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO charges (offset, value) VALUES (?, ?)`, m.Offset, string(m.Value))
		return err
	})
	if err != nil {
		return err
	}
	return c.Close()
}
