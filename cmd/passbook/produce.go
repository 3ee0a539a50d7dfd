package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/storage"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Batching defaults: librdkafka's (kcat's) batch.num.messages, batch.size
// and linger.ms; linger.ms is also the Java producer's default since
// Kafka 4.0.
const (
	defaultBatchRecords = 10_000
	defaultBatchBytes   = 1_000_000
	defaultLinger       = 5 * time.Millisecond
	maxBatchRecords     = 1_000_000 // librdkafka's upper bound for batch.num.messages
	maxBatchBytes       = 16 << 20  // storage's default largest stored batch
)

func newProduceCmd(e *env) *cobra.Command {
	var (
		file, keySep, durability string
		printOffsets             bool
		maxLine                  int
		lim                      limits
		b                        *brokerFlags
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Append one record per input line",
		Long: `Append one record per line of standard input (or --file). With --key-sep,
the text before the first separator is the record's key, which picks the
partition the way Kafka's default partitioner does.

Lines: a line ends at \n, and a \r just before it is dropped too, so a
file with CRLF line endings gives the same records as one with LF. A last
line without a newline is a record, and a \r ending it is dropped as
well; any other \r is data. An empty line is a record with an empty value.

Records are appended in batches, as a Kafka producer sends them: a batch
is appended when one partition's share holds --batch-records records or
--batch-bytes bytes of keys and values (librdkafka's batch.num.messages
and batch.size: 10,000 and 1,000,000), or --linger after its first line
was read (linger.ms: 5ms).
A pipe or a file fills whole batches; a person typing has each line
acknowledged within the linger. With --durability fsync, there is one
fsync per partition per batch.

With --print-offsets, each record's offset is printed on its own line, in
input order, once the record is acknowledged in the durability mode in use
(PARTITION:OFFSET when the topic has more than one partition).

A line that cannot be a record — longer than --max-line, over the topic's
max message bytes, or without a key on a compacted topic — stops the run
with exit status 2 (bad input): every line before it is appended and
acknowledged, nothing from it on is written, and the error says how many
records were written, their offsets and the line to resume from (with
tail -n +LINE). Nothing refused is ever written. On Ctrl-C or SIGTERM the
lines already read are appended and the same summary is printed. Other
failures (the disk, the data directory) exit 1.`,
		Example: `  seq 1 100000 | passbook produce orders
  passbook produce users --key-sep : --file users.txt --durability fsync
  tail -f app.log | passbook produce logs --linger 100ms`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
			d := storage.DefaultDurability
			if durability != "" {
				var err error
				if d, err = storage.ParseDurability(durability); err != nil {
					return usageError{err}
				}
			}
			if err := lim.check(maxLine); err != nil {
				return usageError{err}
			}
			in, total := e.stdin, int64(0)
			if file != "" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				if fi, err := f.Stat(); err == nil {
					total = fi.Size()
				}
				in = f
			}
			var t sink
			if ok, err := b.remote(cmd); err != nil {
				return err
			} else if ok {
				if durability != "" {
					return usagef("--durability applies on a data directory: over Kafka, a record is acknowledged by every in-sync replica (acks=all) as the brokers keep it")
				}
				b.stdinIsData = file == ""
				ks, err := dialKafkaSink(cmd.Context(), b, args[0])
				if err != nil {
					return err
				}
				defer ks.Close()
				t = ks
			} else {
				db, lt, err := e.topic(args[0])
				if err != nil {
					return err
				}
				defer closeDB(db, &rerr)
				t = topicSink{lt, d}
			}
			p, err := newProducer(t, lim)
			if err != nil {
				return err
			}
			p.keySep, p.maxLine = []byte(keySep), maxLine
			if printOffsets {
				p.out = bufio.NewWriter(e.stdout)
			}
			p.resume = resumeCommand(cmd, file)
			var printed io.Writer // stdout carries data only with --print-offsets
			if printOffsets {
				printed = e.stdout
			}
			bar := newProgress(printed, e.stderr, "produce", total, unitBytes)
			began := time.Now()
			err = p.run(cmd.Context(), in, bar)
			bar.finish(err)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					// main does not print an error for a command stopped
					// by a signal: the summary is what the user needs.
					fmt.Fprintln(e.stderr, err)
				}
				return err
			}
			el := time.Since(began)
			fmt.Fprintf(e.stderr, "produced %s records to %s in %s batches in %s (%s records/s)\n",
				thousands.Int(p.count), t.Name(), thousands.Int(p.batches), el.Round(time.Millisecond),
				thousands.Float(float64(p.count)/el.Seconds()))
			return nil
		},
	}
	b = addBrokerFlags(cmd, e)
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "read records from this file instead of standard input")
	f.StringVar(&keySep, "key-sep", "", "split each line into key and value at the first occurrence of this separator")
	f.BoolVar(&printOffsets, "print-offsets", false, "print each record's offset once it is acknowledged")
	f.StringVar(&durability, "durability", "", "override the topic's durability: os, fsync or interval")
	f.IntVar(&maxLine, "max-line", 1<<20, "longest line accepted, in bytes (not counting its line ending)")
	f.IntVar(&lim.records, "batch-records", defaultBatchRecords, "most records in one partition's batch (Kafka's batch.num.messages)")
	f.IntVar(&lim.bytes, "batch-bytes", defaultBatchBytes, "most bytes of keys and values in one partition's batch (Kafka's batch.size)")
	f.DurationVar(&lim.linger, "linger", defaultLinger, "longest a line waits for its batch to fill before it is appended (Kafka's linger.ms); 0 appends what has been read at once")
	return cmd
}

