package web

import (
	"context"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/storage"
)

// Encodings of keys, values and header values in JSON.
const (
	encText   = "text"   // JSON strings as they are (UTF-8)
	encBase64 = "base64" // standard base64, for bytes that are not UTF-8
)

// recordIn is one record of an append request.
type recordIn struct {
	Key       *string           `json:"key"`
	Value     *string           `json:"value"` // null or absent: a tombstone
	Headers   map[string]string `json:"headers"`
	Partition *int32            `json:"partition"` // topic appends only; default: by key
	Timestamp *time.Time        `json:"timestamp"` // default: the time of the append
}

// appendRequest is the JSON body of an append.
type appendRequest struct {
	Records  []recordIn `json:"records"`
	Encoding string     `json:"encoding"` // of keys, values and header values: text (default) or base64
}

// position is where an appended record landed.
type position struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// recordOut is one record as reads and streams return it.
type recordOut struct {
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp time.Time         `json:"timestamp"`
	Encoding  string            `json:"encoding"` // of key, value and header values
	Key       *string           `json:"key"`
	Value     *string           `json:"value"` // null for a tombstone
	Headers   map[string]string `json:"headers,omitempty"`
}

// POST /api/topics/{topic}/records
func (s *Server) appendTopic(w http.ResponseWriter, r *http.Request) error {
	t, err := s.topic(r)
	if err != nil {
		return err
	}
	return s.append(w, r, t, -1)
}

// POST /api/topics/{topic}/partitions/{partition}/records
func (s *Server) appendPartition(w http.ResponseWriter, r *http.Request) error {
	t, p, _, err := s.partition(r)
	if err != nil {
		return err
	}
	return s.append(w, r, t, p)
}

// append appends the request's records to t: all to partition p when
// p ≥ 0, else each to its own partition, else by key.
func (s *Server) append(w http.ResponseWriter, r *http.Request, t *passbook.Topic, p int32) error {
	q := r.URL.Query()
	d := storage.DefaultDurability
	if v := q.Get("durability"); v != "" {
		var err error
		if d, err = storage.ParseDurability(v); err != nil || d == storage.Interval {
			return badRequest("durability %q: want os or fsync", v)
		}
	}
	recs, parts, err := s.appendBody(w, r, t, p)
	if err != nil {
		return err
	}
	for i, rp := range parts {
		if rp < 0 {
			parts[i] = t.PartitionFor(recs[i].Key)
		}
	}
	// One batch per partition, in request order within each.
	began := time.Now()
	out := make([]position, len(recs))
	var order []int32
	groups := map[int32][]int{}
	for i, rp := range parts {
		if _, ok := groups[rp]; !ok {
			order = append(order, rp)
		}
		groups[rp] = append(groups[rp], i)
	}
	var done []position
	for _, rp := range order {
		idx := groups[rp]
		batch := make([]passbook.Record, len(idx))
		for j, i := range idx {
			batch[j] = recs[i]
		}
		first, err := t.AppendTo(rp, batch, d)
		if err != nil {
			ae := toAPIError(err)
			if len(done) > 0 {
				// Appends to other partitions went through: say which.
				ae.Details = map[string]any{"appended": done}
			}
			return ae
		}
		for j, i := range idx {
			out[i] = position{Partition: rp, Offset: first + int64(j)}
			done = append(done, out[i])
		}
	}
	s.m.appendSeconds.Observe(time.Since(began).Seconds())
	var n int
	for _, rec := range recs {
		n += recordBytes(rec)
	}
	s.m.appendRecords.WithLabelValues(t.Name()).Add(float64(len(recs)))
	s.m.appendBytes.WithLabelValues(t.Name()).Add(float64(n))
	return writeJSON(w, http.StatusOK, map[string]any{"offsets": out})
}

