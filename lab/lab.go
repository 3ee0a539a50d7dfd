// Package lab is passbook's three-part demonstration of the idea it is
// built on, run on the real engine: append records to a log (Part 1),
// crash a consumer between its work and its commit and resume it from its
// committed offset (Part 2), and replay all of history with a second
// consumer while the first stays where it is (Part 3). It scores the
// reader's predictions against what happened.
//
// Part 2 runs in one of three commit orders: after the work (a crash
// costs a duplicate), before it (a crash costs a gap), or CommitTx, the
// work written as a row of the offset store's database in the same
// transaction as the offset, where a crash costs neither and the lab
// measures what the transaction costs instead.
//
// Everything runs on disk: a real segmented log and a real SQLite offset
// store in which every commit survives a crash of the process.
package lab

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// Commit is Part 2's commit order: when the consumer's offset is
// committed, relative to its work.
type Commit string

const (
	// CommitAfter: the work, then the commit, one SQLite transaction each.
	// A crash between them repeats a record: at-least-once.
	CommitAfter Commit = "after"
	// CommitBefore: the commit, then the work. A crash between them skips
	// a record: at-most-once.
	CommitBefore Commit = "before"
	// CommitTx: the work (a row in the table WorkTable) and the commit in
	// one SQLite transaction on the offset store (consumer.RunTx). There is
	// no gap between them to crash in: exactly-once, for work that lives
	// in the offset store's database.
	CommitTx Commit = "tx"
)

// Commits lists the commit orders, in the order the help names them.
var Commits = []Commit{CommitAfter, CommitBefore, CommitTx}

// consumerMode is the consumer package's commit mode for c: CommitTx
// commits inside RunTx's transaction, so the consumer itself commits
// nothing.
func (c Commit) consumerMode() consumer.Commit {
	switch c {
	case CommitBefore:
		return consumer.CommitBefore
	case CommitTx:
		return consumer.CommitNone
	}
	return consumer.CommitAfter
}

// Crash says how Part 2's consumer dies.
type Crash string

const (
	// CrashObject abandons the consumer object mid-stream, as the course's
	// own lab does: nothing after the work runs, but the process lives.
	CrashObject Crash = "object"
	// CrashProcess runs the consumer in a child process and kills it with
	// SIGKILL right after the crash point: a real crash.
	CrashProcess Crash = "process"
)

// Options configure a run. Zero fields take the defaults noted.
type Options struct {
	N int // records; default 100,000
	// CrashAt is the offset at which Part 2's consumer dies, in the gap
	// between its two steps: with CommitAfter it has processed that record
	// and not committed past it; with CommitBefore it has committed past it
	// (CrashAt + 1) and not processed it; with CommitTx it has written
	// that record's work in the transaction that would commit CrashAt + 1,
	// and dies before the transaction commits. Default 59,999.
	CrashAt    int64
	Commit     Commit             // CommitAfter (default), CommitBefore or CommitTx
	Crash      Crash              // default CrashObject
	Durability storage.Durability // of the appends; default InOS
	// Predictions P1–P4: last offset, duplicates, missed, replayed; nil
	// entries are "no prediction".
	Predictions [4]*int64
	// Dir is where the data directory goes. Empty means a new temporary
	// directory, removed after the run unless Keep is set. A Dir given
	// must not exist yet or be an empty directory (the lab never deletes
	// or overwrites anything it did not create), and is always kept.
	Dir  string
	Keep bool
	// Child is the command line that runs ChildMain in a new process, for
	// CrashProcess (default: this executable with "lab --child").
	Child []string
}

func (o *Options) defaults() error {
	if o.N == 0 {
		o.N = 100_000
	}
	switch o.CrashAt {
	case 0:
		o.CrashAt = 59_999
	case CrashAtFirst:
		o.CrashAt = 0
	}
	if o.Crash == "" {
		o.Crash = CrashObject
	}
	if o.Commit == "" {
		o.Commit = CommitAfter
	}
	if o.Durability == storage.DefaultDurability {
		o.Durability = storage.InOS
	}
	switch {
	case o.N < 1:
		return fmt.Errorf("n must be at least 1, got %d", o.N)
	case o.N > 100_000_000:
		return fmt.Errorf("n must be at most 100,000,000, got %d", o.N)
	case o.CrashAt < 0 || o.CrashAt >= int64(o.N):
		return fmt.Errorf("crash-at must be an offset in [0, %d], got %d", o.N-1, o.CrashAt)
	case !slices.Contains(Commits, o.Commit):
		return fmt.Errorf("commit must be after, before or tx, got %q", o.Commit)
	case o.Crash != CrashObject && o.Crash != CrashProcess:
		return fmt.Errorf("crash must be object or process, got %q", o.Crash)
	}
	return nil
}