// limits are when a batch is appended: full (records or bytes), or its
// first line has waited linger.
type limits struct {
	records, bytes int
	linger         time.Duration
}

func (l limits) check(maxLine int) error {
	switch {
	case maxLine < 1:
		return fmt.Errorf("--max-line %d: want at least 1 byte", maxLine)
	case l.records < 1 || l.records > maxBatchRecords:
		return fmt.Errorf("--batch-records %s: want 1 to %s", thousands.Int(int64(l.records)), thousands.Int(maxBatchRecords))
	case l.bytes < 1 || l.bytes > maxBatchBytes:
		return fmt.Errorf("--batch-bytes %s: want 1 to %s", thousands.Int(int64(l.bytes)), thousands.Int(maxBatchBytes))
	case l.linger < 0:
		return fmt.Errorf("--linger %s: want 0 or more", l.linger)
	}
	return nil
}

// producer appends lines as records in batches. A goroutine reads lines
// (read) and hands them over in chunks; run fills the batch and appends
// it. Only run touches the batch and the counts.
type producer struct {
	t       sink
	lim     limits
	keySep  []byte
	maxLine int
	keyed   bool          // a compacted topic: every record needs a key
	maxRec  []int         // each partition's record limit
	out     *bufio.Writer // --print-offsets, or nil
	resume  string        // the command line to resume with; LINE is the line

	// The batch being filled.
	parts     [][]passbook.Record // by partition
	partBytes []int               // keys and values, by partition
	order     []int32             // each record's partition, in input order
	inBytes   int                 // input bytes the batch covers
	timer     *time.Timer         // the linger of the batch's first record

	// What is acknowledged.
	count   int64
	batches int64
	acked   []span // by partition
	next    int64  // the first line not acknowledged (1-based)
	after   int64  // records acknowledged from lines after next (a partition's batch failed)
	first   []int64
	ok      []bool
	idx     []int64
}

// span is the offsets acknowledged in one partition; first < 0: none.
type span struct{ first, last int64 }

// sink is where produce appends: a topic of the data directory
// (topicSink) or a topic over the Kafka protocol (kafkaSink).
type sink interface {
	Name() string
	Partitions() int
	Compacted() bool
	// MaxRecordBytes is partition part's largest record (key and value).
	MaxRecordBytes(part int32) (int, error)
	PartitionFor(key []byte) int32
	// AppendAll appends each partition's records of parts (none where
	// empty) and sets ok[p] and first[p], the offset of the first, for
	// each partition acknowledged; it returns the first error, the
	// partitions it failed in left not ok.
	AppendAll(parts [][]passbook.Record, first []int64, ok []bool) error
}

// topicSink is a topic of the data directory, appended to with a
// durability: one append per partition, none after one fails.
type topicSink struct {
	*passbook.Topic
	d storage.Durability
}

func (t topicSink) Compacted() bool { return t.Config().Compacted() }

func (t topicSink) MaxRecordBytes(part int32) (int, error) {
	l, err := t.Partition(part)
	if err != nil {
		return 0, err
	}
	return l.MaxRecordBytes(), nil
}

func (t topicSink) AppendAll(parts [][]passbook.Record, first []int64, ok []bool) error {
	for part, recs := range parts {
		if len(recs) == 0 {
			continue
		}
		f, err := t.AppendTo(int32(part), recs, t.d)
		if err != nil {
			return err
		}
		ok[part], first[part] = true, f
	}
	return nil
}