// appendBody decodes an append body, JSON or raw, into records and the
// partition each asks for (−1: by key).
func (s *Server) appendBody(w http.ResponseWriter, r *http.Request, t *passbook.Topic, p int32) ([]passbook.Record, []int32, error) {
	if err := requireContentType(r, "application/json", "application/octet-stream", "text/plain"); err != nil {
		return nil, nil, err
	}
	if mediaType(r) != "application/json" {
		rec, rp, err := s.rawRecord(w, r, t, p)
		if err != nil {
			return nil, nil, err
		}
		return []passbook.Record{rec}, []int32{rp}, nil
	}
	if q := r.URL.Query(); q.Has("key") || q.Has("header") || q.Has("partition") || q.Has("timestamp") {
		return nil, nil, badRequest("key, header, partition and timestamp query parameters are for raw appends; a JSON append sets them per record")
	}
	var req appendRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return nil, nil, err
	}
	switch {
	case len(req.Records) == 0:
		return nil, nil, badRequest("no records: the body must be {\"records\": [{\"key\": …, \"value\": …}, …]}")
	case len(req.Records) > s.o.MaxAppendRecords:
		return nil, nil, errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "%d records in one request; at most %d", len(req.Records), s.o.MaxAppendRecords)
	}
	dec, err := decoder(req.Encoding)
	if err != nil {
		return nil, nil, err
	}
	recs := make([]passbook.Record, len(req.Records))
	parts := make([]int32, len(req.Records))
	for i, in := range req.Records {
		rec := &recs[i]
		if rec.Key, err = dec(in.Key); err != nil {
			return nil, nil, badRequest("record %d: key: %s", i, err)
		}
		if rec.Value, err = dec(in.Value); err != nil {
			return nil, nil, badRequest("record %d: value: %s", i, err)
		}
		for _, k := range slices.Sorted(maps.Keys(in.Headers)) {
			v := in.Headers[k]
			b, err := dec(&v)
			if err != nil {
				return nil, nil, badRequest("record %d: header %q: %s", i, k, err)
			}
			rec.Headers = append(rec.Headers, passbook.Header{Key: k, Value: b})
		}
		if in.Timestamp != nil {
			rec.Timestamp = *in.Timestamp
		}
		parts[i] = p
		if in.Partition != nil {
			if p >= 0 && *in.Partition != p {
				return nil, nil, badRequest("record %d asks for partition %d on the endpoint of partition %d", i, *in.Partition, p)
			}
			if *in.Partition < 0 || int(*in.Partition) >= t.Partitions() {
				return nil, nil, errorf(http.StatusNotFound, CodeUnknownPartition, "record %d: topic %s has no partition %d (it has %d)", i, t.Name(), *in.Partition, t.Partitions())
			}
			parts[i] = *in.Partition
		}
	}
	return recs, parts, nil
}

// rawRecord reads a raw append: the body is the value; key, partition,
// timestamp and headers come from the query.
func (s *Server) rawRecord(w http.ResponseWriter, r *http.Request, t *passbook.Topic, p int32) (passbook.Record, int32, error) {
	q := r.URL.Query()
	var rec passbook.Record
	if q.Has("key") {
		rec.Key = []byte(q.Get("key"))
	}
	for _, h := range q["header"] {
		k, v, ok := strings.Cut(h, ":")
		if !ok || k == "" {
			return rec, 0, badRequest("header %q: want name:value", h)
		}
		rec.Headers = append(rec.Headers, passbook.Header{Key: k, Value: []byte(v)})
	}
	if v := q.Get("timestamp"); v != "" {
		ts, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return rec, 0, badRequest("timestamp %q: want RFC 3339", v)
		}
		rec.Timestamp = ts
	}
	if v := q.Get("partition"); v != "" {
		qp, err := parsePartition(v)
		if err != nil {
			return rec, 0, err
		}
		if p >= 0 && qp != p {
			return rec, 0, badRequest("partition=%d on the endpoint of partition %d", qp, p)
		}
		if int(qp) >= t.Partitions() {
			return rec, 0, errorf(http.StatusNotFound, CodeUnknownPartition, "topic %s has no partition %d (it has %d)", t.Name(), qp, t.Partitions())
		}
		p = qp
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes))
	if err != nil {
		return rec, 0, err
	}
	rec.Value = body
	return rec, p, nil
}

func mediaType(r *http.Request) string {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.ToLower(strings.TrimSpace(ct))
}

// decoder returns the function that turns a JSON string of the given
// encoding into bytes (nil for null).
func decoder(enc string) (func(*string) ([]byte, error), error) {
	switch enc {
	case "", encText:
		return func(s *string) ([]byte, error) {
			if s == nil {
				return nil, nil
			}
			return []byte(*s), nil
		}, nil
	case encBase64:
		return func(s *string) ([]byte, error) {
			if s == nil {
				return nil, nil
			}
			return base64.StdEncoding.DecodeString(*s)
		}, nil
	}
	return nil, badRequest("encoding %q: want text or base64", enc)
}

