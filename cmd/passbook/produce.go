package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/passbook-log/passbook/storage"
	"github.com/spf13/cobra"
)

func newProduceCmd(e *env) *cobra.Command {
	var (
		file, keySep, durability string
		printOffsets             bool
		maxLine                  int
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Append one record per input line",
		Long: `Append one record per line of standard input (or --file). With --key-sep,
the text before the first separator is the record's key, which picks the
partition the way Kafka's default partitioner does.

With --print-offsets, each record's offset is printed on its own line once
the record is acknowledged in the durability mode in use (PARTITION:OFFSET
when the topic has more than one partition).`,
		Example: `  seq 1 100000 | passbook produce orders
  passbook produce users --key-sep : --file users.txt --durability fsync`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d := storage.DefaultDurability
			if durability != "" {
				var err error
				if d, err = storage.ParseDurability(durability); err != nil {
					return usageError{err}
				}
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
			db, t, err := e.topic(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			p := &producer{t: t, d: d, keySep: []byte(keySep), print: printOffsets, out: bufio.NewWriter(e.stdout)}
			bar := newProgress(e.stdout, e.stderr, "produce", total, unitBytes)
			began := time.Now()
			err = p.run(in, maxLine, bar)
			bar.finish(err)
			if err != nil {
				return err
			}
			el := time.Since(began)
			fmt.Fprintf(e.stderr, "produced %s records to %s in %s (%s records/s)\n",
				thousands.Int(p.count), t.Name(), el.Round(time.Millisecond), thousands.Float(float64(p.count)/el.Seconds()))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "read records from this file instead of standard input")
	f.StringVar(&keySep, "key-sep", "", "split each line into key and value at the first occurrence of this separator")
	f.BoolVar(&printOffsets, "print-offsets", false, "print each record's offset once it is acknowledged")
	f.StringVar(&durability, "durability", "", "override the topic's durability: os, fsync or interval")
	f.IntVar(&maxLine, "max-line", 1<<20, "longest line accepted, in bytes")
	return cmd
}

// producer batches lines while more input is already buffered, so a pipe
// is fast and an interactive session still gets each line acknowledged
// as it is typed.
type producer struct {
	t      *passbook.Topic
	d      storage.Durability
	keySep []byte
	print  bool
	out    *bufio.Writer
	count  int64
	parts  map[int32][]passbook.Record
}

func (p *producer) run(in io.Reader, maxLine int, bar *progress) error {
	br := bufio.NewReaderSize(in, 256<<10)
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	p.parts = map[int32][]passbook.Record{}
	pending, bytesIn := 0, 0
	line := int64(0)
	for sc.Scan() {
		line++
		b := bytes.Clone(sc.Bytes())
		bytesIn += len(b) + 1
		rec := passbook.Record{Value: b}
		if len(p.keySep) > 0 {
			if k, v, ok := bytes.Cut(b, p.keySep); ok {
				rec.Key, rec.Value = k, v
			}
		}
		part := p.t.PartitionFor(rec.Key)
		p.parts[part] = append(p.parts[part], rec)
		pending++
		if pending >= 1000 || br.Buffered() == 0 {
			if err := p.flush(); err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			bar.add(bytesIn)
			pending, bytesIn = 0, 0
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return usagef("line %d is longer than --max-line %d bytes", line+1, maxLine)
		}
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	bar.add(bytesIn)
	return p.out.Flush()
}

func (p *producer) flush() error {
	for part, recs := range p.parts {
		if len(recs) == 0 {
			continue
		}
		first, err := p.t.AppendTo(part, recs, p.d)
		if err != nil {
			return err
		}
		if p.print {
			for i := range recs {
				if p.t.Partitions() == 1 {
					fmt.Fprintln(p.out, first+int64(i))
				} else {
					fmt.Fprintf(p.out, "%d:%d\n", part, first+int64(i))
				}
			}
		}
		p.count += int64(len(recs))
		p.parts[part] = recs[:0]
	}
	if p.print {
		return p.out.Flush()
	}
	return nil
}
