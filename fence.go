package passbook

import (
	"fmt"
	"time"
)

// A partition that Open cannot open — a segment file deleted, corruption
// in its fsync'd bytes, no file descriptor left — is fenced: Open opens
// every other partition and serves them, and the fenced one answers every
// append and read with an error matching ErrFenced (Kafka's
// KAFKA_STORAGE_ERROR) until `passbook repair` mends it and the data
// directory is opened again. PartitionProblems lists fenced partitions
// and the ones whose writes fail (storage.Log.Health).

// fence records that partition p could not be opened.
type fence struct {
	err   error
	since time.Time
}

// fenceAt records partition p of t as fenced by err, while t is being
// opened.
func (t *Topic) fenceAt(p int, err error, now time.Time) {
	if t.fenced == nil {
		t.fenced = map[int32]fence{}
	}
	t.fenced[int32(p)] = fence{err: err, since: now}
	t.parts = append(t.parts, nil)
}

// fencedErr is the error for a fenced partition p.
func (t *Topic) fencedErr(p int32) error {
	f := t.fenced[p]
	return fmt.Errorf("%w: topic %s partition %d: %w (passbook verify says more; passbook repair mends it)", ErrFenced, t.name, p, f.err)
}

// PartitionState says why a partition does not serve as it should.
type PartitionState string

const (
	// StateFenced: Open could not open the partition; it serves nothing
	// until it is repaired and the data directory opened again.
	StateFenced PartitionState = "fenced"
	// StateUnwritable: a write failed; the partition serves reads and
	// refuses appends until it recovers (by itself, if Retrying).
	StateUnwritable PartitionState = "unwritable"
)

// PartitionProblem is a partition that is fenced or does not take appends.
type PartitionProblem struct {
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	State     PartitionState `json:"state"`
	Reason    string         `json:"reason"`
	Since     time.Time      `json:"since"`
	// Retrying: the partition retries its writes by itself and takes
	// appends again once the disk does (a full disk, a read-only file
	// system, no file descriptors left).
	Retrying bool `json:"retrying"`
}

// PartitionProblems lists the partitions that are fenced or unwritable,
// by topic and partition.
func (db *DB) PartitionProblems() []PartitionProblem {
	var out []PartitionProblem
	for _, t := range db.Topics() {
		out = append(out, t.problems()...)
	}
	return out
}

func (t *Topic) problems() []PartitionProblem {
	var out []PartitionProblem
	for p, l := range t.parts {
		if l == nil {
			f := t.fenced[int32(p)]
			out = append(out, PartitionProblem{Topic: t.name, Partition: int32(p), State: StateFenced, Reason: f.err.Error(), Since: f.since})
			continue
		}
		if h := l.Health(); !h.Writable() {
			out = append(out, PartitionProblem{Topic: t.name, Partition: int32(p), State: StateUnwritable, Reason: h.Err.Error(), Since: h.Since, Retrying: h.Retrying})
		}
	}
	return out
}

// HealthStats are counts over every partition, for metrics.
type HealthStats struct {
	Fenced     int   // partitions fenced at Open
	Unwritable int   // partitions refusing appends after a failed write
	Failures   int64 // times a partition became unwritable, since it was opened
}

// HealthStats counts fenced and unwritable partitions and write failures.
func (db *DB) HealthStats() HealthStats {
	var st HealthStats
	for _, t := range db.Topics() {
		for _, l := range t.parts {
			if l == nil {
				st.Fenced++
				continue
			}
			h := l.Health()
			st.Failures += h.Failures
			if !h.Writable() {
				st.Unwritable++
			}
		}
	}
	return st
}
