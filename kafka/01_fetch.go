package kafka

// Fetch (key 1): versions 4–18. No fetch sessions (the response's session
// id is 0, which tells clients to send full fetches). v13+ names topics
// by ID, translated to names before this handler and back after it
// (topicids.go); v14–v18 add only what followers send and tiered storage
// answers.
//
// isolation_level 1 (read_committed) returns batches below the
// partition's last stable offset only (the first offset of its oldest
// open transaction, else the high watermark), with the aborted
// transactions of the range (producer id, first offset: the storage's
// aborted-transaction index, storage.Log.AbortedTxns), so that clients
// drop aborted records; control batches are served as stored and
// clients skip them, as from Kafka. Its long poll waits for the LSO to
// move. Every response carries the LSO; read_uncommitted reads up to the
// high watermark as before.
//
// A fetch returns whole stored batches as they are in the segment files,
// never re-encoded: the first may start before the offset asked for, and
// clients skip the records before it. Each partition gets up to its
// partition_max_bytes and the response up to max_bytes — both lowered to
// the broker's fetch.max.bytes (Options.FetchMaxBytes) when they ask for
// more, as Kafka's broker does — except that the first partition with
// data always gets at least one whole batch, so a batch larger than the
// limits still gets through. When less than
// min_bytes is ready the fetch waits, up to max_wait_ms, for any of its
// partitions to grow (a long poll), and Shutdown cuts the wait short.
//
// The record bytes are not read by the server: storage finds whole
// batches by their headers (ReadBatches checks the CRC only of batches
// not known good since the partition was opened — see the storage
// package doc's Reading section; clients check every batch's CRC), and
// a partition's records of 16 KiB or more (sendfileMin, fetchwrite.go)
// go from the segment file to the socket with sendfile(2), the segment
// pinned against retention and the cleaner until they are written. TLS
// connections (the kernel would send them unencrypted), file systems
// without descriptors (vfs.Mem, vfs.Faulty) and smaller partitions read
// the records into a buffer of the connection instead: a response with
// 64 KiB of records or more (spliceMin) is written from there in one
// vectored write with the rest of the response, a smaller one copied
// into the encoded response, which is cheaper at that size.
// Stats.FetchSendfileBytes counts what went with sendfile. The record
// bytes of a response, in memory or pinned in files, count against the
// server's queued.max.response.bytes (Options.QueuedMaxResponseBytes)
// until the response is written: when it is spent, a fetch that has data
// returns what it has, and one with none yet waits for room.
//
// ACLs: Read on each topic (TOPIC_AUTHORIZATION_FAILED for each of its
// partitions).

import (
	"context"
	"slices"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.Fetch, 4, 18, fetch) }

func fetch(_ context.Context, c *conn, req *kmsg.FetchRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.SessionID != 0 {
		// This server never hands out a session id.
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return reply{resp: resp}, nil
	}
	parts := c.resolveFetch(req, resp)
	return reply{resp: resp, wait: func(ctx context.Context) { c.fetch(ctx, req, parts) }}, nil
}

// noRecords is an empty record set. It must not be nil, which kmsg
// encodes as a null, which librdkafka refuses ("protocol parse failure").
var noRecords = []byte{}

// fetchPart is one partition of a fetch.
type fetchPart struct {
	l    *storage.Log // nil when out.ErrorCode says why
	from int64
	max  int
	seen int64 // the head (LSO if committed) at the last read: waiting is for more than this
	out  *kmsg.FetchResponseTopicPartition
	// committed: isolation_level 1, read_committed.
	committed bool
}

