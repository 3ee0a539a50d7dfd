package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/spf13/cobra"
)

func newConsumeCmd(e *env) *cobra.Command {
	var (
		name, from, commit, format, onGap string
		max                               int64
		follow                            bool
		partitions                        []int32
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC --consumer NAME",
		Short: "Read records as a named consumer that keeps its own place",
		Long: `Read records as a named consumer. The consumer's committed offset (the next
offset to read) is kept in the data directory, so running the same command
again resumes where the last run stopped. --from says where a consumer with
nothing committed starts; to move a consumer that has committed, use
'passbook replay'.

--commit picks the delivery semantics: after (commit after each record is
printed: at-least-once, the default), before (at-most-once), every=N or
every=DURATION (commit in windows: fast, at-least-once), or none.

Without --follow it stops at the head.`,
		Example: `  passbook consume orders --consumer orders-writer
  passbook consume orders --consumer analytics-v2 --from earliest --format json --max 10
  passbook consume orders --consumer tail --from latest --follow`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return usagef("--consumer NAME is required: it names the bookmark this reader keeps")
			}
			start, err := consumer.ParseStart(from)
			if err != nil {
				return usageError{err}
			}
			mode, everyN, everyD, err := consumer.ParseCommit(commit)
			if err != nil {
				return usageError{err}
			}
			gap, err := consumer.ParseGap(onGap)
			if err != nil {
				return usageError{err}
			}
			if format != "text" && format != "json" {
				return usagef("--format %q: want text or json", format)
			}
			if max < 0 {
				return usagef("--max %d: must not be negative", max)
			}
			db, t, err := e.topic(args[0])
			if err != nil {
				return err
			}
			defer db.Close()
			ctx := cmd.Context()
			c, err := consumer.New(ctx, t, db.Offsets(), consumer.Options{
				Name: name, Partitions: partitions, Start: start, Commit: mode, EveryN: everyN, EveryD: everyD, OnGap: gap,
			})
			if err != nil {
				return err
			}
			defer c.Close()

			total := int64(0)
			for p, next := range c.Positions() {
				l, _ := t.Partition(p)
				total += l.Head() - next
			}
			if max > 0 {
				total = min(total, max)
			}
			bar := newProgress(e.stdout, e.stderr, "consume", total, unitRecords)
			out := bufio.NewWriterSize(e.stdout, 64<<10)
			count := int64(0)
			began := time.Now()
			h := func(ctx context.Context, m consumer.Message) error {
				if err := writeMessage(out, format, m); err != nil {
					return err
				}
				count++
				if count&1023 == 0 {
					bar.add(1024)
				}
				if max > 0 && count >= max {
					return consumer.Stop
				}
				return nil
			}
			for {
				err = c.Drain(ctx, h)
				if ferr := out.Flush(); err == nil {
					err = ferr
				}
				if err != nil || !follow || (max > 0 && count >= max) {
					break
				}
				if err = c.Wait(ctx); err != nil {
					break
				}
			}
			bar.add(int(count & 1023))
			bar.finish(err)
			if errors.Is(err, context.Canceled) {
				err = nil // Ctrl-C while following: a normal way to stop
			}
			if err != nil {
				return err
			}
			el := time.Since(began)
			fmt.Fprintf(e.stderr, "consumed %s records from %s as %s in %s\n", thousands.Int(count), t.Name(), name, el.Round(time.Millisecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "consumer", "", "consumer name (required): whose committed offset to use and move")
	f.StringVar(&from, "from", "earliest", "where to start with nothing committed: earliest, latest, an offset, or an RFC 3339 time")
	f.StringVar(&commit, "commit", "after", "when to commit: after, before, every=N, every=DURATION or none")
	f.Int64Var(&max, "max", 0, "stop after this many records (0: no limit)")
	f.BoolVar(&follow, "follow", false, "keep waiting for new records at the head")
	f.StringVar(&format, "format", "text", "text (one value per line) or json (one object per line)")
	f.StringVar(&onGap, "on-gap", "fail", "if retention deleted records never read: fail, reset-earliest or reset-latest")
	f.Int32SliceVar(&partitions, "partition", nil, "read only these partitions (default all)")
	return cmd
}

// jsonMessage is the --format json line.
type jsonMessage struct {
	Partition   int32             `json:"partition"`
	Offset      int64             `json:"offset"`
	Timestamp   time.Time         `json:"timestamp"`
	Key         *string           `json:"key,omitempty"`
	KeyBase64   []byte            `json:"key_base64,omitempty"`
	Value       *string           `json:"value"`
	ValueBase64 []byte            `json:"value_base64,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
}

func writeMessage(w *bufio.Writer, format string, m consumer.Message) error {
	if format == "text" {
		w.Write(m.Value)
		return w.WriteByte('\n')
	}
	j := jsonMessage{Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp.UTC()}
	j.Key, j.KeyBase64 = textOrBytes(m.Key)
	j.Value, j.ValueBase64 = textOrBytes(m.Value)
	if len(m.Headers) > 0 {
		j.Headers = map[string]string{}
		for _, h := range m.Headers {
			if utf8.Valid(h.Value) {
				j.Headers[h.Key] = string(h.Value)
			} else {
				j.Headers[h.Key] = "base64:" + base64.StdEncoding.EncodeToString(h.Value)
			}
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	w.Write(b)
	return w.WriteByte('\n')
}

// textOrBytes returns b as a string when it is UTF-8, else as bytes (which
// encoding/json writes as base64). Nil stays nil: a tombstone's value is null.
func textOrBytes(b []byte) (*string, []byte) {
	if b == nil {
		return nil, nil
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	return nil, b
}
