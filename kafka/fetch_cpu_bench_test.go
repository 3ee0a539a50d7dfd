package kafka

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFetch_ServerCPU measures what the server spends to send the
// bytes it fetches: the server runs in this process, the client in a
// child process (the test binary again, fetchClientEnv set), so that the
// CPU time of this process (getrusage around the run) is the server's
// alone. The client asks b.N times for the same stretch of four
// partitions (8 MiB each) and reads and discards the responses: each
// fetch is a replay from the page cache, the server's whole work is
// finding the batches and getting them onto the socket.
//
// The sub-benchmarks are the fetch paths: copy is the path before
// sendfile (storage.Log.ReadBatchesVerified reads every batch and checks
// its CRC again, then the records are read into a buffer grown partition
// by partition and written in one vectored write), writev finds the
// batches by their headers and reads the records into memory once (what
// TLS connections and file systems without a descriptor take), and
// sendfile sends the segment file's bytes from the kernel. Each reports
// server-µs/MB (server CPU per MiB fetched), MB/s, and x-copy: its CPU
// per MiB as a fraction of copy's in the same run. Two record sizes:
// batches of 1,000 records of 100 bytes (~110 KiB, what fillDirect
// writes) and of 10 (~1.2 KiB).
//
//	go test ./kafka -run '^$' -bench Fetch_ServerCPU -benchtime 100x
func BenchmarkFetch_ServerCPU(b *testing.B) {
	for _, batchLen := range []int{1000, 10} {
		cpu := map[fetchPath]float64{}
		for _, path := range []fetchPath{fetchCopy, fetchWritev, fetchAuto} {
			b.Run(fmt.Sprintf("batch=%d/%s", batchLen, path), func(b *testing.B) {
				ts := startServer(b, nil)
				ts.srv.fetchIO.setPath(path)
				topic := ts.createTopic(b, benchTopic, benchPartitions)
				fillBatches(b, topic, 80_000, batchLen) // 8.8 MB a partition
				cfg := fetchClientConfig{Addr: ts.addr, Topic: benchTopic, Partitions: benchPartitions, Fetches: b.N, PartitionMaxBytes: 8 << 20}
				runFetchClient(b, cfg, 1) // warm: page cache, connections, checked batches
				var before syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &before)
				b.ResetTimer()
				began := time.Now()
				got := runFetchClient(b, cfg, b.N)
				elapsed := time.Since(began)
				b.StopTimer()
				var after syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &after)
				spent := rusageCPU(&after) - rusageCPU(&before)
				mb := float64(got) / (1 << 20)
				perMB := spent.Seconds() * 1e6 / mb
				cpu[path] = perMB
				b.ReportMetric(perMB, "server-µs/MB")
				b.ReportMetric(mb/elapsed.Seconds(), "MB/s")
				b.ReportMetric(0, "ns/op")
				if base, ok := cpu[fetchCopy]; ok && path != fetchCopy {
					b.ReportMetric(perMB/base, "x-copy")
				}
			})
		}
	}
}

func rusageCPU(u *syscall.Rusage) time.Duration {
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// fillBatches appends n records of recordSize bytes to each of the
// topic's partitions, batchLen to a batch.
func fillBatches(b *testing.B, topic *passbook.Topic, n, batchLen int) {
	recs := make([]passbook.Record, batchLen)
	for i := range recs {
		recs[i] = passbook.Record{Value: benchValue}
	}
	for p := range int32(topic.Partitions()) {
		for left := n; left > 0; left -= len(recs) {
			if _, err := topic.AppendTo(p, recs[:min(left, len(recs))], storage.InOS); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// fetchClientEnv, set to a JSON fetchClientConfig, makes the test binary
// a fetch client (see TestMain): it sends Fetches fetches of every
// partition from offset 0, one after another, reads each response whole
// and throws it away, and prints "BYTES n", the bytes it read.
const fetchClientEnv = "PASSBOOK_KAFKA_FETCH_CLIENT"

type fetchClientConfig struct {
	Addr              string
	Topic             string
	Partitions        int
	Fetches           int
	PartitionMaxBytes int32
}

// runFetchClient runs a fetch client process for fetches fetches and
// returns the bytes it read.
func runFetchClient(b *testing.B, cfg fetchClientConfig, fetches int) int64 {
	b.Helper()
	cfg.Fetches = fetches
	js, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fetchClientEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("fetch client: %v", err)
	}
	line := strings.TrimSpace(string(out))
	n, err := strconv.ParseInt(strings.TrimPrefix(line, "BYTES "), 10, 64)
	if err != nil || !strings.HasPrefix(line, "BYTES ") {
		b.Fatalf("fetch client said %q", line)
	}
	return n
}

func fetchClient(js string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "fetch client:", err)
		os.Exit(1)
	}
	var cfg fetchClientConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fail(err)
	}
	nc, err := net.Dial("tcp", cfg.Addr)
	if err != nil {
		fail(err)
	}
	defer nc.Close()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12 // the newest that names topics, not topic IDs
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<30
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = cfg.Topic
	for p := range int32(cfg.Partitions) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, 0, cfg.PartitionMaxBytes
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fetch-cpu"))
	br := bufio.NewReaderSize(nc, 1<<20)
	buf := make([]byte, 1<<20)
	var total int64
	for i := range cfg.Fetches {
		if _, err := nc.Write(f.AppendRequest(nil, req, int32(i))); err != nil {
			fail(err)
		}
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			fail(err)
		}
		left := int64(binary.BigEndian.Uint32(size[:]))
		if left < 1<<10 {
			fail(fmt.Errorf("a response of %d bytes: no records", left))
		}
		total += 4 + left
		for left > 0 {
			k, err := br.Read(buf[:min(left, int64(len(buf)))])
			if err != nil {
				fail(err)
			}
			left -= int64(k)
		}
	}
	fmt.Printf("BYTES %d\n", total)
}
