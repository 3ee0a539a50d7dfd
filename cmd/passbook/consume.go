package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/spf13/cobra"
)

func newConsumeCmd(e *env) *cobra.Command {
	var (
		name, from, commit, format, onGap string
		isolation                         string
		max                               int64
		follow                            bool
		partitions                        []int32
		session                           time.Duration
		b                                 *brokerFlags
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC --consumer NAME",
		Short: "Read records as a named consumer that keeps its own place",
		Long: `Read records as a named consumer. The consumer's committed offset (the next
offset to read) is kept in the data directory, so running the same command
again resumes where the last run stopped. --from says where a consumer with
nothing committed starts; to move a consumer that has committed, use
'passbook replay'.

Output goes to stdout in buffers of 64 KiB. A record's offset is committed
only once its line has been handed to the operating system (the write to
stdout has returned), never while it is still in the buffer. --commit says
when, and so what a kill -9 can cost:

  after          (the default) write a buffer, then commit the offset after
                 its last record: at-least-once. A kill re-delivers at most
                 the last buffer written (64 KiB of output) and loses nothing.
  before         commit the offsets a buffer covers, then write it:
                 at-most-once. A kill loses at most one buffer (64 KiB) and
                 delivers nothing twice.
  every=N        as after, but written and committed at least every N
                 records: a kill re-delivers at most N records.
  every=DURATION as after, but committed only when DURATION has passed since
                 the last commit: a kill re-delivers at most the records
                 written since the last commit (those of up to DURATION,
                 plus one buffer).
  none           never commit: read without moving the bookmark.

Every mode writes out what it holds and commits at the head, before waiting
with --follow, and when it stops. On Ctrl-C (SIGINT) or SIGTERM it writes
out what is buffered, commits exactly that — the next run starts at the next
record, nothing re-delivered — and exits with 130 or 143.

--isolation read_committed (the default) reads committed data only, as a
Kafka consumer with isolation.level=read_committed does: it stops at each
partition's last stable offset (before the first record of a transaction
still open, waiting there with --follow until it ends) and skips the records
of aborted transactions; --from latest is the last stable offset.
--isolation read_uncommitted reads every record up to the head, those of
open and aborted transactions included. Transaction markers are never
written out either way (they take offsets, so offsets may skip one).

Without --follow it stops at the head (read committed: the last stable
offset). An --from offset outside a partition (below its log start or past
its head), an unknown --partition or --isolation is bad input: exit 2,
nothing read or committed.

With --brokers (or $PASSBOOK_BROKERS) it reads over the Kafka protocol from
a running passbook serve or any Kafka cluster, and the consumer name is a
consumer group id: it joins the group (partitions are shared among the
group's members, as Kafka's consumers share them) and commits to it, with
the same --commit modes and the same rule: nothing is committed before its
line is written. A consumer killed with kill -9 stays a member until
--session-timeout passes; a new run of it waits that long for its
partitions. With --partition it reads those partitions without joining and
commits as the group's admin, which Kafka allows only while the group has
no members.`,
		Example: `  passbook consume orders --consumer orders-writer
  passbook consume orders --consumer analytics-v2 --from earliest --format json --max 10
  passbook consume orders --consumer tail --from latest --follow
  passbook consume orders --consumer audit --isolation read_uncommitted   # open and aborted transactions too`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (rerr error) {
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
			iso, err := consumer.ParseIsolation(isolation)
			if err != nil {
				return usageError{err}
			}
			if format != "text" && format != "json" {
				return usagef("--format %q: want text or json", format)
			}
			if max < 0 {
				return usagef("--max %d: must not be negative", max)
			}
			if ok, err := b.remote(cmd); err != nil {
				return err
			} else if ok {
				if session < time.Second || session > time.Hour {
					return usagef("--session-timeout %s: want 1s to 1h", session)
				}
				return remoteConsume(cmd.Context(), e, b, args[0], &consumeOpts{
					name: name, format: format, start: start, mode: mode, everyN: int64(everyN), everyD: everyD,
					gap: gap, max: max, follow: follow, partitions: partitions, sessionTimeout: session, isolation: iso,
				})
			} else if cmd.Flags().Changed("session-timeout") {
				return usagef("--session-timeout applies only with --brokers (a consumer group's session)")
			}
			db, t, err := e.topic(args[0])
			if err != nil {
				return err
			}
			defer closeDB(db, &rerr)
			ctx := cmd.Context()
			// The consumer commits nothing itself: out does, once the
			// lines are written.
			c, err := consumer.New(ctx, t, db.Offsets(), consumer.Options{
				Name: name, Partitions: partitions, Start: start, Commit: consumer.CommitNone, OnGap: gap, Isolation: iso,
			})
			if err != nil {
				return asUsage(err, "--from")
			}
			defer c.Close()

			total := int64(0)
			for p, next := range c.Positions() {
				l, _ := t.Partition(p)
				if ahead := l.Stable(iso) - next; ahead > 0 {
					total += ahead
				}
			}
			if max > 0 {
				total = min(total, max)
			}
			bar := newProgress(e.stdout, e.stderr, "consume", total, unitRecords)
			out := &output{w: e.stdout, c: c, mode: mode, everyN: int64(everyN), everyD: everyD, bar: bar,
				buf: make([]byte, 0, outputBuffer), lastCommit: time.Now()}
			read := int64(0)
			began := time.Now()
			h := func(ctx context.Context, m consumer.Message) error {
				if err := out.add(ctx, format, m); err != nil {
					return err
				}
				read++
				if max > 0 && read >= max {
					return consumer.Stop
				}
				return nil
			}
			for {
				err = c.Drain(ctx, h)
				if ferr := out.flush(ctx, true); err == nil {
					err = ferr
				}
				if err != nil || !follow || (max > 0 && read >= max) {
					break
				}
				if err = c.Wait(ctx); err != nil {
					break
				}
			}
			bar.finish(err)
			return consumeSummary(e, out, t.Name(), name, began, err)
		},
	}
	b = addBrokerFlags(cmd, e)
	f := cmd.Flags()
	f.DurationVar(&session, "session-timeout", 10*time.Second, "with --brokers: how long the consumer group waits for this consumer when it stops answering (a kill -9) before giving its partitions to another (Kafka's session.timeout.ms)")
	f.StringVar(&name, "consumer", "", "consumer name (required): whose committed offset to use and move")
	f.StringVar(&from, "from", "earliest", "where to start with nothing committed: earliest, latest, an offset, or an RFC 3339 time")
	f.StringVar(&commit, "commit", "after", "when to commit, relative to writing each 64 KiB buffer: after (at-least-once), before (at-most-once), every=N, every=DURATION or none")
	f.Int64Var(&max, "max", 0, "stop after this many records (0: no limit)")
	f.BoolVar(&follow, "follow", false, "keep waiting for new records at the head")
	f.StringVar(&format, "format", "text", "text (one value per line) or json (one object per line)")
	f.StringVar(&isolation, "isolation", "read_committed", "which records to read: read_committed (committed data only, up to the last stable offset) or read_uncommitted (every record up to the head)")
	f.StringVar(&onGap, "on-gap", "fail", "if retention deleted records never read: fail, reset-earliest or reset-latest")
	f.Int32SliceVar(&partitions, "partition", nil, "read only these partitions (default all)")
	return cmd
}