// CrashAtFirst is Options.CrashAt for a crash at offset 0 (whose zero
// value means the default).
const CrashAtFirst int64 = -1

// ErrOptions wraps every problem with Options.
var ErrOptions = errors.New("lab: bad option")

// Result holds every figure of a run. Its JSON form is `passbook lab --json`.
type Result struct {
	N            int     `json:"n"`
	Appended     int     `json:"appended"`
	FirstOffsets []int64 `json:"first_offsets"`
	LastOffsets  []int64 `json:"last_offsets"`
	LastOffset   int64   `json:"last_offset"`
	AppendMs     float64 `json:"append_ms"`

	CrashedAt             int64   `json:"crashed_at"`
	ProcessedBeforeCrash  int     `json:"processed_before_crash"`
	CommittedAtCrash      int64   `json:"committed_at_crash"`
	NothingCommitted      bool    `json:"nothing_committed,omitempty"` // it died before its first commit
	ResumedFrom           int64   `json:"resumed_from"`
	ProcessedAfterRestart int     `json:"processed_after_restart"`
	TotalProcessed        int     `json:"total_processed"`
	Missed                int     `json:"missed"`
	Duplicated            int     `json:"duplicated"`
	MissedOffsets         []int64 `json:"missed_offsets"`
	DuplicateOffsets      []int64 `json:"duplicate_offsets"`

	AOffset      int64 `json:"a_offset"`
	BStart       int64 `json:"b_start"`
	BReplayed    int   `json:"b_replayed"`
	BInOrder     bool  `json:"b_in_order"`
	AOffsetAfter int64 `json:"a_offset_after"`
	BOffset      int64 `json:"b_offset"`

	// Tx holds what only CommitTx has: the work table's counts and the
	// cost of the transaction against committing after.
	Tx *TxFigures `json:"tx,omitempty"`

	PartMs      [3]float64 `json:"part_ms"`
	Predictions [4]*int64  `json:"predictions"`
	Verdicts    [4]string  `json:"verdicts"`
	// VerdictNotes name the mistake behind a wrong prediction, when it is
	// a known one ("" otherwise).
	VerdictNotes [4]string `json:"verdict_notes"`

	// How the run was set up; MarshalJSON puts these first.
	Commit     Commit             `json:"-"`
	Crash      Crash              `json:"-"`
	Durability storage.Durability `json:"-"`
	Dir        string             `json:"-"` // the data directory, when kept
}

// MarshalJSON writes the run's setup (commit order, crash mode,
// durability of the appends, and the data directory when it was kept)
// ahead of its figures.
func (r *Result) MarshalJSON() ([]byte, error) {
	type figures Result // without this method
	return json.Marshal(struct {
		Commit     string `json:"commit"`
		Crash      Crash  `json:"crash"`
		Durability string `json:"durability"`
		DataDir    string `json:"data_dir,omitempty"`
		*figures
	}{string(r.Commit), r.Crash, r.Durability.String(), r.Dir, (*figures)(r)})
}

// ErrDirNotEmpty is returned by Run for an Options.Dir that already holds
// something: the lab refuses to put its data among files it did not make.
var ErrDirNotEmpty = errors.New("lab: the data directory is not empty")

// prepareDir makes sure dir is a new or empty directory, creating it if
// need be.
func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("lab: data directory: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s holds %d entries (%s…); the lab never deletes what it did not create: give a new or empty directory",
			ErrDirNotEmpty, dir, len(entries), entries[0].Name())
	}
	return nil
}

const (
	topicName = "orders"
	consumerA = "orders-writer"
	consumerB = "analytics-v2"
)

