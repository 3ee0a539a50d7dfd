package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// configValues runs topic config --json with args and returns each
// config's value and whether it is set for the topic.
func configValues(t *testing.T, args ...string) map[string]struct {
	Value string
	Set   bool
} {
	t.Helper()
	stdout, stderr, code := runBinary(t, "", "", append(args, "--json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var entries []struct {
		Name, Value string
		Default     bool
	}
	if err := json.Unmarshal([]byte(stdout), &entries); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stdout)
	}
	out := map[string]struct {
		Value string
		Set   bool
	}{}
	for _, e := range entries {
		out[e.Name] = struct {
			Value string
			Set   bool
		}{e.Value, !e.Default}
	}
	return out
}

func TestTopicConfig_DataDirectory(t *testing.T) {
	dir := t.TempDir()
	d := []string{"--data", dir}
	if _, stderr, code := runBinary(t, "", "", append(d, "topic", "create", "orders")...); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, stderr)
	}
	stdout, _, code := runBinary(t, "", "", append(d, "topic", "config", "orders")...)
	if code != 0 || !strings.Contains(stdout, "CONFIG") || !strings.Contains(stdout, "min.insync.replicas") || !strings.Contains(stdout, "no effect on one broker") {
		t.Fatalf("topic config: exit %d:\n%s", code, stdout)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--set", "retention.ms=3600000", "--set", "min.insync.replicas=2", "--set", "cleanup.policy=delete,compact"}, 0, ""},
		{[]string{"--set", "retention.ms=soon"}, 2, "Invalid value soon for configuration retention.ms: Not a number of type LONG"},
		{[]string{"--set", "retention.ms"}, 2, "want KEY=VALUE"},
		{[]string{"--set", "no.such=1"}, 2, "Unknown topic config name: no.such"},
		{[]string{"--delete", "no.such"}, 2, "Unknown topic config name: no.such"},
		{[]string{"--set", "min.compaction.lag.ms=5000", "--set", "max.compaction.lag.ms=100"}, 1, "min.compaction.lag.ms (5000) > max.compaction.lag.ms (100)"},
	} {
		_, stderr, code := runBinary(t, "", "", append(append(d, "topic", "config", "orders"), tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
	got := configValues(t, append(d, "topic", "config", "orders")...)
	for k, v := range map[string]string{"retention.ms": "3600000", "min.insync.replicas": "2", "cleanup.policy": "compact,delete"} {
		if got[k].Value != v || !got[k].Set {
			t.Errorf("%s = %+v, want %s set for the topic (refused changes must change nothing)", k, got[k], v)
		}
	}
	if got["min.compaction.lag.ms"].Set {
		t.Error("a refused request set min.compaction.lag.ms")
	}
	got = configValues(t, append(d, "topic", "config", "orders", "--delete", "retention.ms")...)
	if got["retention.ms"].Set || got["retention.ms"].Value != "-1" || !got["min.insync.replicas"].Set {
		t.Errorf("after --delete retention.ms: %+v, %+v", got["retention.ms"], got["min.insync.replicas"])
	}
	if _, stderr, code := runBinary(t, "", "", append(d, "topic", "config", "nosuch")...); code != 1 || !strings.Contains(stderr, "unknown topic") {
		t.Errorf("unknown topic: exit %d, %q", code, stderr)
	}
}

// TestTopicConfig_Brokers_Kill9: configs changed over Kafka (topic config
// --brokers, and kadm's IncrementalAlterConfigs) against passbook serve,
// which is killed with SIGKILL right after the responses: the data
// directory has the change, and the restarted server applies it.
func TestTopicConfig_Brokers_Kill9(t *testing.T) {
	quickExit(t)
	dir := t.TempDir()
	srv, stop, _ := launchServe(t, dir, 20*time.Second, 15*time.Second)
	b := []string{"--brokers", srv.kafkaAddr}
	if _, stderr, code := runBinary(t, "", "", append(b, "topic", "create", "t")...); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, stderr)
	}
	got := configValues(t, append(b, "topic", "config", "t", "--set", "retention.bytes=1048576", "--set", "unclean.leader.election.enable=true")...)
	if got["retention.bytes"].Value != "1048576" || got["unclean.leader.election.enable"].Value != "true" {
		t.Fatalf("topic config --brokers: %+v", got)
	}
	if _, stderr, code := runBinary(t, "", "", append(b, "topic", "config", "t", "--set", "segment.ms=0")...); code != 2 || !strings.Contains(stderr, "Value must be at least 1") {
		t.Errorf("segment.ms=0: exit %d, %q", code, stderr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.kafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := kadm.NewClient(cl).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "message.timestamp.type", Value: kadm.StringPtr("LogAppendTime")},
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kadm.StringPtr("65536")},
	}, "t")
	cl.Close()
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, rs)
	}
	if err := syscall.Kill(srv.pid, syscall.SIGKILL); err != nil { // this test's own child
		t.Fatal(err)
	}
	stop()

	db, err := passbook.Open(dir, &passbook.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := db.Topic("t")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tp.Config()
	db.Close()
	if cfg.RetentionBytes != 1<<20 || cfg.TimestampType != passbook.LogAppendTime || cfg.MaxMessageBytes != 65536 || cfg.Other["unclean.leader.election.enable"] != "true" {
		t.Fatalf("after SIGKILL, topic.json has %+v", cfg)
	}

	srv, _, _ = launchServe(t, dir, 20*time.Second, 15*time.Second)
	got = configValues(t, "--brokers", srv.kafkaAddr, "topic", "config", "t")
	for k, v := range map[string]string{"retention.bytes": "1048576", "message.timestamp.type": "LogAppendTime", "max.message.bytes": "65536", "unclean.leader.election.enable": "true"} {
		if got[k].Value != v || !got[k].Set {
			t.Errorf("restarted server: %s = %+v, want %s", k, got[k], v)
		}
	}
}