// committer commits a consumer's positions: a *consumer.Consumer on a
// data directory, a *kafkaConsumer over Kafka.
type committer interface {
	Commit(ctx context.Context) error
}

// consumeSummary ends a consume: the summary line on stderr, and err
// (Ctrl-C or SIGTERM: what was written is committed; main prints no
// error for it and exits 130 or 143).
func consumeSummary(e *env, out *output, topic, name string, began time.Time, err error) error {
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return err
	}
	how := ""
	if interrupted {
		how = " (interrupted)"
	}
	el := time.Since(began)
	fmt.Fprintf(e.stderr, "consumed %s records from %s as %s in %s%s\n", thousands.Int(out.written), topic, name, el.Round(time.Millisecond), how)
	return err
}

// outputBuffer is how much consume gathers before a write to stdout.
const outputBuffer = 64 << 10

// output is consume's stdout: lines gather in buf and go out in one write
// when it is full, at the head and on stop; the consumer's offsets are
// committed around each write as the mode says. It relies on the
// consumer's positions moving only when a handler returns: a flush from
// inside the handler (before its own line is added) commits exactly the
// lines in the buffer.
type output struct {
	w      io.Writer
	c      committer
	mode   consumer.Commit
	everyN int64         // CommitEvery by count
	everyD time.Duration // CommitEvery by time
	bar    *progress

	buf         []byte
	scratch     []byte
	buffered    int64 // records in buf
	uncommitted int64 // records written since the last commit
	written     int64 // records written in all
	lastCommit  time.Time
	err         error // the first failed write or commit: nothing is written or committed after it
}

