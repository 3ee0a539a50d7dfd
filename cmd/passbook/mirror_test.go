package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/offsets"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// mirrorFixture is a data directory with the four kinds of topic a
// mirror must carry, and consumers committed at various places:
//
//	plain  1 partition, dense from 0: offsets identical on an empty target
//	multi  3 partitions, keyed: identical too
//	keys   compacted (tiny segments, cleaned): gaps, so mapped
//	gap    retention took its first segments: starts past 0, so mapped
type mirrorFixture struct {
	dir     string
	commits []offsets.Entry
}

func newMirrorFixture(t *testing.T, plain int) *mirrorFixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "passbook-data")
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	mk := func(name string, cfg passbook.TopicConfig) *passbook.Topic {
		tp, err := db.CreateTopic(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	appendTo := func(tp *passbook.Topic, p int32, recs []passbook.Record) {
		if _, err := tp.AppendTo(p, recs, passbook.DefaultDurability); err != nil {
			t.Fatal(err)
		}
	}
	var recs []passbook.Record
	for i := range plain {
		r := passbook.Record{Value: fmt.Appendf(nil, "plain %d", i)}
		if i%7 == 0 {
			r.Headers = []passbook.Header{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}}
		}
		recs = append(recs, r)
	}
	appendTo(mk("plain", passbook.TopicConfig{}), 0, recs)

	multi := mk("multi", passbook.TopicConfig{Partitions: 3, RetentionAge: 72 * time.Hour})
	for p := range int32(3) {
		recs = recs[:0]
		for i := range 200 + 50*int(p) {
			recs = append(recs, passbook.Record{Key: fmt.Appendf(nil, "k%d", i%13), Value: fmt.Appendf(nil, "multi %d/%d", p, i)})
		}
		appendTo(multi, p, recs)
	}

	keys := mk("keys", passbook.TopicConfig{CleanupPolicy: passbook.CleanupCompact, SegmentBytes: 2 << 10})
	for round := range 20 {
		recs = recs[:0]
		for k := range 20 {
			recs = append(recs, passbook.Record{Key: fmt.Appendf(nil, "key-%02d", k), Value: fmt.Appendf(nil, "v%d of key %d", round, k)})
		}
		appendTo(keys, 0, recs)
	}
	if _, err := keys.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}

	gap := mk("gap", passbook.TopicConfig{SegmentBytes: 2 << 10, RetentionBytes: 8 << 10})
	for i := range 600 {
		appendTo(gap, 0, []passbook.Record{{Value: fmt.Appendf(nil, "gap record %d with some bytes to fill segments", i)}})
	}
	l, err := gap.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Retain(); err != nil {
		t.Fatal(err)
	}
	gapStart := l.StartOffset()
	keysLog, _ := keys.Partition(0)
	if gapStart == 0 || keysLog.Head()-keysLog.StartOffset() == int64(countRecords(t, keys, 0)) {
		t.Fatalf("fixture: gap starts at %d, keys has no gaps: retention or compaction did nothing", gapStart)
	}

	f := &mirrorFixture{dir: dir}
	add := func(who, topic string, p int32, off int64) {
		f.commits = append(f.commits, offsets.Entry{Key: offsets.Key{Consumer: who, Topic: topic, Partition: p}, Offset: off})
	}
	add("early", "plain", 0, 50)
	add("done", "plain", 0, int64(plain))
	add("start", "plain", 0, 0)
	add("mid", "multi", 0, 17)
	add("mid", "multi", 1, 250)
	add("mid", "multi", 2, 3)
	add("cleaned", "keys", 0, 5)    // compacted away: the next record's target offset
	add("cleaned2", "keys", 0, 390) // among the newest
	add("late", "gap", 0, gapStart+10)
	add("behind", "gap", 0, gapStart-5) // below the log start: the first record's
	add("atend", "gap", 0, 600)
	if err := db.Offsets().CommitEntries(context.Background(), f.commits); err != nil {
		t.Fatal(err)
	}
	return f
}

