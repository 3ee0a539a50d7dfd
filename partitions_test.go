package passbook_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
)

func TestDB_AddPartitions(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	old, err := db.CreateTopic("grow", passbook.TopicConfig{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.AppendTo(1, []passbook.Record{{Value: []byte("before")}}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	// A directory left by an AddPartitions a crash cut short, holding
	// junk: never part of the topic, it is made anew.
	junk := filepath.Join(dir, "topics", "grow", "2")
	if err := os.MkdirAll(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, "00000000000000000000.log"), []byte("half made"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Appends go on meanwhile (the race detector watches).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			tp, err := db.Topic("grow")
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := tp.Append(passbook.Record{Value: []byte("x")}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	nt, err := db.AddPartitions(context.Background(), "grow", 4)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if nt.Partitions() != 4 || old.Partitions() != 2 {
		t.Fatalf("new topic %d partitions, old %d", nt.Partitions(), old.Partitions())
	}
	if got, _ := db.Topic("grow"); got.Partitions() != 4 || got.ID() != old.ID() {
		t.Fatalf("DB.Topic: %d partitions, ID %v (was %v)", got.Partitions(), got.ID(), old.ID())
	}
	if _, err := nt.AppendTo(3, []passbook.Record{{Value: []byte("new")}}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		topic string
		total int
		want  error
	}{
		{"not an increase", "grow", 3, passbook.ErrInvalidPartitions},
		{"the same", "grow", 4, passbook.ErrInvalidPartitions},
		{"too many", "grow", passbook.MaxPartitions + 1, passbook.ErrInvalidPartitions},
		{"unknown topic", "nosuch", 5, passbook.ErrUnknownTopic},
	} {
		if _, err := db.AddPartitions(context.Background(), tc.topic, tc.total); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if err := db.CheckAddPartitions(tc.topic, tc.total); !errors.Is(err, tc.want) {
			t.Errorf("%s: check: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	if r, err := passbook.Verify(dir, nil); err != nil || !r.OK() {
		t.Errorf("verify: %v %+v", err, r)
	}
	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, err := db.Topic("grow")
	if err != nil || tp.Partitions() != 4 || tp.Config().Partitions != 4 {
		t.Fatalf("reopened: %v, %d partitions", err, tp.Partitions())
	}
	var got []string
	for rec, err := range tp.Records(3, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(rec.Value))
	}
	// The appender may have reached the new partitions between
	// AddPartitions' return and its stop: those are its "x"s, before "new".
	if len(got) == 0 || got[len(got)-1] != "new" || slices.ContainsFunc(got[:len(got)-1], func(v string) bool { return v != "x" }) {
		t.Errorf("partition 3 holds %q, want the appender's x's (if any) then new", got)
	}
	for rec, err := range tp.Records(1, 0) {
		if err != nil || string(rec.Value) != "before" {
			t.Errorf("partition 1 starts with %q, %v", rec.Value, err)
		}
		break
	}
}

func TestTopic_DeleteRecords(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := db.CreateTopic("trim", passbook.TopicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := tp.Append(passbook.Record{Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	if start, err := tp.DeleteRecords(0, 4); err != nil || start != 4 {
		t.Fatalf("DeleteRecords(4) = %d, %v", start, err)
	}
	if _, err := tp.DeleteRecords(0, 11); !errors.Is(err, storage.ErrOutOfRange) {
		t.Errorf("past the head: %v", err)
	}
	if _, err := tp.DeleteRecords(1, 0); !errors.Is(err, passbook.ErrUnknownPartition) {
		t.Errorf("unknown partition: %v", err)
	}
	ct, err := db.CreateTopic("keys", passbook.TopicConfig{CleanupPolicy: passbook.CleanupCompact})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ct.DeleteRecords(0, 0); !errors.Is(err, passbook.ErrCompactOnly) {
		t.Errorf("compact topic: %v", err)
	}
	for _, err := range tp.Records(0, 2) {
		if !errors.Is(err, storage.ErrOutOfRange) {
			t.Errorf("read below the start: %v", err)
		}
		break
	}
	if start, err := tp.DeleteRecords(0, passbook.HighWatermark); err != nil || start != 10 {
		t.Fatalf("DeleteRecords(HighWatermark) = %d, %v", start, err)
	}
	db.Close()
	db, err = passbook.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tp, _ = db.Topic("trim")
	if info := tp.Describe().Partitions[0]; info.StartOffset != 10 || info.Records != 0 {
		t.Errorf("reopened: %+v", info)
	}
}

// TestDB_AddPartitions_PowerLoss fails the i-th file operation of an
// AddPartitions, i = 0, 1, 2 …, then cuts the power: the data directory
// opens with the topic's old count or its new one — the new one whenever
// AddPartitions returned — every partition it counts opens (none is
// fenced), its records are there, and a second AddPartitions then
// succeeds.
func TestDB_AddPartitions_PowerLoss(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for i := 0; ; i++ {
		mem := vfs.NewMem()
		dir := t.TempDir() // the offset store is on the OS
		var armed atomic.Bool
		faulty := vfs.NewFaulty(mem, vfs.FaultyOptions{FailAt: i, Sticky: true, Filter: func(vfs.Op) bool { return armed.Load() }})
		db, err := passbook.Open(dir, &passbook.Options{FS: faulty})
		if err != nil {
			t.Fatal(err)
		}
		topic, err := db.CreateTopic("grow", passbook.TopicConfig{Partitions: 2, Durability: storage.Fsync})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := topic.AppendTo(1, []passbook.Record{{Value: []byte("kept")}}, storage.DefaultDurability); err != nil {
			t.Fatal(err)
		}
		armed.Store(true)
		_, aerr := db.AddPartitions(context.Background(), "grow", 4)
		done := faulty.Ops() <= i
		if done && aerr != nil {
			t.Fatalf("no fault injected, AddPartitions: %v", aerr)
		}
		crashed := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(uint64(seed), uint64(i)))})
		db.Close()

		db, err = passbook.Open(dir, &passbook.Options{FS: crashed})
		if err != nil {
			t.Fatalf("fault at op %d (AddPartitions: %v): open after the power loss: %v", i, aerr, err)
		}
		tp, err := db.Topic("grow")
		if err != nil {
			t.Fatalf("fault at op %d: %v", i, err)
		}
		n := tp.Partitions()
		if aerr == nil && n != 4 || n != 2 && n != 4 {
			t.Fatalf("fault at op %d: AddPartitions returned %v; %d partitions after the power loss", i, aerr, n)
		}
		for _, p := range tp.Describe().Partitions {
			if p.Fenced != "" {
				t.Fatalf("fault at op %d: partition %d fenced: %s", i, p.Partition, p.Fenced)
			}
		}
		var got []string
		for rec, err := range tp.Records(1, 0) {
			if err != nil {
				t.Fatalf("fault at op %d: %v", i, err)
			}
			got = append(got, string(rec.Value))
		}
		if len(got) != 1 || got[0] != "kept" {
			t.Fatalf("fault at op %d: partition 1 holds %q", i, got)
		}
		if n == 2 {
			if _, err := db.AddPartitions(context.Background(), "grow", 4); err != nil {
				t.Fatalf("fault at op %d: AddPartitions again: %v", i, err)
			}
		}
		db.Close()
		if done {
			if i < 5 {
				t.Fatalf("AddPartitions finished after only %d operations", i)
			}
			t.Logf("AddPartitions took %d file operations, each failed in turn", i)
			return
		}
	}
}

// TestDB_AddPartitions_Kill9 runs a child process that grows a topic one
// partition at a time and moves partition 0's log start offset up behind
// its appends, printing each count and start once acknowledged, and kills
// it with SIGKILL at random moments: after each kill the directory opens
// with at least the count and start printed (at most one partition more:
// the one being added when the kill came), no partition fenced, and
// verify finds no problem.
func TestDB_AddPartitions_Kill9(t *testing.T) {
	if dir := os.Getenv("PASSBOOK_ADDPARTITIONS_CHILD"); dir != "" {
		addPartitionsChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dir := t.TempDir()
	count, start := 1, int64(0) // acknowledged
	for round := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDB_AddPartitions_Kill9$")
		cmd.Env = append(os.Environ(), "PASSBOOK_ADDPARTITIONS_CHILD="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acks := make(chan string, 1024)
		go func() {
			defer close(acks)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				acks <- sc.Text()
			}
		}()
		note := func(line string) {
			var n int64
			if _, err := fmt.Sscanf(line, "partitions %d", &n); err == nil {
				count = max(count, int(n))
			} else if _, err := fmt.Sscanf(line, "start %d", &n); err == nil {
				start = max(start, n)
			}
		}
		first, ok := <-acks
		if !ok {
			cmd.Wait()
			t.Fatalf("round %d: the child acknowledged nothing: %s", round, stderr.String())
		}
		note(first)
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL) // this test's own child
		for line := range acks {
			note(line)
		}
		cmd.Wait()

		db, err := passbook.Open(dir, nil)
		if err != nil {
			t.Fatalf("round %d: open after SIGKILL: %v", round, err)
		}
		tp, err := db.Topic("grow")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		info := tp.Describe()
		if n := len(info.Partitions); n < count || n > count+1 {
			t.Fatalf("round %d: %d partitions after SIGKILL; %d were acknowledged", round, n, count)
		}
		if info.Partitions[0].StartOffset < start {
			t.Fatalf("round %d: partition 0 starts at %d; %d was acknowledged", round, info.Partitions[0].StartOffset, start)
		}
		for _, p := range info.Partitions {
			if p.Fenced != "" {
				t.Fatalf("round %d: partition %d fenced: %s", round, p.Partition, p.Fenced)
			}
		}
		t.Logf("round %d: %d partitions acknowledged, %d after SIGKILL; start %d acknowledged, %d after", round, count, len(info.Partitions), start, info.Partitions[0].StartOffset)
		count = len(info.Partitions)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if r, err := passbook.Verify(dir, nil); err != nil || !r.OK() {
			t.Fatalf("round %d: verify: %v %+v", round, err, r)
		}
	}
}

// addPartitionsChild grows topic grow of the data directory dir by one
// partition at a time, and appends to partition 0 and deletes its
// records below the last, printing each count and start once they
// returned.
func addPartitionsChild(dir string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	db, err := passbook.Open(dir, nil)
	if err != nil {
		fail(err)
	}
	tp, err := db.Topic("grow")
	if errors.Is(err, passbook.ErrUnknownTopic) {
		tp, err = db.CreateTopic("grow", passbook.TopicConfig{Partitions: 1})
	}
	if err != nil {
		fail(err)
	}
	w := bufio.NewWriterSize(os.Stdout, 64)
	for n := tp.Partitions() + 1; n <= passbook.MaxPartitions; n++ {
		if tp, err = db.AddPartitions(context.Background(), "grow", n); err != nil {
			fail(err)
		}
		fmt.Fprintf(w, "partitions %d\n", n)
		w.Flush()
		off, err := tp.AppendTo(0, []passbook.Record{{Value: []byte("r")}, {Value: []byte("r")}}, storage.DefaultDurability)
		if err != nil {
			fail(err)
		}
		start, err := tp.DeleteRecords(0, off+1)
		if err != nil {
			fail(err)
		}
		fmt.Fprintf(w, "start %d\n", start)
		w.Flush()
	}
	os.Exit(0)
}