// add puts m's line in the buffer, writing the buffer out first when the
// line would not fit (or when every=N's quota is reached).
func (o *output) add(ctx context.Context, format string, m consumer.Message) error {
	line := m.Value
	if format == "json" {
		var err error
		if o.scratch, err = appendJSON(o.scratch[:0], m); err != nil {
			return err
		}
		line = o.scratch
	}
	full := len(o.buf) > 0 && len(o.buf)+len(line)+1 > cap(o.buf)
	quota := o.mode == consumer.CommitEvery && o.everyN > 0 && o.uncommitted+o.buffered >= o.everyN
	if full || quota {
		if err := o.flush(ctx, false); err != nil {
			return err
		}
	}
	if format == "json" {
		o.buf = append(o.buf, line...) // appendJSON ends the line
	} else {
		o.buf = append(append(o.buf, line...), '\n')
	}
	o.buffered++
	return nil
}

// flush writes the buffer out and commits as the mode says; atRest is
// true at the head and on stop, where every mode commits what it wrote.
// Commits are not cancelled with ctx: what was written is committed even
// after Ctrl-C.
func (o *output) flush(ctx context.Context, atRest bool) error {
	if o.err != nil {
		return o.err
	}
	cctx := context.WithoutCancel(ctx)
	if o.mode == consumer.CommitBefore && o.buffered > 0 {
		if err := o.c.Commit(cctx); err != nil {
			o.err = err
			return err
		}
	}
	if len(o.buf) > 0 {
		if _, err := o.w.Write(o.buf); err != nil {
			o.err = fmt.Errorf("write to stdout: %w", err)
			return o.err
		}
		o.bar.add(int(o.buffered))
		o.written += o.buffered
		o.uncommitted += o.buffered
		o.buf, o.buffered = o.buf[:0], 0
	}
	commit := false
	switch o.mode {
	case consumer.CommitAfter:
		commit = o.uncommitted > 0
	case consumer.CommitEvery:
		commit = o.uncommitted > 0 && (atRest ||
			(o.everyN > 0 && o.uncommitted >= o.everyN) ||
			(o.everyD > 0 && time.Since(o.lastCommit) >= o.everyD))
	}
	if commit {
		if err := o.c.Commit(cctx); err != nil {
			o.err = err
			return err
		}
		o.uncommitted, o.lastCommit = 0, time.Now()
	}
	if o.mode == consumer.CommitBefore || o.mode == consumer.CommitNone {
		o.uncommitted = 0
	}
	return nil
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

// appendJSON appends m's --format json line, newline included.
func appendJSON(b []byte, m consumer.Message) ([]byte, error) {
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
	w := bytes.NewBuffer(b)
	if err := json.NewEncoder(w).Encode(j); err != nil { // Encode ends with a newline
		return b, err
	}
	return w.Bytes(), nil
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

// asUsage makes the consumer package's refusal of bad input — an offset
// outside what a partition holds, a partition the topic does not have —
// a usage error (exit 2), its suggestion naming option (--from, --to; ""
// for a plain earliest or latest); other errors pass through. Nothing was
// moved or committed when the consumer package refuses.
func asUsage(err error, option string) error {
	var rangeErr *consumer.RangeError
	switch {
	case errors.As(err, &rangeErr):
		rangeErr.Option = option
		return usageError{err}
	case errors.Is(err, consumer.ErrInvalid):
		return usageError{err}
	}
	return err
}