func countRecords(t *testing.T, tp *passbook.Topic, p int32) int {
	n := 0
	for _, err := range tp.Records(p, 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// sourceRecords reads every partition's records of a data directory.
func sourceRecords(t *testing.T, dir string) map[tp][]batch.Record {
	t.Helper()
	db, err := passbook.Open(dir, &passbook.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[tp][]batch.Record{}
	for _, topic := range db.Topics() {
		for p := range int32(topic.Partitions()) {
			at := tp{topic.Name(), p}
			out[at] = []batch.Record{}
			l, err := topic.Partition(p)
			if err != nil {
				t.Fatal(err)
			}
			for r, err := range topic.Records(p, l.StartOffset()) {
				if err != nil {
					t.Fatal(err)
				}
				out[at] = append(out[at], r.Clone())
			}
		}
	}
	return out
}

// kafkaRecords reads every record of the partitions named, from the
// start to the high watermark.
func kafkaRecords(t *testing.T, addrs string, parts []tp) map[tp][]batch.Record {
	t.Helper()
	adm := kadmClient(t, addrs)
	ctx := context.Background()
	var names []string
	for _, at := range parts {
		names = append(names, at.topic)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[tp][]batch.Record{}
	for _, at := range parts {
		o, ok := ends.Lookup(at.topic, at.p)
		if !ok {
			t.Fatalf("target has no %s/%d", at.topic, at.p)
		}
		out[at] = []batch.Record{}
		if o.Offset == 0 {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{at.topic: {at.p: kgo.NewOffset().AtStart()}}))
		if err != nil {
			t.Fatal(err)
		}
		for len(out[at]) == 0 || out[at][len(out[at])-1].Offset < o.Offset-1 {
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			fs := cl.PollFetches(pctx)
			cancel()
			if err := fs.Err(); err != nil {
				t.Fatalf("read %s/%d of the target: %v", at.topic, at.p, err)
			}
			for _, r := range fs.Records() {
				out[at] = append(out[at], fromKgo(r))
			}
		}
		cl.Close()
	}
	return out
}

// expectTranslation is the target offset a commit at source offset o
// must become: that of the first source record at or after o (records
// pair up in order), or the target's end.
func expectTranslation(src, tgt []batch.Record, o int64) int64 {
	for i, r := range src {
		if r.Offset >= o {
			return tgt[i].Offset
		}
	}
	if len(tgt) == 0 {
		return 0
	}
	return tgt[len(tgt)-1].Offset + 1
}

// checkMirrored compares every source partition with the target's:
// the same records in the same order, none missing and none twice; the
// same offsets where identical says so; every commit translated.
func checkMirrored(t *testing.T, src, tgt map[tp][]batch.Record, identical map[string]bool, commits []offsets.Entry, got map[string]map[tp]int64) {
	t.Helper()
	for at, s := range src {
		g := tgt[at]
		if len(g) != len(s) {
			t.Errorf("%s/%d: %d records on the target, %d on the source", at.topic, at.p, len(g), len(s))
			continue
		}
		for i := range s {
			if !sameRecord(&s[i], &g[i]) {
				t.Errorf("%s/%d: record %d differs: source offset %d %q, target offset %d %q", at.topic, at.p, i, s[i].Offset, s[i].Value, g[i].Offset, g[i].Value)
				break
			}
			if identical[at.topic] && s[i].Offset != g[i].Offset {
				t.Errorf("%s/%d: source offset %d is target offset %d, promised identical", at.topic, at.p, s[i].Offset, g[i].Offset)
				break
			}
		}
	}
	for _, c := range commits {
		at := tp{c.Topic, c.Partition}
		want := expectTranslation(src[at], tgt[at], c.Offset)
		if o, ok := got[c.Consumer][at]; !ok || o != want {
			t.Errorf("%s on %s/%d: committed %d on the source; target has %d (found %v), want %d", c.Consumer, c.Topic, c.Partition, c.Offset, o, ok, want)
		}
	}
}

// kafkaCommits is every group's committed offsets on a cluster.
func kafkaCommits(t *testing.T, addrs string) map[string]map[tp]int64 {
	t.Helper()
	adm := kadmClient(t, addrs)
	ctx := context.Background()
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[tp]int64{}
	for g, r := range adm.FetchManyOffsets(ctx, groups.Groups()...) {
		if r.Err != nil {
			t.Fatalf("offsets of %s: %v", g, r.Err)
		}
		out[g] = map[tp]int64{}
		r.Fetched.Each(func(o kadm.OffsetResponse) { out[g][tp{o.Topic, o.Partition}] = o.At })
	}
	return out
}

// mirrorProcess starts the real binary with args, its output in files.
func mirrorProcess(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(passbookBinary(t), args...)
	cmd.Env = binaryEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, &errOut
}

// TestMirror_ToKafka_Kill9: a data directory of plain, keyed, compacted
// and retention-gapped topics mirrored to a three-broker kfake cluster
// with --groups. The real mirror process is killed with SIGKILL at
// random moments, several times, and started again each time; once a
// run ends by itself, the target holds every record in order, none
// twice, at the source's offsets where the summary says "identical",
// and every consumer's commit translated exactly.
func TestMirror_ToKafka_Kill9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kill -9 rounds")
	}
	quickExit(t)
	f := newMirrorFixture(t, 60_000)
	brokers := kfakeBrokers(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	args := []string{"--data", f.dir, "mirror", "--to", brokers, "--groups"}
	kills := 0
	for round := range 6 {
		cmd, _, stderr := mirrorProcess(t, args...)
		delay := time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Logf("round %d: ended by itself before the kill at %s (%v)", round, delay, err)
			if err != nil {
				t.Fatalf("round %d: %v: %s", round, err, stderr)
			}
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
			t.Logf("round %d: killed at %s; stderr: %s", round, delay, strings.TrimSpace(stderr.String()))
		}
	}
	stdout, stderr, code := runBinary(t, "", "", append(args, "--json")...)
	if code != 0 {
		t.Fatalf("last run: exit %d: %s", code, stderr)
	}
	t.Logf("%d kills; last run's stderr: %s", kills, stderr)
	var sum struct {
		Topics []struct {
			Name       string `json:"name"`
			Partitions []struct {
				Identical bool  `json:"identical"`
				Lag       int64 `json:"lag"`
			} `json:"partitions"`
		} `json:"topics"`
		Waiting int `json:"commits_waiting"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	identical := map[string]bool{}
	for _, ts := range sum.Topics {
		identical[ts.Name] = true
		for _, p := range ts.Partitions {
			identical[ts.Name] = identical[ts.Name] && p.Identical
			if p.Lag != 0 {
				t.Errorf("%s: lag %d after a run to the end", ts.Name, p.Lag)
			}
		}
	}
	for name, want := range map[string]bool{"plain": true, "multi": true, "keys": false, "gap": false} {
		if identical[name] != want {
			t.Errorf("%s: identical %v, want %v (summary %s)", name, identical[name], want, stdout)
		}
	}
	if sum.Waiting != 0 {
		t.Errorf("%d commits waiting after a run to the end", sum.Waiting)
	}
	src := sourceRecords(t, f.dir)
	var parts []tp
	for at := range src {
		parts = append(parts, at)
	}
	checkMirrored(t, src, kafkaRecords(t, brokers, parts), identical, f.commits, kafkaCommits(t, brokers))

	// And the summary on a terminal-less stdout: the table.
	out, _, code := runBinary(t, "", "", args...)
	if code != 0 || !strings.Contains(out, "mirrored 0 records") || !strings.Contains(out, "identical") {
		t.Errorf("a run with nothing new: exit %d:\n%s", code, out)
	}
}

// produceKafka writes n records to each partition of topic on a
// cluster, keyed by partition, and returns when all are acknowledged.
func produceKafka(t *testing.T, addrs, topic string, partitions int32, n int, tag string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addrs, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for p := range partitions {
		for i := range n {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "k%d", i%11), Value: fmt.Appendf(nil, "%s %d/%d", tag, p, i)})
		}
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// commitKafka commits a group's offsets as an admin.
func commitKafka(t *testing.T, addrs, group, topic string, offs map[int32]int64) {
	t.Helper()
	to := kadm.Offsets{}
	for p, at := range offs {
		to.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	resp, err := kadmClient(t, addrs).CommitOffsets(context.Background(), group, to)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// dataCommits is every consumer's committed offsets in a data directory.
func dataCommits(t *testing.T, dir string) map[string]map[tp]int64 {
	t.Helper()
	db, err := passbook.Open(dir, &passbook.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries, err := db.Offsets().List(context.Background(), offsets.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[tp]int64{}
	for _, e := range entries {
		if out[e.Consumer] == nil {
			out[e.Consumer] = map[tp]int64{}
		}
		out[e.Consumer][tp{e.Topic, e.Partition}] = e.Offset
	}
	return out
}

// TestMirror_FromKafka: the other direction, a Kafka cluster's topics
// and groups into a new data directory, with a kill -9 on the way: the
// records at the same offsets (the cluster's are dense from 0, the
// directory new), the groups' commits as the directory's consumers'.
func TestMirror_FromKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a kill -9 round")
	}
	quickExit(t)
	brokers := kfakeBrokers(t)
	adm := kadmClient(t, brokers)
	ctx := context.Background()
	for name, n := range map[string]int32{"orders": 3, "events": 1} {
		if _, err := adm.CreateTopic(ctx, n, -1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	produceKafka(t, brokers, "orders", 3, 4000, "order")
	produceKafka(t, brokers, "events", 1, 12000, "event")
	commits := []offsets.Entry{
		{Key: offsets.Key{Consumer: "billing", Topic: "orders", Partition: 0}, Offset: 10},
		{Key: offsets.Key{Consumer: "billing", Topic: "orders", Partition: 1}, Offset: 4000},
		{Key: offsets.Key{Consumer: "billing", Topic: "orders", Partition: 2}, Offset: 0},
		{Key: offsets.Key{Consumer: "audit", Topic: "events", Partition: 0}, Offset: 7777},
	}
	for _, c := range commits {
		commitKafka(t, brokers, c.Consumer, c.Topic, map[int32]int64{c.Partition: c.Offset})
	}
	dir := filepath.Join(t.TempDir(), "dev-data")
	args := []string{"mirror", "--from", brokers, "--to-data", dir, "--groups"}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	for round := range 2 {
		cmd, _, stderr := mirrorProcess(t, args...)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		delay := time.Duration(rng.Int64N(int64(2 * time.Second)))
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: %v: %s", round, err, stderr)
			}
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			t.Logf("round %d: killed at %s", round, delay)
		}
	}
	out, stderr, code := runBinary(t, "", "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "identical") || strings.Contains(out, "mapped") {
		t.Errorf("summary: want every topic identical:\n%s", out)
	}
	src := kafkaRecords(t, brokers, []tp{{"orders", 0}, {"orders", 1}, {"orders", 2}, {"events", 0}})
	tgt := sourceRecords(t, dir)
	identical := map[string]bool{"orders": true, "events": true}
	checkMirrored(t, src, tgt, identical, commits, dataCommits(t, dir))
}

// TestMirror_Follow: the road to a cluster, live. passbook serve runs on
// the fixture; mirror --follow --groups carries it to a kfake cluster;
// new records produced to the server and a consumer's new commit reach
// the target while the mirror runs; SIGTERM stops it with its summary
// and exit 0.
func TestMirror_Follow(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a live follow of passbook serve")
	}
	quickExit(t)
	f := newMirrorFixture(t, 2_000)
	srv, _, _ := launchServe(t, f.dir, 20*time.Second, 15*time.Second)
	brokers := kfakeBrokers(t)
	state := filepath.Join(t.TempDir(), "mirror-state")
	cmd, _, stderr := mirrorProcess(t, "mirror", "--from", srv.kafkaAddr, "--to", brokers, "--groups", "--follow", "--state", state) // its summary is cut short by the SIGKILL below
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
	})
	ends := func(addr, topic string) int64 {
		lo, err := kadmClient(t, addr).ListEndOffsets(context.Background(), topic)
		if err != nil {
			return -1
		}
		o, _ := lo.Lookup(topic, 0)
		return o.Offset
	}
	committed := func(addr, group, topic string) int64 {
		r, err := kadmClient(t, addr).FetchOffsets(context.Background(), group)
		if err != nil {
			return -1
		}
		o, ok := r.Lookup(topic, 0)
		if !ok {
			return -1
		}
		return o.At
	}
	waitFor(t, 90*time.Second, "the fixture on the target", func() bool { return ends(brokers, "plain") == 2_000 && committed(brokers, "early", "plain") == 50 })

	// kill -9 while it copies a burst, and start it again: it goes on
	// from what the target holds (both ends Kafka: the reconciliation
	// reads both over the protocol).
	produceKafka(t, srv.kafkaAddr, "multi", 3, 40_000, "burst")
	waitFor(t, 90*time.Second, "the burst to begin on the target", func() bool { return ends(brokers, "multi") > 200 })
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	t.Logf("killed with multi/0 at %d on the target; stderr: %s", ends(brokers, "multi"), stderr)
	cmd, stdout, stderr := mirrorProcess(t, "mirror", "--from", srv.kafkaAddr, "--to", brokers, "--groups", "--follow", "--state", state)
	go func() { done <- cmd.Wait() }()

	produceKafka(t, srv.kafkaAddr, "plain", 1, 500, "later")
	commitKafka(t, srv.kafkaAddr, "early", "plain", map[int32]int64{0: 2_300})
	// The commit at 2,300 may reach the mirror before record 2,299 has
	// been copied: it waits. At no moment is it on the target ahead of
	// the records (the commit is read first, the end after: the end
	// only grows).
	waitFor(t, 90*time.Second, "the new records and the new commit on the target", func() bool {
		c := committed(brokers, "early", "plain")
		end := ends(brokers, "plain")
		if c > end {
			t.Errorf("early's commit on the target is %d, past the target's end %d", c, end)
		}
		return end == 2_500 && c == 2_300
	})
	select {
	case err := <-done:
		t.Fatalf("mirror --follow ended by itself: %v: %s", err, stderr)
	default:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Fatalf("after SIGTERM: %v: %s", err, stderr)
	}
	if !strings.Contains(stdout.String(), "mirrored ") || !strings.Contains(stdout.String(), "commits: ") {
		t.Errorf("summary after SIGTERM:\n%s", stdout)
	}
	src := kafkaRecords(t, srv.kafkaAddr, []tp{{"plain", 0}, {"multi", 0}, {"multi", 1}, {"multi", 2}})
	tgt := kafkaRecords(t, brokers, []tp{{"plain", 0}, {"multi", 0}, {"multi", 1}, {"multi", 2}})
	checkMirrored(t, src, tgt, map[string]bool{"plain": true, "multi": true}, nil, nil)
}

// TestMirror_BadFlags: a command line that cannot work is refused with
// exit 2 and a reason, before anything is opened or written.
func TestMirror_BadFlags(t *testing.T) {
	quickExit(t)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mirror"}, "give a target"},
		{[]string{"mirror", "--to", "a:1", "--to-data", "x"}, "--to and --to-data"},
		{[]string{"--data", "x", "mirror", "--from", "a:1", "--to-data", "y"}, "--data and --from"},
		{[]string{"mirror", "--to-data", "y"}, "--to-data needs --from"},
		{[]string{"mirror", "--to", "a:1", "--follow"}, "--follow needs --from"},
		{[]string{"mirror", "--from", "a:1", "--to", "b:1"}, "give --state"},
		{[]string{"mirror", "--to", "a:1", "--topics", "("}, "--topics"},
		{[]string{"mirror", "--to", "nope"}, "HOST:PORT"},
		{[]string{"mirror", "--to", "a:1", "--replication-factor", "0"}, "--replication-factor"},
		{[]string{"mirror", "--to", "a:1", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key"},
		{[]string{"mirror", "--to", "a:1", "extra"}, "unknown command"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, stderr, code := runBinary(t, dir, "", c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 with %q", code, stderr, c.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("bad command lines left %d entries in the working directory", len(entries))
	}
}

// TestScaleOut_Road is docs/scale-out.md, step by step, with the same
// commands: passbook serve runs with a topic, a producer and a consumer
// group; the mirror follows it to a three-broker cluster; the consumer
// is stopped, its commit waited for on the cluster and started there (it
// reads exactly what it had not); the producer is stopped, the heads
// waited for, and it produces to the cluster; lag on the cluster says
// so; SIGTERM ends the mirror.
func TestScaleOut_Road(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the scale-out road, live")
	}
	quickExit(t)
	srv := startServe(t)
	local := []string{"--brokers", srv.kafkaAddr}
	cluster := kfakeBrokers(t)
	remote := []string{"--brokers", cluster}
	run := func(b []string, stdin string, args ...string) string {
		t.Helper()
		stdout, stderr, code := runBinary(t, "", stdin, append(slices.Clip(args), b...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	lines := func(from, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "order-%05d\n", from+i)
		}
		return b.String()
	}
	run(local, "", "topic", "create", "orders", "--partitions", "3")
	run(local, lines(0, 3000), "produce", "orders")
	run(local, "", "consume", "orders", "--consumer", "billing", "--max", "1000")

	// 0. The cluster answers.
	run(remote, "", "topic", "list")
	// 1. The mirror, following the running server.
	state := filepath.Join(t.TempDir(), "mirror-state")
	cmd, stdout, stderr := mirrorProcess(t, "mirror", "--from", srv.kafkaAddr, "--to", cluster, "--groups", "--follow", "--state", state)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGKILL) })
	run(local, lines(3000, 500), "produce", "orders") // producers carry on meanwhile

	// 2. The consumer: stopped (its run above ended); its commit on the
	// cluster once the mirror has carried it, the same as on passbook
	// (the offsets are identical); then started against the cluster.
	lagOf := func(b []string) string {
		var rows []struct {
			Partition int32 `json:"partition"`
			Committed int64 `json:"committed"`
		}
		out, _, code := runBinary(t, "", "", append([]string{"lag", "--consumer", "billing", "--topic", "orders", "--json"}, b...)...)
		if code != 0 {
			return "" // none yet: the mirror has not carried it
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("lag --json: %v: %s", err, out)
		}
		return fmt.Sprint(rows)
	}
	want := lagOf(local)
	waitFor(t, 90*time.Second, "billing's commit on the cluster", func() bool { return lagOf(remote) == want })
	moved := run(remote, "", "consume", "orders", "--consumer", "billing")
	stayed := run(local, "", "consume", "orders", "--consumer", "billing-check", "--from", "earliest")
	all := strings.Split(strings.TrimSpace(stayed), "\n")
	got := strings.Split(strings.TrimSpace(moved), "\n")
	if len(all) != 3500 || len(got) != 2500 {
		t.Fatalf("the moved consumer read %d records of the %d, want the 2,500 it had not read", len(got), len(all))
	}

	// 3. The producers: stopped; the heads the same on both; then
	// producing to the cluster.
	heads := func(b []string) string {
		var info struct {
			Partitions []struct {
				Head int64 `json:"head"`
			} `json:"partitions"`
		}
		out := run(b, "", "topic", "describe", "orders", "--json")
		if err := json.Unmarshal([]byte(out), &info); err != nil {
			t.Fatalf("topic describe --json: %v: %s", err, out)
		}
		return fmt.Sprint(info.Partitions)
	}
	wantHeads := heads(local)
	waitFor(t, 90*time.Second, "the cluster's heads to be passbook's", func() bool { return heads(remote) == wantHeads })
	run(remote, lines(3500, 100), "produce", "orders")

	// 4. Lag on the cluster: billing is 100 behind, the records produced
	// there.
	var rows []struct {
		Lag int64 `json:"lag"`
	}
	if err := json.Unmarshal([]byte(run(remote, "", "lag", "--consumer", "billing", "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	var lag int64
	for _, r := range rows {
		lag += r.Lag
	}
	if lag != 100 {
		t.Errorf("billing's lag on the cluster: %d, want 100", lag)
	}

	// 5. Stop the mirror.
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Fatalf("mirror after SIGTERM: %v: %s", err, stderr)
	}
	if !strings.Contains(stdout.String(), "orders  3") || !strings.Contains(stdout.String(), "identical") {
		t.Errorf("the mirror's summary:\n%s", stdout)
	}
	t.Logf("mirror's stderr: %s\nsummary:\n%s", stderr, stdout)
}

// TestMirror_NonEmptyTarget: a target topic that already holds records
// keeps them; the source's records follow them, so that partition's
// offsets are mapped (the summary and stderr say so) and its consumers'
// commits translated by the map — while the other topics, new on the
// target, stay identical.
func TestMirror_NonEmptyTarget(t *testing.T) {
	quickExit(t)
	f := newMirrorFixture(t, 500)
	brokers := kfakeBrokers(t)
	if _, err := kadmClient(t, brokers).CreateTopic(context.Background(), 1, -1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	produceKafka(t, brokers, "plain", 1, 7, "already there")
	stdout, stderr, code := runBinary(t, "", "", "--data", f.dir, "mirror", "--to", brokers, "--groups", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "plain/0 on the target already holds records up to offset 7") {
		t.Errorf("stderr does not say the target was not empty: %s", stderr)
	}
	var sum struct {
		Topics []struct {
			Name       string `json:"name"`
			Created    bool   `json:"created"`
			Partitions []struct {
				Identical bool `json:"identical"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	identical := map[string]bool{}
	for _, ts := range sum.Topics {
		identical[ts.Name] = ts.Partitions[0].Identical
		if created := ts.Name != "plain"; ts.Created != created {
			t.Errorf("%s: created %v, want %v", ts.Name, ts.Created, created)
		}
	}
	if identical["plain"] || !identical["multi"] {
		t.Errorf("identical: %v; want plain mapped (the target was not empty), multi identical", identical)
	}
	src := sourceRecords(t, f.dir)
	var parts []tp
	for at := range src {
		parts = append(parts, at)
	}
	tgt := kafkaRecords(t, brokers, parts)
	plain := tgt[tp{"plain", 0}]
	if len(plain) < 7 || string(plain[0].Value) != "already there 0/0" {
		t.Fatalf("the target's own records are gone: %d records, first %q", len(plain), plain[0].Value)
	}
	tgt[tp{"plain", 0}] = plain[7:]
	checkMirrored(t, src, tgt, map[string]bool{"multi": true}, f.commits, kafkaCommits(t, brokers))
}