// Run runs the three parts and scores the predictions.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	dir := o.Dir
	if dir != "" {
		if err := prepareDir(dir); err != nil {
			return nil, err
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "passbook-lab-*"); err != nil {
			return nil, err
		}
		if !o.Keep {
			defer os.RemoveAll(dir) // only ever the directory made here
		}
	}
	r := &Result{N: o.N, CrashedAt: o.CrashAt, Predictions: o.Predictions,
		Commit: o.Commit, Crash: o.Crash, Durability: o.Durability}
	if o.Keep || o.Dir != "" {
		r.Dir = dir
	}
	db, err := passbook.Open(dir, &passbook.Options{Durability: o.Durability})
	if err != nil {
		return nil, err
	}
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	t, err := db.CreateTopic(topicName, passbook.TopicConfig{})
	if err != nil {
		return nil, err
	}

	began := time.Now()
	if err := part1(t, r); err != nil {
		return nil, fmt.Errorf("part 1: %w", err)
	}
	r.PartMs[0] = ms(time.Since(began))

	if o.Commit == CommitTx {
		// Before anything touches the offset store's database/sql pool
		// (which moves the store from exclusive to shared locking), time
		// a consumer that commits after each record, for the cost.
		if r.Tx, err = prepareTx(ctx, db, t, r.N); err != nil {
			return nil, fmt.Errorf("part 2: %w", err)
		}
	}

	began = time.Now()
	if o.Crash == CrashProcess {
		db.Close()
		db = nil
		if db, t, err = crashChild(ctx, o, dir, r); err != nil {
			return nil, fmt.Errorf("part 2: %w", err)
		}
	} else if err := part2Object(ctx, o, db, t, r); err != nil {
		return nil, fmt.Errorf("part 2: %w", err)
	}
	r.PartMs[1] = ms(time.Since(began))

	began = time.Now()
	if err := part3(ctx, db, t, r); err != nil {
		return nil, fmt.Errorf("part 3: %w", err)
	}
	r.PartMs[2] = ms(time.Since(began))
	score(r)
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// part1 appends N records, in batches of 1,000 as a producer would send
// them, and keeps the offsets the log hands back.
func part1(t *passbook.Topic, r *Result) error {
	began := time.Now()
	batch := make([]passbook.Record, 0, 1000)
	var handed []int64 // first and last few offsets handed back
	for i := 0; i < r.N; i++ {
		batch = append(batch, passbook.Record{Value: fmt.Appendf(nil, "order #%d", i)})
		if len(batch) == cap(batch) || i == r.N-1 {
			first, err := t.AppendTo(0, batch, storage.DefaultDurability)
			if err != nil {
				return err
			}
			for j := range batch {
				off := first + int64(j)
				if off < 3 || off >= int64(r.N)-3 {
					handed = append(handed, off)
				}
			}
			r.Appended += len(batch)
			r.LastOffset = first + int64(len(batch)) - 1
			batch = batch[:0]
		}
	}
	r.AppendMs = ms(time.Since(began))
	r.FirstOffsets = handed[:min(3, len(handed))]
	r.LastOffsets = handed[max(0, len(handed)-3):]
	return nil
}

var errCrash = errors.New("lab: the consumer crashed here")

// part2Object runs consumer A until it "crashes" at the crash point by
// abandoning it, then resumes with a new consumer of the same name.
func part2Object(ctx context.Context, o Options, db *passbook.DB, t *passbook.Topic, r *Result) error {
	counts := make([]uint8, r.N)
	a, err := consumer.New(ctx, t, db.Offsets(), consumer.Options{Name: consumerA, Commit: o.Commit.consumerMode()})
	if err != nil {
		return err
	}
	err = drain(ctx, a, o.Commit, db, r, func(ctx context.Context, m consumer.Message) error {
		// The crash lands in the gap between the two steps: after the
		// work with commit-after, after the commit with commit-before,
		// after the work and before the transaction's commit with tx
		// (drain has written the work row; the error rolls it back).
		if m.Offset == o.CrashAt && o.Commit == CommitBefore {
			return errCrash
		}
		counts[m.Offset]++
		r.ProcessedBeforeCrash++
		if m.Offset == o.CrashAt {
			return errCrash
		}
		return nil
	})
	if !errors.Is(err, errCrash) {
		return fmt.Errorf("consumer did not reach the crash point: %v", err)
	}
	a.Abandon()
	return resume(ctx, o, db, t, r, counts)
}