func newProducer(t sink, lim limits) (*producer, error) {
	n := t.Partitions()
	p := &producer{
		t: t, lim: lim, keyed: t.Compacted(), next: 1,
		parts: make([][]passbook.Record, n), partBytes: make([]int, n), maxRec: make([]int, n),
		acked: make([]span, n), first: make([]int64, n), ok: make([]bool, n), idx: make([]int64, n),
	}
	for i := range n {
		m, err := t.MaxRecordBytes(int32(i))
		if err != nil {
			return nil, err
		}
		p.maxRec[i] = m
		p.acked[i] = span{-1, -1}
	}
	return p, nil
}

// chunk is lines read, in order, and why reading stopped after them (nil:
// it goes on; io.EOF: the end of the input).
type chunk struct {
	recs  []passbook.Record
	parts []int32 // each record's partition
	sizes []int32 // each record's line in input bytes, ending included
	err   error
}

// A chunk is handed over at chunkRecords records or chunkBytes bytes of
// input, so that the batch fills in steps and memory stays bounded.
const (
	chunkRecords = 1024
	chunkBytes   = 256 << 10
)

// refusedLine is a line that cannot be a record: the lines before it are
// appended, nothing from it on.
type refusedLine struct {
	line int64
	err  error
}

func (r *refusedLine) Error() string { return fmt.Sprintf("line %d refused: %v", r.line, r.err) }
func (r *refusedLine) Unwrap() error { return r.err }

func (p *producer) run(ctx context.Context, in io.Reader, bar *progress) error {
	chunks := make(chan chunk, 4)
	stop := make(chan struct{})
	defer close(stop)
	go p.read(newLineReader(in, p.maxLine), chunks, stop)
	p.timer = time.NewTimer(time.Hour)
	p.timer.Stop()
	defer p.timer.Stop()
	for {
		var linger <-chan time.Time
		if len(p.order) > 0 {
			linger = p.timer.C
		}
		select {
		case c := <-chunks:
			if done, err := p.take(c, bar); done {
				return err
			}
		case <-linger:
			// Lines already read and waiting go into this batch (up to
			// full): the linger is for input that is slow to come, and
			// must not cut short a batch that input is already there for.
			for batches := p.batches; p.batches == batches; {
				select {
				case c := <-chunks:
					if done, err := p.take(c, bar); done {
						return err
					}
					continue
				default:
				}
				if err := p.flush(bar); err != nil {
					return p.stopped(err)
				}
				break
			}
		case <-ctx.Done():
			if err := p.flush(bar); err != nil {
				return p.stopped(err)
			}
			return p.stopped(fmt.Errorf("interrupted at line %d: %w", p.next, ctx.Err()))
		}
	}
}

// take adds a chunk's records to the batch, and appends the batch if the
// chunk is the last (done is then true, and err why it is the last: nil
// at the end of the input).
func (p *producer) take(c chunk, bar *progress) (done bool, err error) {
	for i := range c.recs {
		if err := p.add(c.recs[i], c.parts[i], int(c.sizes[i]), bar); err != nil {
			return true, p.stopped(err)
		}
	}
	if c.err == nil && p.lim.linger > 0 {
		return false, nil
	}
	if err := p.flush(bar); err != nil {
		return true, p.stopped(err)
	}
	switch {
	case c.err == nil:
		return false, nil
	case c.err == io.EOF:
		return true, nil
	case errors.As(c.err, new(*refusedLine)):
		return true, usageError{p.stopped(c.err)}
	default:
		return true, p.stopped(fmt.Errorf("line %d: read: %w", p.next, c.err))
	}
}

// add puts one record into the batch, appending the batch first if the
// record would take its partition's share over --batch-bytes, and after
// if the share is then --batch-records.
func (p *producer) add(rec passbook.Record, part int32, size int, bar *progress) error {
	n := len(rec.Key) + len(rec.Value)
	if len(p.parts[part]) > 0 && p.partBytes[part]+n > p.lim.bytes {
		if err := p.flush(bar); err != nil {
			return err
		}
	}
	if len(p.order) == 0 && p.lim.linger > 0 {
		p.timer.Reset(p.lim.linger)
	}
	p.parts[part] = append(p.parts[part], rec)
	p.partBytes[part] += n
	p.order = append(p.order, part)
	p.inBytes += size
	if len(p.parts[part]) >= p.lim.records {
		return p.flush(bar)
	}
	return nil
}

