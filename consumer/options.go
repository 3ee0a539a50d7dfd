package consumer

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/passbook-log/passbook/storage"
)

// Start is where a consumer with no committed offset begins.
type Start struct {
	kind   startKind
	offset int64
	time   time.Time
}

type startKind int8

const (
	startEarliest startKind = iota
	startLatest
	startAtOffset
	startTime
)

// Earliest starts at the log start offset: replay of everything kept.
func Earliest() Start { return Start{kind: startEarliest} }

// Latest starts at the head: only records appended from now on.
func Latest() Start { return Start{kind: startLatest} }

// AtOffset starts at an offset (clamped to nothing: out of range fails).
func AtOffset(off int64) Start { return Start{kind: startAtOffset, offset: off} }

// AtTime starts at the first record with a timestamp at or after t.
func AtTime(t time.Time) Start { return Start{kind: startTime, time: t} }

func (s Start) String() string {
	switch s.kind {
	case startLatest:
		return "latest"
	case startAtOffset:
		return strconv.FormatInt(s.offset, 10)
	case startTime:
		return s.time.Format(time.RFC3339Nano)
	}
	return "earliest"
}

// ParseStart parses "earliest", "latest", an offset, or an RFC 3339 time.
func ParseStart(s string) (Start, error) {
	switch s {
	case "earliest", "beginning":
		return Earliest(), nil
	case "latest", "end":
		return Latest(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return Start{}, fmt.Errorf("%w: offset %d is negative", ErrInvalid, n)
		}
		return AtOffset(n), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return AtTime(t), nil
	}
	return Start{}, fmt.Errorf("%w: %q is not earliest, latest, an offset or an RFC 3339 time", ErrInvalid, s)
}

// Commit says when offsets are committed relative to handling.
type Commit int8

const (
	CommitAfter  Commit = iota // handle, then commit: at-least-once
	CommitBefore               // commit, then handle: at-most-once
	CommitEvery                // every N records / D time and on stop
	CommitNone                 // never: read without moving the bookmark
)

func (c Commit) String() string {
	switch c {
	case CommitAfter:
		return "after"
	case CommitBefore:
		return "before"
	case CommitEvery:
		return "every"
	case CommitNone:
		return "none"
	}
	return fmt.Sprintf("commit(%d)", int8(c))
}

// ParseCommit parses "after", "before", "none", or "every=N" / "every=DURATION".
func ParseCommit(s string) (Commit, int, time.Duration, error) {
	switch s {
	case "after":
		return CommitAfter, 0, 0, nil
	case "before":
		return CommitBefore, 0, 0, nil
	case "none":
		return CommitNone, 0, 0, nil
	}
	if v, ok := strings.CutPrefix(s, "every="); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return CommitEvery, n, 0, nil
		}
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return CommitEvery, 0, d, nil
		}
	}
	return 0, 0, 0, fmt.Errorf("%w: commit mode %q (want after, before, none, every=N or every=DURATION)", ErrInvalid, s)
}

// Gap says what to do when retention deleted records never read.
type Gap int8

const (
	GapFail          Gap = iota // fail with a *GapError (the default)
	GapResetEarliest            // go on from the log start; log the count
	GapResetLatest              // go on from the head; log the count
)

// ParseGap parses "fail", "reset-earliest" or "reset-latest".
func ParseGap(s string) (Gap, error) {
	switch s {
	case "fail":
		return GapFail, nil
	case "reset-earliest":
		return GapResetEarliest, nil
	case "reset-latest":
		return GapResetLatest, nil
	}
	return 0, fmt.Errorf("%w: gap policy %q (want fail, reset-earliest or reset-latest)", ErrInvalid, s)
}

// ParseIsolation parses "read_committed" or "read_uncommitted" (Kafka's
// isolation.level values; "committed" and "uncommitted" too).
func ParseIsolation(s string) (storage.Isolation, error) {
	switch s {
	case "read_committed", "committed":
		return storage.ReadCommitted, nil
	case "read_uncommitted", "uncommitted":
		return storage.ReadUncommitted, nil
	}
	return 0, fmt.Errorf("%w: isolation %q (want read_committed or read_uncommitted)", ErrInvalid, s)
}

// Options configure a Consumer.
type Options struct {
	Name       string  // required: the bookmark's name
	Partitions []int32 // nil: all of the topic's partitions
	Start      Start   // where to begin with nothing committed; default Earliest
	Commit     Commit
	EveryN     int           // CommitEvery: commit after this many records
	EveryD     time.Duration // CommitEvery: or after this long (default 1 s)
	OnGap      Gap
	LeaseTTL   time.Duration // default 15 s; renewed at a third of it
	Holder     string        // names this process in errors; default host:pid, which lets a successor take over a crashed holder's lease at once
	Logger     *slog.Logger
	// Isolation says which records the consumer reads. The zero value,
	// storage.ReadCommitted, reads committed data only: it stops at each
	// partition's last stable offset and skips aborted transactions'
	// records; storage.ReadUncommitted reads every record up to the
	// head. Transaction markers (control records) are never handed out.
	Isolation storage.Isolation
}

func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		return o, fmt.Errorf("%w: a consumer needs a name", ErrInvalid)
	}
	if o.Commit < CommitAfter || o.Commit > CommitNone {
		return o, fmt.Errorf("%w: commit mode %d", ErrInvalid, o.Commit)
	}
	if o.Isolation != storage.ReadCommitted && o.Isolation != storage.ReadUncommitted {
		return o, fmt.Errorf("%w: isolation %v", ErrInvalid, o.Isolation)
	}
	if o.EveryN < 0 || o.EveryD < 0 || o.LeaseTTL < 0 {
		return o, fmt.Errorf("%w: negative commit window or lease", ErrInvalid)
	}
	if o.Commit == CommitEvery && o.EveryN == 0 && o.EveryD == 0 {
		o.EveryD = time.Second
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 15 * time.Second
	}
	if o.Holder == "" {
		o.Holder = defaultHolder()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
