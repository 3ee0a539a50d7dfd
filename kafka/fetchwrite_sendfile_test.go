package kafka

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchFrame sends a Fetch of the partitions from the offsets given and
// returns the whole response frame, as the server wrote it, decoded too.
func fetchFrame(nc net.Conn, version int16, topic string, from map[int32]int64, partitionMax int32) ([]byte, *kmsg.FetchResponse, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 64<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p := range int32(len(from)) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, from[p], partitionMax
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("sendfile-test"))
	if _, err := nc.Write(f.AppendRequest(nil, req, 1)); err != nil {
		return nil, nil, err
	}
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return nil, nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	if _, err := io.ReadFull(nc, frame[4:]); err != nil {
		return nil, nil, err
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	body := frame[8:] // size, correlation id
	if resp.IsFlexible() {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, nil, fmt.Errorf("v%d response: %w", version, err)
	}
	return frame, resp, nil
}

func mustFetch(t *testing.T, nc net.Conn, version int16, topic string, from map[int32]int64) ([]byte, *kmsg.FetchResponse) {
	t.Helper()
	frame, resp, err := fetchFrame(nc, version, topic, from, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	return frame, resp
}

// storedBytes reads what ReadBatches returns for the partition from
// offset from, up to maxBytes, straight from the segment file.
func storedBytes(t *testing.T, topic *passbook.Topic, p int32, from int64, maxBytes int) []byte {
	t.Helper()
	l, err := topic.Partition(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.ReadBatches(from, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	b := make([]byte, c.Size)
	if _, err := c.File.ReadAt(b, c.Pos); err != nil {
		t.Fatal(err)
	}
	return b
}

// A fetch answers the same bytes whichever way it writes them: records
// sent from the segment file with sendfile (large partitions on a plain
// TCP connection), from memory in a vectored write, or copied — and the
// records are the segment file's bytes.
func TestFetch_Sendfile_SameBytes(t *testing.T) {
	ts := startServer(t, nil)
	topic := ts.createTopic(t, "sf", 3)
	big := make([]passbook.Record, 1000) // a batch of ~110 KB: sent from the file
	for i := range big {
		big[i] = passbook.Record{Value: benchValue}
	}
	for range 5 {
		for _, p := range []int32{0, 2} {
			if _, err := topic.AppendTo(p, big, storage.InOS); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Partition 1: a few small batches, under sendfileMin: from memory.
	for i := range 3 {
		if _, err := topic.AppendTo(1, []passbook.Record{{Value: fmt.Appendf(nil, "small %d", i)}}, storage.InOS); err != nil {
			t.Fatal(err)
		}
	}
	from := map[int32]int64{0: 0, 1: 1, 2: 2500} // 2500: inside the third batch
	for _, version := range []int16{4, 11, 12} { // int32 lengths; compact (flexible) lengths
		frames := map[fetchPath][]byte{}
		for _, path := range []fetchPath{fetchAuto, fetchWritev, fetchCopy} {
			ts.srv.fetchIO.setPath(path)
			before := ts.srv.Stats().FetchSendfileBytes
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			frame, resp := mustFetch(t, nc, version, "sf", from)
			frames[path] = frame
			nc.Close()
			sent := ts.srv.Stats().FetchSendfileBytes - before
			var fromFiles uint64
			for _, rp := range resp.Topics[0].Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("v%d %s: partition %d: %v", version, path, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
				}
				want := storedBytes(t, topic, rp.Partition, from[rp.Partition], 8<<20)
				if !bytes.Equal(rp.RecordBatches, want) {
					t.Errorf("v%d %s: partition %d: %d record bytes, not the %d stored", version, path, rp.Partition, len(rp.RecordBatches), len(want))
				}
				if len(want) >= sendfileMin {
					fromFiles += uint64(len(want))
				}
			}
			if path != fetchAuto {
				fromFiles = 0
			}
			if sent != fromFiles {
				t.Errorf("v%d %s: %d bytes sent with sendfile, want %d", version, path, sent, fromFiles)
			}
		}
		for _, path := range []fetchPath{fetchWritev, fetchCopy} {
			if !bytes.Equal(frames[path], frames[fetchAuto]) {
				t.Errorf("v%d: the %s response (%d bytes) differs from the sendfile one (%d)", version, path, len(frames[path]), len(frames[fetchAuto]))
			}
		}
	}
}

// Over TLS the records cannot go with sendfile (the kernel would send
// them unencrypted): the same fetch is answered from memory, the same
// bytes.
func TestFetch_TLS_NoSendfile(t *testing.T) {
	set := certs(t, "unused")
	ts := startServer(t, &Options{TLS: set.ServerConfig(false)})
	topic := ts.createTopic(t, "tls", 1)
	big := make([]passbook.Record, 1000)
	for i := range big {
		big[i] = passbook.Record{Value: benchValue}
	}
	for range 3 {
		if _, err := topic.AppendTo(0, big, storage.InOS); err != nil {
			t.Fatal(err)
		}
	}
	nc, err := tls.Dial("tcp", ts.addr, set.ClientConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, version := range []int16{4, 12} {
		_, resp := mustFetch(t, nc, version, "tls", map[int32]int64{0: 0})
		rp := resp.Topics[0].Partitions[0]
		if want := storedBytes(t, topic, 0, 0, 8<<20); rp.ErrorCode != 0 || !bytes.Equal(rp.RecordBatches, want) {
			t.Errorf("v%d over TLS: error %d, %d record bytes, want the %d stored", version, rp.ErrorCode, len(rp.RecordBatches), len(want))
		}
	}
	if sent := metricValue(t, ts.srv, "passbook_kafka_fetch_sendfile_bytes_total"); sent != 0 {
		t.Errorf("passbook_kafka_fetch_sendfile_bytes_total %v over TLS, want 0", sent)
	}
}

// Fetches that send segment files with sendfile while DeleteRecords
// deletes the segments under them: every response is whole batches with
// sound CRCs at the offsets asked for, or OFFSET_OUT_OF_RANGE once the
// start has passed them; nothing else.
func TestFetch_Sendfile_RacesRetention(t *testing.T) {
	db, err := passbook.Open(t.TempDir(), &passbook.Options{MinSegmentBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, db, nil)
	topic, err := db.CreateTopic("race", passbook.TopicConfig{Partitions: 1, SegmentBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]passbook.Record, 200) // ~22 KB batches, over sendfileMin
	for i := range recs {
		recs[i] = passbook.Record{Value: benchValue}
	}
	for range 150 { // ~3.3 MB, ~13 segments
		if _, err := topic.AppendTo(0, recs, storage.InOS); err != nil {
			t.Fatal(err)
		}
	}
	l, err := topic.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	head := l.Head()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { // the start moves up five batches at a time, deleting segments
		defer wg.Done()
		for off := int64(5 * len(recs)); off <= head; off += int64(5 * len(recs)) {
			if _, err := topic.DeleteRecords(0, off); err != nil {
				t.Errorf("delete records below %d: %v", off, err)
				return
			}
		}
	}()
	const fetchers = 3
	var served, outOfRange [fetchers]int
	for i := range fetchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			for from := int64(0); from < head; {
				_, resp, err := fetchFrame(nc, 12, "race", map[int32]int64{0: from}, 32<<10) // a batch a fetch
				if err != nil {
					t.Errorf("fetch from %d: %v", from, err)
					return
				}
				rp := resp.Topics[0].Partitions[0]
				switch rp.ErrorCode {
				case 0:
				case kerr.OffsetOutOfRange.Code:
					outOfRange[i]++
					from = max(from+1, rp.LogStartOffset)
					continue
				default:
					t.Errorf("fetch from %d: %v", from, kerr.ErrorForCode(rp.ErrorCode))
					return
				}
				b := rp.RecordBatches
				if len(b) == 0 {
					t.Errorf("fetch from %d below the head %d: no records", from, head)
					return
				}
				for first := true; len(b) > 0; first = false {
					h, err := batch.Check(b)
					if err != nil {
						t.Errorf("fetch from %d: batch %d bytes into the response: %v", from, len(rp.RecordBatches)-len(b), err)
						return
					}
					if first && (h.BaseOffset > from || h.NextOffset() <= from) || !first && h.BaseOffset != from {
						t.Errorf("fetch from %d: a batch of offsets [%d, %d]", from, h.BaseOffset, h.LastOffset())
						return
					}
					from = h.NextOffset()
					b = b[h.Size():]
				}
				served[i]++
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("responses with records %v, out of range %v; %d bytes sent with sendfile", served, outOfRange, ts.srv.Stats().FetchSendfileBytes)
	if got, want := metricValue(t, ts.srv, "passbook_kafka_fetch_sendfile_bytes_total"), float64(ts.srv.Stats().FetchSendfileBytes); got != want || got == 0 {
		t.Errorf("passbook_kafka_fetch_sendfile_bytes_total %v, Stats %v: want them equal, not 0", got, want)
	}
}