// flush appends the batch, one append per partition, and prints the
// offsets of what was acknowledged, in input order. If a partition's
// append fails, the partitions before it are acknowledged and the error
// is returned.
func (p *producer) flush(bar *progress) error {
	if len(p.order) == 0 {
		return nil
	}
	p.timer.Stop()
	for part := range p.parts {
		p.ok[part], p.idx[part] = false, 0
	}
	err := p.t.AppendAll(p.parts, p.first, p.ok)
	for part, recs := range p.parts {
		if !p.ok[part] {
			continue
		}
		first := p.first[part]
		if p.acked[part].first < 0 {
			p.acked[part].first = first
		}
		p.acked[part].last = first + int64(len(recs)) - 1
		p.batches++
	}
	next := int64(-1) // the first line of the batch not acknowledged
	for i, part := range p.order {
		if !p.ok[part] {
			if next < 0 {
				next = p.next + int64(i)
			}
			continue
		}
		if next >= 0 {
			p.after++
		}
		p.count++
		if p.out != nil {
			off := p.first[part] + p.idx[part]
			p.idx[part]++
			if len(p.parts) == 1 {
				fmt.Fprintln(p.out, off)
			} else {
				fmt.Fprintf(p.out, "%d:%d\n", part, off)
			}
		}
	}
	if next < 0 {
		p.next += int64(len(p.order))
		bar.add(p.inBytes)
	} else {
		p.next = next
	}
	for part := range p.parts {
		p.parts[part], p.partBytes[part] = p.parts[part][:0], 0
	}
	p.order, p.inBytes = p.order[:0], 0
	if p.out != nil {
		if ferr := p.out.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("print offsets: %w", ferr)
		}
	}
	return err
}

// stopped is err with what was written and how to go on.
func (p *producer) stopped(err error) error {
	var b strings.Builder
	b.WriteString("\n  written and acknowledged: ")
	if p.count == 0 {
		b.WriteString("nothing")
	} else {
		fmt.Fprintf(&b, "%s record", thousands.Int(p.count))
		if p.count != 1 {
			b.WriteString("s")
		}
		if p.after == 0 {
			if p.next == 2 {
				b.WriteString(", line 1")
			} else {
				fmt.Fprintf(&b, ", lines 1–%d", p.next-1)
			}
		}
		var ranges []string
		for part, s := range p.acked {
			if s.first < 0 {
				continue
			}
			r := fmt.Sprintf("offsets %d–%d", s.first, s.last)
			if s.first == s.last {
				r = fmt.Sprintf("offset %d", s.first)
			}
			if len(p.acked) > 1 {
				r = fmt.Sprintf("partition %d: %s", part, r)
			}
			ranges = append(ranges, r)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(ranges, "; "))
	}
	if p.after > 0 {
		fmt.Fprintf(&b, "\n  not acknowledged: line %d and the lines after it, except %s later lines acknowledged in other partitions (resuming at line %[1]d writes those %[2]s again)",
			p.next, thousands.Int(p.after))
	} else {
		fmt.Fprintf(&b, "\n  not written: line %d and everything after it", p.next)
	}
	resume := strings.ReplaceAll(p.resume, "LINE", fmt.Sprint(p.next))
	var refused *refusedLine
	if errors.As(err, &refused) {
		skip := strings.ReplaceAll(p.resume, "LINE", fmt.Sprint(p.next+1))
		at, or := fmt.Sprintf("resume at line %d:", p.next), fmt.Sprintf("or skip line %d:", p.next)
		fmt.Fprintf(&b, "\n  %s %s\n  %-*s %s", at, resume, len(at), or, skip)
	} else {
		fmt.Fprintf(&b, "\n  resume at line %d: %s", p.next, resume)
	}
	return &produceStopped{err: err, summary: b.String()}
}

// produceStopped is why produce stopped, and what it had written.
type produceStopped struct {
	err     error
	summary string
}

func (e *produceStopped) Error() string { return e.err.Error() + e.summary }
func (e *produceStopped) Unwrap() error { return e.err }