// resolveFetch lays out the response and finds each partition's log. It
// counts the fetch in fetchesCapped when FetchMaxBytes cuts its max_bytes
// or a partition's.
func (c *conn) resolveFetch(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) []fetchPart {
	var parts []fetchPart
	capped := int(req.MaxBytes) > c.s.o.FetchMaxBytes
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt, t := &req.Topics[i], &resp.Topics[i]
		t.Default()
		t.Topic = rt.Topic
		t.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		var topic *passbook.Topic
		terr := errTopicDenied
		if c.allowed(acl.Read, acl.Topic, rt.Topic) {
			topic, terr = c.s.db.Topic(rt.Topic)
		}
		for j := range rt.Partitions {
			rp, p := &rt.Partitions[j], &t.Partitions[j]
			p.Default()
			p.Partition = rp.Partition
			p.RecordBatches = noRecords
			fp := fetchPart{from: rp.FetchOffset, max: min(int(rp.PartitionMaxBytes), c.s.o.FetchMaxBytes), out: p, committed: req.IsolationLevel == 1}
			capped = capped || int(rp.PartitionMaxBytes) > c.s.o.FetchMaxBytes
			if terr != nil {
				p.ErrorCode = errorCode(terr)
			} else if fp.l, terr = topic.Partition(rp.Partition); terr != nil {
				p.ErrorCode = errorCode(terr)
				terr = nil
			}
			parts = append(parts, fp)
		}
	}
	if capped {
		c.s.fetchesCapped.Add(1)
	}
	return parts
}

// fetch fills in the response, long-polling until min_bytes are ready,
// max_wait_ms has passed, or ctx is done.
func (c *conn) fetch(ctx context.Context, req *kmsg.FetchRequest, parts []fetchPart) {
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		total, failed := c.readParts(ctx, parts, min(int(req.MaxBytes), c.s.o.FetchMaxBytes))
		if total >= int(req.MinBytes) || failed || !time.Now().Before(deadline) || ctx.Err() != nil {
			return
		}
		if !waitAny(ctx, parts, deadline) {
			return
		}
	}
}

// readParts finds each partition's batches and points the response at
// them: a partition's records of sendfileMin bytes or more stay in their
// segment file, pinned, to be sent with sendfile (c.fetchFiles) when the
// connection and the file system allow it; the rest are read into the
// connection's fetch buffer, with one allocation for the lot. It returns
// the bytes found and whether any partition has an error.
func (c *conn) readParts(ctx context.Context, parts []fetchPart, maxBytes int) (total int, failed bool) {
	c.releaseResponse() // of an earlier pass of the same long poll
	c.releaseFiles()
	path := c.s.fetchIO.getPath()
	type toRead struct {
		i     int
		chunk storage.Chunk
	}
	var reads []toRead
	inMemory := 0
	for i := range parts {
		fp := &parts[i]
		p := fp.out
		p.RecordBatches = noRecords
		if fp.l == nil {
			failed = true
			continue
		}
		p.ErrorCode = 0
		p.AbortedTransactions = nil
		head := fp.l.Head()
		fp.seen = head
		if fp.committed {
			fp.seen = fp.l.LastStableOffset() // read after the head: never past it
		}
		if fp.from < fp.l.StartOffset() || fp.from > head {
			p.ErrorCode = kerr.OffsetOutOfRange.Code
			failed = true
			c.setWatermarks(fp)
			continue
		}
		if fp.from >= fp.seen || (total > 0 && total >= maxBytes) {
			c.setWatermarks(fp)
			continue
		}
		limit := fp.max
		if total > 0 {
			limit = min(limit, maxBytes-total)
		}
		read := fp.l.ReadBatches
		switch {
		case fp.committed:
			read = fp.l.ReadCommittedBatches
		case path == fetchCopy:
			read = fp.l.ReadBatchesVerified // every batch read and CRC-checked, as before
		}
		chunk, err := read(fp.from, limit)
		if err != nil {
			p.ErrorCode = errorCode(err)
			failed = true
			c.setWatermarks(fp)
			continue
		}
		fits := chunk.Size > 0 && (total == 0 || total+int(chunk.Size) <= maxBytes)
		if fits && !c.chargeResponse(ctx, total, int64(chunk.Size)) {
			// No room under queued.max.response.bytes: send what we have.
			chunk.Release()
			c.setWatermarks(fp)
			maxBytes = total
			continue
		}
		if !fits {
			chunk.Release()
			c.setWatermarks(fp)
			continue
		}
		total += int(chunk.Size)
		if fp.committed {
			p.AbortedTransactions = abortedOf(fp.l, fp.from, chunk.Next)
		}
		if f := chunk.OSFile(); f != nil && c.raw != nil && path == fetchAuto && chunk.Size >= sendfileMin {
			c.fetchFiles = append(c.fetchFiles, fileRecords{out: p, file: f, pos: chunk.Pos, n: chunk.Size, chunk: chunk})
		} else {
			reads = append(reads, toRead{i: i, chunk: chunk})
			inMemory += int(chunk.Size)
		}
		c.setWatermarks(fp)
	}
	buf := c.fetchBuf[:0]
	if path != fetchCopy {
		buf = slices.Grow(buf, inMemory) // once, and no zeroing
	}
	for _, r := range reads {
		p, size := parts[r.i].out, int(r.chunk.Size)
		n := len(buf)
		buf = slices.Grow(buf, size)[:n+size] // fetchCopy: grown partition by partition, as before
		if _, err := r.chunk.File.ReadAt(buf[n:], r.chunk.Pos); err != nil {
			c.s.log.Error("kafka: fetch read failed", "file", r.chunk.File.Name(), "pos", r.chunk.Pos, "err", err)
			p.ErrorCode = kerr.KafkaStorageError.Code
			p.AbortedTransactions = nil
			failed = true
			buf = buf[:n]
		} else {
			p.RecordBatches = buf[n : n+size : n+size]
		}
		r.chunk.Release()
	}
	if cap(buf) <= 1<<20 {
		c.fetchBuf = buf
	} else {
		c.fetchBuf = nil // do not keep an unusually large fetch's memory
	}
	return total, failed
}