func recordBytes(rec passbook.Record) int {
	n := len(rec.Key) + len(rec.Value)
	for _, h := range rec.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// toRecordOut converts a record, copying its bytes. With enc text, a
// record whose bytes are not all UTF-8 is written in base64 and says so.
func toRecordOut(p int32, rec passbook.Record, enc string) recordOut {
	if enc == encText && !(validUTF8(rec.Key) && validUTF8(rec.Value) && headersUTF8(rec.Headers)) {
		enc = encBase64
	}
	str := func(b []byte) *string {
		if b == nil {
			return nil
		}
		s := string(b)
		if enc == encBase64 {
			s = base64.StdEncoding.EncodeToString(b)
		}
		return &s
	}
	out := recordOut{Partition: p, Offset: rec.Offset, Timestamp: rec.Timestamp.UTC(), Encoding: enc, Key: str(rec.Key), Value: str(rec.Value)}
	if len(rec.Headers) > 0 {
		out.Headers = make(map[string]string, len(rec.Headers))
		for _, h := range rec.Headers {
			v := ""
			if s := str(h.Value); s != nil {
				v = *s
			}
			out.Headers[h.Key] = v
		}
	}
	return out
}

func validUTF8(b []byte) bool { return b == nil || utf8.Valid(b) }

func headersUTF8(hs []passbook.Header) bool {
	for _, h := range hs {
		if !utf8.ValidString(h.Key) || !utf8.Valid(h.Value) {
			return false
		}
	}
	return true
}

// GET /api/topics/{topic}/partitions/{partition}/records
func (s *Server) readRecords(w http.ResponseWriter, r *http.Request) error {
	t, p, l, err := s.partition(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	from, err := parseOffset(q.Get("offset"), l)
	if err != nil {
		return err
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			return badRequest("limit %q: want a positive number (at most %d)", v, s.o.MaxReadRecords)
		}
	}
	limit = min(limit, s.o.MaxReadRecords)
	enc, err := parseEncoding(q.Get("encoding"))
	if err != nil {
		return err
	}
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		if wait, err = time.ParseDuration(v); err != nil || wait < 0 {
			return badRequest("wait %q: want a duration such as 5s (at most %v)", v, s.o.MaxWait)
		}
		wait = min(wait, s.o.MaxWait)
	}
	if start, head := l.StartOffset(), l.Head(); from < start || from > head {
		return &storage.OutOfRangeError{Offset: from, Start: start, Head: head}
	}
	if wait > 0 && from >= l.Head() {
		release, err := s.limits.acquire(r, false)
		if err != nil {
			return err
		}
		defer release()
		// Nothing more is read, and the answer comes after the wait.
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Time{})
		rc.SetWriteDeadline(time.Now().Add(wait + s.o.WriteTimeout))
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		stop := context.AfterFunc(s.done, cancel)
		err = l.Wait(ctx, from)
		stop()
		cancel()
		if err != nil && ctx.Err() == nil {
			return err // the log closed
		}
	}
	recs := []recordOut{}
	rd := l.NewReader(from)
	defer rd.Close()
	size := 0
	for len(recs) < limit && (size < s.o.MaxReadBytes || len(recs) == 0) {
		rec, ok, err := rd.TryNext()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		size += recordBytes(rec)
		recs = append(recs, toRecordOut(p, rec, enc))
	}
	s.m.readRecords.WithLabelValues(t.Name()).Add(float64(len(recs)))
	s.m.readBytes.WithLabelValues(t.Name()).Add(float64(size))
	return writeJSON(w, http.StatusOK, readResponse{
		Topic: t.Name(), Partition: p, StartOffset: l.StartOffset(), Head: l.Head(), NextOffset: rd.Offset(), Records: recs,
	})
}

// readResponse is the answer to a read.
type readResponse struct {
	Topic       string      `json:"topic"`
	Partition   int32       `json:"partition"`
	StartOffset int64       `json:"start_offset"`
	Head        int64       `json:"head"`
	NextOffset  int64       `json:"next_offset"` // the offset to read next
	Records     []recordOut `json:"records"`
}

// parseOffset parses an offset parameter: a number, earliest or latest
// (the default is earliest).
func parseOffset(v string, l *storage.Log) (int64, error) {
	switch v {
	case "", "earliest":
		return l.StartOffset(), nil
	case "latest":
		return l.Head(), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("offset %q: want an offset (0, 1, 2, …), earliest or latest", v)
	}
	return n, nil
}

func parseEncoding(v string) (string, error) {
	switch v {
	case "", encText:
		return encText, nil
	case encBase64:
		return encBase64, nil
	}
	return "", badRequest("encoding %q: want text or base64", v)
}
