package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// serveIn starts `passbook serve` on the data directory dir and returns
// it with a function that stops it (SIGTERM) and waits for it to exit.
func serveIn(t *testing.T, dir string) (*servedProc, func()) {
	t.Helper()
	p, stop, _ := launchServe(t, dir, 20*time.Second, 15*time.Second)
	return p, stop
}

// readyz returns /readyz's status code and JSON body.
func readyz(t *testing.T, p *servedProc) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get("http://" + p.httpAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("/readyz body %q: %v", b, err)
	}
	return resp.StatusCode, body
}

// fetchCode fetches topic's partition from offset from with a raw Fetch
// request and returns the partition's error code and record bytes.
func fetchCode(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, partition int32, from int64) (int16, int) {
	t.Helper()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, mresp.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = partition, from, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetch %s/%d: %v", topic, partition, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch %s/%d: %d topics in the response", topic, partition, len(resp.Topics))
	}
	rp := resp.Topics[0].Partitions[0]
	return rp.ErrorCode, len(rp.RecordBatches)
}

// TestServe_DamagedPartitionFenced runs `passbook serve` as a user does
// on a data directory where one partition lost a segment file: serve
// starts, a franz-go client produces and fetches on the healthy topic and
// on the damaged topic's healthy partition, gets KAFKA_STORAGE_ERROR on
// the damaged partition (produce and fetch), /readyz answers 503 naming
// it, /metrics counts it; `passbook verify` names it and `passbook
// repair` mends it, and after a restart serve takes records on it.
func TestServe_DamagedPartitionFenced(t *testing.T) {
	dir := t.TempDir()
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTopic("good", passbook.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	bad, err := db.CreateTopic("bad", passbook.TopicConfig{Partitions: 2, SegmentBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		for p := range int32(2) {
			if _, err := bad.AppendTo(p, []passbook.Record{{Value: fmt.Appendf(nil, "record %d", i)}}, storage.InOS); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "topics", "bad", "1", "*.log"))
	slices.Sort(segs)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	if err := os.Remove(segs[1]); err != nil {
		t.Fatal(err)
	}

	p, stop := serveIn(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(5*time.Second), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, w := range []struct {
		topic string
		part  int32
	}{{"good", 0}, {"bad", 0}} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: w.topic, Partition: w.part, Value: []byte("served")}).FirstErr(); err != nil {
			t.Fatalf("produce to %s/%d: %v", w.topic, w.part, err)
		}
		if code, n := fetchCode(ctx, t, cl, w.topic, w.part, 0); code != 0 || n == 0 {
			t.Fatalf("fetch %s/%d: error code %d, %d bytes", w.topic, w.part, code, n)
		}
	}
	// A raw produce, to see the code: franz-go retries KAFKA_STORAGE_ERROR
	// (it is retriable) until its delivery timeout.
	b, err := batch.Append(nil, []batch.Record{{Value: []byte("refused")}}, batch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "bad", topicIDOn(ctx, t, cl, "bad") // v13 names the topic by ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 1, b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if pr := resp.Topics[0].Partitions[0]; pr.ErrorCode != kerr.KafkaStorageError.Code || pr.ErrorMessage == nil || !strings.Contains(*pr.ErrorMessage, "fenced") {
		t.Fatalf("produce to the damaged partition: error code %d (%v), want %d (KAFKA_STORAGE_ERROR) saying it is fenced", pr.ErrorCode, pr.ErrorMessage, kerr.KafkaStorageError.Code)
	}
	if code, _ := fetchCode(ctx, t, cl, "bad", 1, 0); code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch of the damaged partition: error code %d, want %d (KAFKA_STORAGE_ERROR)", code, kerr.KafkaStorageError.Code)
	}
	code, body := readyz(t, p)
	parts, _ := body["partitions"].([]any)
	if code != http.StatusServiceUnavailable || len(parts) != 1 {
		t.Fatalf("/readyz = %d %v, want 503 listing one partition", code, body)
	}
	if fp := parts[0].(map[string]any); fp["topic"] != "bad" || fp["partition"] != 1.0 || fp["state"] != "fenced" || !strings.Contains(fp["reason"].(string), "offset") {
		t.Fatalf("/readyz lists %v", fp)
	}
	if got := p.metric(t, "passbook_partitions_fenced"); got != 1 {
		t.Fatalf("passbook_partitions_fenced = %v, want 1", got)
	}
	cl.Close()
	stop()

	stdout, _, exit := runPlain(t, dir, "--data", dir, "verify")
	if exit == 0 || !strings.Contains(stdout, filepath.Join("topics", "bad", "1")) || !strings.Contains(stdout, "FENCED bad/1: ") {
		t.Fatalf("verify exit %d, output:\n%s", exit, stdout)
	}
	stdout, _, _ = runPlain(t, dir, "--data", dir, "verify", "--json")
	var report struct {
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Fenced    string `json:"fenced"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, stdout)
	}
	for _, p := range report.Partitions {
		if (p.Fenced != "") != (p.Topic == "bad" && p.Partition == 1) {
			t.Fatalf("verify --json: %s/%d fenced %q", p.Topic, p.Partition, p.Fenced)
		}
	}
	if stdout, stderr, exit := runPlain(t, dir, "--data", dir, "repair"); exit != 0 {
		t.Fatalf("repair exit %d:\n%s%s", exit, stdout, stderr)
	}

	p, _ = serveIn(t, dir)
	if code, body := readyz(t, p); code != http.StatusOK {
		t.Fatalf("/readyz after repair = %d %v", code, body)
	}
	cl, err = kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rec, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bad", Partition: 1, Value: []byte("after repair")}).First()
	if err != nil {
		t.Fatalf("produce to the repaired partition: %v", err)
	}
	if code, n := fetchCode(ctx, t, cl, "bad", 1, rec.Offset); code != 0 || n == 0 {
		t.Fatalf("fetch of the repaired partition: error code %d, %d bytes", code, n)
	}
}

// runPlain runs the plain (non-race) binary in dir.
func runPlain(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runProcess(t, plainBinary(t), dir, binaryEnv(), "", args...)
}
