package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/twmb/franz-go/pkg/kgo"
)

// manyValue is the value of record i of every partition that
// buildManyPartitions makes.
func manyValue(i int) []byte { return fmt.Appendf(nil, "many-%04d", i) }

// buildManyPartitions makes, in the data directory dir, a topic of parts
// partitions with segs segments of one record each: partition 0 through
// the library (tiny segment.bytes), the others as copies of its files
// (partitions are independent directories), and topic.json saying parts.
// Copying is what makes 100,000 segments take seconds instead of minutes.
func buildManyPartitions(t *testing.T, dir, topic string, parts, segs int) {
	t.Helper()
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := db.CreateTopic(topic, passbook.TopicConfig{Partitions: 1, SegmentBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	for i := range segs {
		if _, err := tp.AppendTo(0, []passbook.Record{{Value: manyValue(i)}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := tp.Partition(0); n.SegmentCount() != segs {
		t.Fatalf("partition 0 has %d segments, want %d", n.SegmentCount(), segs)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tdir := filepath.Join(dir, "topics", topic)
	src := filepath.Join(tdir, "0")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	for p := 1; p < parts; p++ {
		pd := filepath.Join(tdir, fmt.Sprint(p))
		if err := os.Mkdir(pd, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(pd, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var tf map[string]any
	b, err := os.ReadFile(filepath.Join(tdir, "topic.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	tf["config"].(map[string]any)["partitions"] = parts
	if b, err = json.Marshal(tf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tdir, "topic.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// startServeOn starts `passbook serve` (the binary built without -race)
// on the data directory dir and returns once it listens, with how long
// that took: Open of every partition comes first.
func startServeOn(t *testing.T, dir string, extra ...string) (*servedProc, time.Duration) {
	t.Helper()
	p, _, took := launchServe(t, dir, 5*time.Minute, 60*time.Second, extra...)
	return p, took
}

// TestServe_ManyPartitions: a data directory of 1,000 partitions and
// 10,000 segments (30,000 segment files) — with PASSBOOK_MANY_PARTITIONS=full
// the 10,000 partitions and 100,000 segments (300,000 files) —
// opens in `passbook serve` within a budget of 2,000 file descriptors at
// the default --max-open-segment-files, and serves: a franz-go client
// produces to and fetches from partitions across the topic, reading every
// old segment, while the server stays within the budget. Before the
// handle cache it held three descriptors per segment and one per
// partition (LOCK), and failed to open at about 5,000 partitions.
func TestServe_ManyPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("many partitions: not in -short")
	}
	parts, segs := 1_000, 10
	if os.Getenv("PASSBOOK_MANY_PARTITIONS") == "full" {
		parts = 10_000
	}
	const fdLimit = 2_000
	dir := t.TempDir()
	began := time.Now()
	buildManyPartitions(t, dir, "many", parts, segs)
	t.Logf("built %s partitions × %d segments in %v", thousands.Int(int64(parts)), segs, time.Since(began).Round(time.Millisecond))

	p, openTime := startServeOn(t, dir)
	fds := p.fds(t)
	t.Logf("passbook serve opened %s segments in %v: %s descriptors, RSS %s MiB",
		thousands.Int(int64(parts*segs)), openTime.Round(time.Millisecond), thousands.Int(int64(fds)), thousands.Int(p.status(t, "VmRSS")>>20))
	fdBudget(t, "after Open", fds, fdLimit)
	if open, max := p.metric(t, "passbook_segment_files_open"), p.metric(t, "passbook_segment_files_open_max"); open > max || max != 1_000 {
		t.Errorf("passbook_segment_files_open %v, _max %v: want at most the default 1,000", open, max)
	}

	// Produce one record to each of 40 partitions spread over the topic,
	// then fetch each of them from offset 0: ten old segments and the new
	// record apiece, 1,200 segment files in all — more than the cache
	// keeps.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequestRetries(20), kgo.RetryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var picked []int32
	for i := range 40 {
		picked = append(picked, int32(i*parts/40+i%7))
	}
	var recs []*kgo.Record
	for _, pt := range picked {
		recs = append(recs, &kgo.Record{Topic: "many", Partition: pt, Value: manyValue(segs)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for _, r := range recs {
		if r.Offset != int64(segs) {
			t.Fatalf("partition %d: produced at offset %d, want %d", r.Partition, r.Offset, segs)
		}
	}
	assign := map[int32]kgo.Offset{}
	for _, pt := range picked {
		assign[pt] = kgo.NewOffset().At(0)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"many": assign}),
		kgo.FetchMaxPartitionBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	next := map[int32]int64{}
	got := 0
	for got < len(picked)*(segs+1) {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("fetch: %d of %d records: %v", got, len(picked)*(segs+1), err)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch partition %d: %v", e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] || !bytes.Equal(r.Value, manyValue(int(r.Offset))) {
				t.Fatalf("partition %d offset %d: %q, want offset %d %q", r.Partition, r.Offset, r.Value, next[r.Partition], manyValue(int(next[r.Partition])))
			}
			next[r.Partition]++
			got++
		})
		if fds := p.fds(t); fds > fdLimit {
			t.Fatalf("while fetching: %s descriptors, over the budget of %s", thousands.Int(int64(fds)), thousands.Int(fdLimit))
		}
	}
	fdBudget(t, "after producing and fetching", p.fds(t), fdLimit)
	if ev := p.metric(t, "passbook_segment_file_cache_evictions_total"); ev == 0 {
		t.Errorf("no evictions counted, though more segment files were read than the cache keeps")
	}
	m := func(name string) string { return thousands.Int(int64(p.metric(t, name))) }
	t.Logf("segment file cache: %s open, %s hits, %s misses, %s evictions; peak RSS %s MiB",
		m("passbook_segment_files_open"), m("passbook_segment_file_cache_hits_total"),
		m("passbook_segment_file_cache_misses_total"), m("passbook_segment_file_cache_evictions_total"),
		thousands.Int(p.peakRSS(t)>>20))

	// A clean shutdown closes every partition, so they all reopen clean.
	closeBegan := time.Now()
	if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(p.pid, 0) == nil {
		if time.Since(closeBegan) > time.Minute {
			t.Fatal("passbook serve did not exit within a minute of SIGTERM")
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid)); err != nil || strings.Contains(string(b), ") Z ") {
			break // exited (a zombie until the test's Wait reaps it)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("closed in %v", time.Since(closeBegan).Round(time.Millisecond))
}