// TestServe_CompactedTopicCompactsAsSet: a topic created over Kafka with
// cleanup.policy=compact, min.cleanable.dirty.ratio and
// delete.retention.ms is compacted by passbook serve's background cleaner
// as set: each key's newest value kept, older ones gone, and the
// tombstones gone too once delete.retention.ms passed (the cleaner runs
// every 15 s, so this takes about half a minute).
func TestServe_CompactedTopicCompactsAsSet(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for two background cleanings (about 30 s)")
	}
	quickExit(t)
	srv := startServe(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.kafkaAddr), kgo.DefaultProduceTopic("kv"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("1048576"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"), "delete.retention.ms": kadm.StringPtr("100"),
	}, "kv"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	// Key "gone" written and deleted (a tombstone) first, then key-0 …
	// key-9 rewritten over 3 MiB, so that both are in closed segments.
	value := make([]byte, 1000)
	const n = 3200
	recs := []*kgo.Record{{Key: []byte("gone"), Value: []byte("soon deleted")}, {Key: []byte("gone")}}
	for i := range n {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", i%10), Value: fmt.Appendf(value[:0:0], "%d %s", i, value)})
	}
	last := int64(len(recs) - 1)
	for _, rec := range recs {
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	read := func() (int, map[string]int) {
		c, err := kgo.NewClient(kgo.SeedBrokers(srv.kafkaAddr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kv": {0: kgo.NewOffset().AtStart()}}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		count, keys := 0, map[string]int{}
		for seen := int64(-1); seen < last; {
			fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			fs := c.PollFetches(fctx)
			cancel()
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				count++
				keys[string(r.Key)]++
				seen = r.Offset
			})
		}
		return count, keys
	}
	for {
		count, keys := read()
		// Cleaned: far fewer records than written, every key-N kept, and
		// nothing left of "gone": its record superseded by the tombstone,
		// the tombstone removed delete.retention.ms after the cleaner
		// first saw it.
		_, gone := keys["gone"]
		if count < n/2 && len(keys) == 10 && !gone {
			t.Logf("read %d of %d records after compaction", count, n)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("not compacted as set within 2 minutes: %d of %d records, keys %v", count, n, keys)
		}
		time.Sleep(time.Second)
	}
}
