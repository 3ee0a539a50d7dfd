package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/storage"
	"github.com/passbook-log/passbook/vfs"
	"github.com/spf13/cobra"
)

func newDumpCmd(e *env) *cobra.Command {
	var (
		partition int32
		segment   int64
		from      int64
		records   bool
		maxBytes  int
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "dump TOPIC | FILE.log",
		Short: "Print the batches (and records) of a partition's segments, for forensics",
		Long: `Print every batch of a partition's segment files as stored: its byte
position, offsets, record count, size, codec, whether its CRC-32C holds, its
timestamps and producer fields; with --records, every record too. Damaged
bytes are printed as DAMAGE with their position and what is wrong, and the
dump goes on at the next valid batch.

--json prints one JSON object per line instead, each with a "type" and
snake_case keys: segment (file, base_offset, bytes); batch (pos, base_offset,
last_offset, count, size, codec, crc_ok, first_timestamp, max_timestamp,
producer_id, producer_epoch, base_sequence, transactional, control);
record, with --records (offset, timestamp, key, value, headers: strings,
null for none, cut at --max-bytes with key_bytes and value_bytes the
whole sizes); control, with --records, for a transaction marker (offset,
timestamp, marker: commit or abort, coordinator_epoch); damage (pos, size,
detail); and a closing summary (batches, records, damaged_bytes) per
segment. A control batch (a Kafka transaction marker) is not damage: it
prints as a batch marked control, and with --records as marker=commit or
marker=abort.

Give a topic (its partition with --partition), or the path of one segment
file — such as one repair moved aside (name.log.corrupt-<time>). dump only
reads: it works on a data directory a server has open, too.`,
		Example: `  passbook dump --data ./data orders --partition 2 --from 1500 --records
  passbook dump ./data/topics/orders/0/00000000000000000000.log.corrupt-20260102T030405Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d := dumper{w: e.stdout, from: from, records: records, maxBytes: maxBytes, json: asJSON}
			if fi, err := os.Stat(args[0]); err == nil && !fi.IsDir() {
				base, err := fileBase(args[0])
				if err != nil {
					return usageError{err}
				}
				return d.file(args[0], base)
			}
			if err := passbook.ValidTopicName(args[0]); err != nil {
				return usageError{fmt.Errorf("%w (or no such file)", err)}
			}
			if _, err := os.Stat(layout.TopicsDir(e.data)); errors.Is(err, fs.ErrNotExist) {
				return noDataDirHint(fmt.Errorf("%w at %s", passbook.ErrNoDataDir, e.data))
			}
			dir := layout.PartitionDir(e.data, args[0], int(partition))
			if _, err := os.Stat(layout.TopicConfig(e.data, args[0])); err != nil {
				return fmt.Errorf("%w: %s in %s", passbook.ErrUnknownTopic, args[0], e.data)
			}
			names, err := os.ReadDir(dir)
			if err != nil {
				return fmt.Errorf("topic %s has no partition %d: %w", args[0], partition, err)
			}
			var bases []int64
			for _, n := range names {
				if b, ok := storage.SegmentBase(n.Name()); ok && strings.HasSuffix(n.Name(), ".log") {
					bases = append(bases, b)
				}
			}
			slices.Sort(bases)
			if cmd.Flags().Changed("segment") {
				if !slices.Contains(bases, segment) {
					return usageError{fmt.Errorf("partition %d of %s has no segment with base offset %d (it has %v)", partition, args[0], segment, bases)}
				}
				bases = []int64{segment}
			}
			for i, b := range bases {
				if i+1 < len(bases) && bases[i+1] <= from {
					continue // wholly before --from
				}
				if err := d.file(filepath.Join(dir, storage.SegmentFile(b)), b); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int32VarP(&partition, "partition", "p", 0, "the partition")
	f.Int64Var(&segment, "segment", 0, "only the segment with this base offset")
	f.Int64Var(&from, "from", 0, "start at the batch holding this offset")
	f.BoolVar(&records, "records", false, "print every record too")
	f.IntVar(&maxBytes, "max-bytes", 64, "print at most this many bytes of each key, value and header (0: all)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per line: segments, batches, records, damage")
	return cmd
}

// fileBase takes the base offset from a segment file's name, also when
// repair moved it aside (name.log.corrupt-<time>).
func fileBase(path string) (int64, error) {
	name := filepath.Base(path)
	if i := strings.Index(name, ".log"); i >= 0 {
		if b, ok := storage.SegmentBase(name[:i+4]); ok {
			return b, nil
		}
	}
	return 0, fmt.Errorf("%s is not a segment file (<20-digit base offset>.log)", path)
}

type dumper struct {
	w        io.Writer
	from     int64
	records  bool
	maxBytes int
	json     bool
	cur      batch.Cursor
}

func (d *dumper) file(path string, base int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if d.json {
		d.line(map[string]any{"type": "segment", "file": path, "base_offset": base, "bytes": fi.Size()})
	} else {
		fmt.Fprintf(d.w, "segment %s: base offset %s, %s bytes\n", path, thousands.Int(base), thousands.Int(fi.Size()))
	}
	var batches, recs, damaged int64
	for sb, err := range storage.ScanSegment(vfs.OS(), path, base) {
		if err != nil {
			return err
		}
		h := sb.Header
		if sb.Damaged() && d.json {
			damaged += sb.Size
			d.line(map[string]any{"type": "damage", "pos": sb.Pos, "size": sb.Size, "detail": sb.Err.Error()})
			continue
		}
		if sb.Damaged() {
			damaged += sb.Size
			fmt.Fprintf(d.w, "DAMAGE pos=%d size=%d: %v", sb.Pos, sb.Size, sb.Err)
			if sb.HeaderOK {
				fmt.Fprintf(d.w, " (its header: base=%d count=%d crc=%s)", h.BaseOffset, h.RecordCount, crcWord(sb.CRCOK))
			}
			fmt.Fprintln(d.w)
			continue
		}
		if h.NextOffset() <= d.from {
			continue
		}
		batches++
		recs += int64(h.RecordCount)
		if d.json {
			d.line(map[string]any{"type": "batch", "pos": sb.Pos, "base_offset": h.BaseOffset, "last_offset": h.LastOffset(),
				"count": h.RecordCount, "size": sb.Size, "codec": h.Codec().String(), "crc_ok": true,
				"first_timestamp": stampJSON(h.BaseTimestamp), "max_timestamp": stampJSON(h.MaxTimestamp),
				"producer_id": h.ProducerID, "producer_epoch": h.ProducerEpoch, "base_sequence": h.BaseSequence,
				"transactional": h.Attributes&batch.AttrTransactional != 0, "control": h.IsControl()})
			if d.records {
				d.printRecords(sb.Batch)
			}
			continue
		}
		fmt.Fprintf(d.w, "batch pos=%d offsets=%d-%d count=%d size=%d codec=%s crc=ok time=%s..%s producer=%d epoch=%d seq=%d%s\n",
			sb.Pos, h.BaseOffset, h.LastOffset(), h.RecordCount, sb.Size, h.Codec(), stamp(h.BaseTimestamp), stamp(h.MaxTimestamp),
			h.ProducerID, h.ProducerEpoch, h.BaseSequence, attrs(h))
		if d.records {
			d.printRecords(sb.Batch)
		}
	}
	if d.json {
		d.line(map[string]any{"type": "summary", "file": path, "batches": batches, "records": recs, "damaged_bytes": damaged})
		return nil
	}
	fmt.Fprintf(d.w, "%s, %s", pluralInt(batches, "batch"), pluralInt(recs, "record"))
	if damaged > 0 {
		fmt.Fprintf(d.w, ", %s damaged", pluralInt(damaged, "byte"))
	}
	fmt.Fprintln(d.w)
	return nil
}

func (d *dumper) printRecords(b []byte) {
	if err := d.cur.Reset(b); err != nil {
		fmt.Fprintf(d.w, "  records: %v\n", err)
		return
	}
	for {
		rec, ok := d.cur.Next()
		if !ok {
			break
		}
		if rec.Offset < d.from {
			continue
		}
		if d.cur.Header().IsControl() {
			d.printControl(rec)
			continue
		}
		if d.json {
			hs := make([]map[string]any, 0, len(rec.Headers))
			for _, hd := range rec.Headers {
				hs = append(hs, map[string]any{"key": hd.Key, "value": d.cut(hd.Value)})
			}
			d.line(map[string]any{"type": "record", "offset": rec.Offset, "timestamp": stampJSON(rec.Timestamp.UnixMilli()),
				"key": d.cut(rec.Key), "key_bytes": len(rec.Key), "value": d.cut(rec.Value), "value_bytes": len(rec.Value), "headers": hs})
			continue
		}
		fmt.Fprintf(d.w, "  offset=%d time=%s key=%s value=%s", rec.Offset, stamp(rec.Timestamp.UnixMilli()), d.quote(rec.Key), d.quote(rec.Value))
		for _, hd := range rec.Headers {
			fmt.Fprintf(d.w, " header:%s=%s", strconv.Quote(hd.Key), d.quote(hd.Value))
		}
		fmt.Fprintln(d.w)
	}
	if err := d.cur.Err(); err != nil {
		fmt.Fprintf(d.w, "  records: %v\n", err)
	}
}

// printControl prints a transaction marker (a control record: Kafka's
// key version and type, value version and coordinator epoch), which is
// not data and not damage.
func (d *dumper) printControl(rec batch.Record) {
	cr, err := storage.ParseControlRecord(rec.Key, rec.Value)
	if d.json {
		m := map[string]any{"type": "control", "offset": rec.Offset, "timestamp": stampJSON(rec.Timestamp.UnixMilli())}
		if err != nil {
			m["error"] = err.Error()
		} else {
			m["marker"], m["coordinator_epoch"] = cr.Type.String(), cr.CoordinatorEpoch
		}
		d.line(m)
		return
	}
	if err != nil {
		fmt.Fprintf(d.w, "  offset=%d time=%s control record: %v\n", rec.Offset, stamp(rec.Timestamp.UnixMilli()), err)
		return
	}
	fmt.Fprintf(d.w, "  offset=%d time=%s marker=%s coordinator-epoch=%d\n", rec.Offset, stamp(rec.Timestamp.UnixMilli()), cr.Type, cr.CoordinatorEpoch)
}

// line writes v as one line of JSON.
func (d *dumper) line(v any) {
	b, _ := json.Marshal(v)
	d.w.Write(append(b, '\n'))
}

// cut is b as a JSON string cut at maxBytes, or nil (null) for nil.
func (d *dumper) cut(b []byte) any {
	if b == nil {
		return nil
	}
	if d.maxBytes > 0 && len(b) > d.maxBytes {
		b = b[:d.maxBytes]
	}
	return string(b)
}

// stampJSON is a timestamp in milliseconds as RFC 3339, or nil for none.
func stampJSON(ms int64) any {
	if ms < 0 {
		return nil
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// quote prints bytes as a Go string, null as null, cut at maxBytes.
func (d *dumper) quote(b []byte) string {
	if b == nil {
		return "null"
	}
	if d.maxBytes > 0 && len(b) > d.maxBytes {
		return fmt.Sprintf("%s…(%d bytes)", strconv.Quote(string(b[:d.maxBytes])), len(b))
	}
	return strconv.Quote(string(b))
}

func stamp(ms int64) string {
	if ms < 0 {
		return "none"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func crcWord(ok bool) string {
	if ok {
		return "ok"
	}
	return "bad"
}

func attrs(h batch.Header) string {
	var s []string
	if h.Attributes&batch.AttrTransactional != 0 {
		s = append(s, "transactional")
	}
	if h.IsControl() {
		s = append(s, "control")
	}
	if h.Attributes&batch.AttrLogAppendTime != 0 {
		s = append(s, "log-append-time")
	}
	if len(s) == 0 {
		return ""
	}
	return " " + strings.Join(s, ",")
}