// chargeResponse takes n bytes of queued.max.response.bytes for the
// response being built, which holds total bytes already: waiting for
// room if it holds none (until ctx is done), or only if there is room
// now otherwise. It reports whether it took them.
func (c *conn) chargeResponse(ctx context.Context, total int, n int64) bool {
	if total > 0 {
		if !c.s.responseBytes.tryAcquire(n) {
			return false
		}
	} else if err := c.s.responseBytes.acquire(ctx, n); err != nil {
		return false
	}
	c.respCharged += n
	return true
}

// releaseResponse gives back what the response being built holds of
// queued.max.response.bytes.
func (c *conn) releaseResponse() {
	c.s.responseBytes.release(c.respCharged)
	c.respCharged = 0
}

// setWatermarks reports the partition's extent, read after its records
// so that the high watermark is never below what the response holds.
func (c *conn) setWatermarks(fp *fetchPart) {
	p := fp.out
	p.HighWatermark = fp.l.Head()
	p.LastStableOffset = min(fp.l.LastStableOffset(), p.HighWatermark)
	p.LogStartOffset = fp.l.StartOffset()
}

// abortedOf lists the aborted transactions with records in [from, to)
// for a read_committed response; a partition that never aborted one
// answers none without looking at any index file.
func abortedOf(l *storage.Log, from, to int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	aborted := l.AbortedTxns(from, to)
	if len(aborted) == 0 {
		return nil
	}
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(aborted))
	for i, a := range aborted {
		out[i].Default()
		out[i].ProducerID, out[i].FirstOffset = a.ProducerID, a.FirstOffset
	}
	return out
}

// waitAny waits until a partition's head passes what the last read saw,
// the deadline passes or ctx is done. It reports whether a partition grew
// (or changed, like a topic being deleted). The wait is storage.WaitAny's,
// in this goroutine: nothing of it outlives the call.
func waitAny(ctx context.Context, parts []fetchPart, deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var ws []storage.WaitFor
	for _, fp := range parts {
		if fp.l != nil {
			ws = append(ws, storage.WaitFor{Log: fp.l, Offset: fp.seen, Stable: fp.committed})
		}
	}
	_, err := storage.WaitAny(ctx, ws...)
	return err == nil || ctx.Err() == nil
}