// drain runs h on every record up to the head: through the consumer's
// own commit mode, or, for CommitTx, through RunTx with the record's work
// row written in the transaction before h runs, so that an error from h
// rolls the row back with the offset. The tx drains are timed into r.Tx.
func drain(ctx context.Context, c *consumer.Consumer, commit Commit, db *passbook.DB, r *Result, h consumer.Handler) error {
	if commit != CommitTx {
		return c.Drain(ctx, h)
	}
	ins, err := prepareWork(ctx, db.Offsets().DB())
	if err != nil {
		return err
	}
	defer ins.Close()
	began, runs := time.Now(), 0
	err = c.RunTx(ctx, false, func(ctx context.Context, tx *sql.Tx, m consumer.Message) error {
		runs++
		if err := writeWork(ctx, tx, ins, consumerA, m); err != nil {
			return err
		}
		return h(ctx, m)
	})
	r.Tx.TxRecords += runs
	r.Tx.TxMs += ms(time.Since(began))
	return err
}

// resume reads what the crashed consumer left committed and finishes with
// a new consumer of the same name. With CommitTx the counts are then
// taken from the work table: what the transactions kept, not what the
// handler was called on.
func resume(ctx context.Context, o Options, db *passbook.DB, t *passbook.Topic, r *Result, counts []uint8) error {
	key := offsets.Key{Consumer: consumerA, Topic: topicName}
	var err error
	r.CommittedAtCrash, err = db.Offsets().Committed(ctx, key)
	if errors.Is(err, offsets.ErrNotFound) {
		// It died before its first commit: the new consumer starts at
		// the earliest offset, 0.
		r.CommittedAtCrash, r.NothingCommitted, err = 0, true, nil
	}
	if err != nil {
		return err
	}
	if o.Commit == CommitTx {
		if r.Tx.RowsAtCrash, err = countWork(ctx, db.Offsets().DB(), consumerA, nil); err != nil {
			return err
		}
	}
	a, err := consumer.New(ctx, t, db.Offsets(), consumer.Options{Name: consumerA, Commit: o.Commit.consumerMode()})
	if err != nil {
		return err
	}
	r.ResumedFrom = a.Positions()[0]
	err = drain(ctx, a, o.Commit, db, r, func(ctx context.Context, m consumer.Message) error {
		counts[m.Offset]++
		r.ProcessedAfterRestart++
		return nil
	})
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if o.Commit == CommitTx {
		clear(counts)
		if r.Tx.Rows, err = countWork(ctx, db.Offsets().DB(), consumerA, counts); err != nil {
			return err
		}
	}
	r.MissedOffsets, r.DuplicateOffsets = []int64{}, []int64{}
	for off, c := range counts {
		r.TotalProcessed += int(c)
		switch {
		case c == 0:
			r.Missed++
			r.MissedOffsets = append(r.MissedOffsets, int64(off))
		case c > 1:
			r.Duplicated++
			r.DuplicateOffsets = append(r.DuplicateOffsets, int64(off))
		}
	}
	return nil
}

// part3 replays everything with consumer B while A stays put.
func part3(ctx context.Context, db *passbook.DB, t *passbook.Topic, r *Result) error {
	keyA := offsets.Key{Consumer: consumerA, Topic: topicName}
	var err error
	if r.AOffset, err = db.Offsets().Committed(ctx, keyA); err != nil {
		return err
	}
	b, err := consumer.New(ctx, t, db.Offsets(), consumer.Options{Name: consumerB, Start: consumer.Earliest()})
	if err != nil {
		return err
	}
	r.BStart = b.Positions()[0]
	r.BInOrder = true
	want := r.BStart
	err = b.Drain(ctx, func(ctx context.Context, m consumer.Message) error {
		if m.Offset != want {
			r.BInOrder = false
		}
		want = m.Offset + 1
		r.BReplayed++
		return nil
	})
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if r.AOffsetAfter, err = db.Offsets().Committed(ctx, keyA); err != nil {
		return err
	}
	r.BOffset, err = db.Offsets().Committed(ctx, offsets.Key{Consumer: consumerB, Topic: topicName})
	return err
}