// resumeCommand is the command line that produces the rest of the input
// from line LINE: the same flags, the input through tail.
func resumeCommand(cmd *cobra.Command, file string) string {
	args := []string{"passbook", "produce"}
	args = append(args, cmd.Flags().Args()...)
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch {
		case f.Name == "file":
		case f.Value.Type() == "bool":
			args = append(args, "--"+f.Name)
		default:
			args = append(args, "--"+f.Name, shellQuote(f.Value.String()))
		}
	})
	if file != "" {
		return "tail -n +LINE " + shellQuote(file) + " | " + strings.Join(args, " ")
	}
	return "… | tail -n +LINE | " + strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell if it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// read reads lines into records and sends them in chunks: whenever a
// chunk is full or the next read may block (nothing left buffered), so
// lines typed by a person go on at once. It stops at the end of the
// input, at a read error or at a line that cannot be a record, which it
// sends as the last chunk's err; or when stop is closed.
func (p *producer) read(lr *lineReader, chunks chan<- chunk, stop <-chan struct{}) {
	line := int64(0)
	var (
		c      chunk
		cBytes int
		arena  []byte
	)
	for {
		b, size, err := lr.next()
		if err == nil {
			line++
			var rec passbook.Record
			var part int32
			if rec, part, err = p.record(b, &arena); err != nil {
				err = &refusedLine{line: line, err: err}
			} else {
				c.recs, c.parts, c.sizes = append(c.recs, rec), append(c.parts, part), append(c.sizes, int32(size))
				cBytes += size
			}
		} else if errors.Is(err, errLineTooLong) {
			err = &refusedLine{line: line + 1, err: fmt.Errorf("longer than --max-line %s bytes", thousands.Int(int64(p.maxLine)))}
		}
		if err != nil || len(c.recs) >= chunkRecords || cBytes >= chunkBytes || lr.br.Buffered() == 0 {
			c.err = err
			select {
			case chunks <- c:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
			c, cBytes = chunk{}, 0
		}
	}
}

// record makes a line a record, its key and value copied into arena, or
// says why it cannot be one (as the append would refuse it).
func (p *producer) record(b []byte, arena *[]byte) (passbook.Record, int32, error) {
	if cap(*arena)-len(*arena) < len(b) {
		*arena = make([]byte, 0, max(64<<10, len(b)))
	}
	start := len(*arena)
	*arena = append(*arena, b...)
	b = (*arena)[start:len(*arena):len(*arena)]
	rec := passbook.Record{Value: b}
	if len(p.keySep) > 0 {
		if k, v, ok := bytes.Cut(b, p.keySep); ok {
			rec.Key, rec.Value = k, v
		}
	}
	if p.keyed && rec.Key == nil {
		how := "split each line into key and value with --key-sep"
		if len(p.keySep) > 0 {
			how = fmt.Sprintf("the line has no %q", p.keySep)
		}
		return rec, 0, fmt.Errorf("%w (%s)", storage.ErrNoKey, how)
	}
	part := p.t.PartitionFor(rec.Key)
	if n := len(rec.Key) + len(rec.Value); n > p.maxRec[part] {
		return rec, 0, fmt.Errorf("%w: %s bytes of key and value, over the topic's max message bytes %s",
			storage.ErrRecordTooLarge, thousands.Int(int64(n)), thousands.Int(int64(p.maxRec[part])))
	}
	return rec, part, nil
}

var errLineTooLong = errors.New("line too long")

// lineReader reads lines of at most max bytes, without their endings.
type lineReader struct {
	br   *bufio.Reader
	max  int
	long []byte // a line longer than br's buffer
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 256<<10), max: max}
}

// next returns the next line without its ending (\n, or \r\n) and the
// input bytes it took; a last line without a newline is a line too, and a
// \r at its end is dropped as well. At the end of the input it returns
// io.EOF, for a line over max bytes errLineTooLong, having read at most
// max+1 bytes of it past the reader's buffer. The line is valid until the
// next call.
func (r *lineReader) next() ([]byte, int, error) {
	r.long = r.long[:0]
	for {
		s, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(r.long)+len(s) > r.max+1 { // +1: the \r of a \r\n
				return nil, 0, errLineTooLong
			}
			r.long = append(r.long, s...)
			continue
		}
		if len(r.long) > 0 {
			r.long = append(r.long, s...)
			s = r.long
		}
		if err != nil && err != io.EOF {
			return nil, 0, err
		}
		if len(s) == 0 {
			return nil, 0, io.EOF
		}
		size := len(s)
		s = bytes.TrimSuffix(s, []byte("\n"))
		s = bytes.TrimSuffix(s, []byte("\r"))
		if len(s) > r.max {
			return nil, 0, errLineTooLong
		}
		return s, size, nil
	}
}
