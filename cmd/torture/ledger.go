package main

import (
	"fmt"
	"hash/crc32"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/passbook-log/passbook/batch"
)

// A record the workload writes: value "<body>|<crc>", where body names
// the trial, the writer and a sequence number and is padded to a random
// length; key "k<n>"; one header "seq". The CRC makes a damaged value
// recognisable as damaged rather than invented.
func makeValue(body string) []byte {
	return fmt.Appendf(nil, "%s|%08x", body, crc32.ChecksumIEEE([]byte(body)))
}

// valueIntact reports whether a value's CRC suffix matches its body.
func valueIntact(v []byte) bool {
	i := strings.LastIndexByte(string(v), '|')
	if i < 0 || len(v)-i != 9 {
		return false
	}
	return fmt.Sprintf("%08x", crc32.ChecksumIEEE(v[:i])) == string(v[i+1:])
}

// pos is a record's place.
type pos struct {
	part int32
	off  int64
}

// sentRec is what was sent (or appended) and what came of it.
type sentRec struct {
	key, hdr string
	part     int32 // −1: the server's partitioner chose
	acked    bool
	durable  bool // acknowledged as fsync'd (survives power loss)
	at       pos
	inFlight bool // not acknowledged when the fault struck
}

// delivery modes of consumers, with their in-flight windows.
type delivery struct {
	name string
	// dupWindow is how many records per partition a restart may process
	// again; skipWindow how many it may skip (at-most-once).
	dupWindow, skipWindow int64
}

// consumerRun is one instance of a named consumer, from its start (or
// restart) to its end.
type consumerRun struct {
	beforeFault bool // it ran before the fault
	// next is the offset after the last one processed, per partition; a
	// record before it is a rewind (a group rebalance, a reset), judged
	// when it happens against the last successful commit.
	next                 map[int32]int64
	rewinds              map[pos]bool
	rewindBeyond, within int64
	counted              bool
	// commitsBefore are the last successful commits when it started.
	commitsBefore map[int32]int64
	start         map[int32]int64 // position per partition when it started
	processed     map[int32][]pos // offsets handled, in order, per partition
	values        map[pos]string
}

// ledger records everything the workload did, from the outside: what it
// sent, what was acknowledged where, what each consumer processed. The
// checks compare it with what the log holds after the fault.
type ledger struct {
	mu        sync.Mutex
	sent      map[string]*sentRec // by value
	acks      map[pos]string
	consumers map[string]*delivery
	runs      map[string][]*consumerRun
	faulted   bool // the fault has struck: acknowledgements after it do not count
	// lostFrom: after a power loss, the offsets from these on (per
	// partition) are gone; records processed there before it were read
	// before they were durable.
	lostFrom map[int32]int64
	// commits holds the last successful commit per consumer and
	// partition, for consumers that report them (the Kafka group).
	commits     map[string]map[int32]int64
	rewindNotes []string
	// onRewind, if set, is called with each note of a consumer going
	// back below its last commit (the Kafka trials keep their logs).
	onRewind func(note string)
}

// Committed records a commit that succeeded: the consumer's next offset
// on partition p.
func (lg *ledger) Committed(name string, p int32, next int64) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	if lg.faulted {
		// Answered after the fault was decided: a power cut's snapshot
		// is taken after Fault while the server still answers, so such
		// a commit may or may not be in what survives. Only commits
		// answered before the fault are promises to check.
		return
	}
	if lg.commits == nil {
		lg.commits = map[string]map[int32]int64{}
	}
	if lg.commits[name] == nil {
		lg.commits[name] = map[int32]int64{}
	}
	lg.commits[name][p] = next
}

func newLedger() *ledger {
	return &ledger{sent: map[string]*sentRec{}, acks: map[pos]string{}, consumers: map[string]*delivery{}, runs: map[string][]*consumerRun{}}
}

// Sent records a record about to be sent to partition part (−1: the
// server's partitioner chooses).
func (lg *ledger) Sent(value, key, hdr string, part int32) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	lg.sent[value] = &sentRec{key: key, hdr: hdr, part: part}
}

// Acked records that values were acknowledged at offsets from off on.
func (lg *ledger) Acked(part int32, off int64, durable bool, values ...string) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	if lg.faulted {
		return
	}
	for i, v := range values {
		s := lg.sent[v]
		if s == nil {
			continue
		}
		at := pos{part, off + int64(i)}
		s.acked, s.durable, s.at = true, durable, at
		lg.acks[at] = v
	}
}

// ackCount is the number of acknowledged records.
func (lg *ledger) ackCount() int {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	return len(lg.acks)
}

// Fault marks the moment of the fault: acknowledgements recorded after it
// are not counted (they may have raced with it).
func (lg *ledger) Fault() {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	lg.faulted = true
	for _, s := range lg.sent {
		s.inFlight = !s.acked
	}
	for _, runs := range lg.runs {
		for _, r := range runs {
			r.beforeFault = true
		}
	}
}

// Resume starts counting acknowledgements again, after the fault, for the
// run that follows recovery. heads are the partitions' heads after
// recovery (nil: nothing was lost).
func (lg *ledger) Resume(heads []int64) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	lg.faulted = false
	lg.lostFrom = map[int32]int64{}
	for p, h := range heads {
		lg.lostFrom[int32(p)] = h
	}
}

// Started records that a consumer instance started at the given
// positions.
func (lg *ledger) Started(name string, d delivery, start map[int32]int64) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	lg.consumers[name] = &d
	lg.runs[name] = append(lg.runs[name], &consumerRun{start: start, processed: map[int32][]pos{}, values: map[pos]string{},
		next: map[int32]int64{}, rewinds: map[pos]bool{}, commitsBefore: maps.Clone(lg.commits[name])})
}

// Processed records that the consumer's current instance handled a
// record. It returns false, recording nothing, once the fault has struck:
// the consumer must then stop without committing.
func (lg *ledger) Processed(name string, p int32, off int64, value string) bool {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	runs := lg.runs[name]
	if len(runs) == 0 || lg.faulted {
		return false
	}
	r := runs[len(runs)-1]
	if next, ok := r.next[p]; ok && off < next {
		// Going back inside a run is at-least-once only down to the
		// last commit that succeeded.
		r.rewinds[pos{p, off}] = true
		if c, ok := lg.commits[name][p]; ok && off < c {
			r.rewindBeyond += c - off
			note := fmt.Sprintf("%s partition %d: went back to %d after processing up to %d; %d was committed", name, p, off, next-1, c)
			lg.rewindNotes = append(lg.rewindNotes, note)
			if lg.onRewind != nil {
				lg.onRewind(note)
			}
		} else {
			r.within += next - off
		}
	}
	r.next[p] = off + 1
	r.processed[p] = append(r.processed[p], pos{p, off})
	r.values[pos{p, off}] = value
	return true
}

// tally counts what the checks found.
type tally struct {
	trials, faults                  int
	acked, lost, corrupt, invented  int64
	dupBeyond, dupWithin            int64
	notDense, readErrors, verifyBad int64
	committedAhead, skipped         int64
	dirtyReads                      int64 // processed, then taken by a power loss (read before durable)
	pastHead                        int64 // committed offsets a power loss left past the head (repair resets them)
	processed                       int64
	// rewound is the part of dupBeyond that is a consumer going back
	// below its last successful commit inside a run (the Kafka group; see
	// docs/reliability.md).
	rewound int64
	// bit flips: detected by verify, harmless (free space, or a time
	// index entry that answers the same), and changed without detection.
	detected, harmless, undetected int64
	repairedAway                   int64 // acknowledged records repair took out of the log, reported
	notes                          []string
}

func (t *tally) add(u tally) {
	t.trials += u.trials
	t.faults += u.faults
	t.acked += u.acked
	t.lost += u.lost
	t.corrupt += u.corrupt
	t.invented += u.invented
	t.dupBeyond += u.dupBeyond
	t.dupWithin += u.dupWithin
	t.notDense += u.notDense
	t.readErrors += u.readErrors
	t.verifyBad += u.verifyBad
	t.committedAhead += u.committedAhead
	t.skipped += u.skipped
	t.dirtyReads += u.dirtyReads
	t.pastHead += u.pastHead
	t.processed += u.processed
	t.rewound += u.rewound
	t.detected += u.detected
	t.harmless += u.harmless
	t.undetected += u.undetected
	t.repairedAway += u.repairedAway
	t.notes = append(t.notes, u.notes...)
}

// violations is the number of broken promises.
func (t *tally) violations() int64 {
	return t.lost + t.corrupt + t.invented + t.dupBeyond + t.notDense + t.readErrors + t.verifyBad + t.committedAhead + t.skipped
}

func (t *tally) notef(format string, args ...any) {
	if len(t.notes) < 20 {
		t.notes = append(t.notes, fmt.Sprintf(format, args...))
	}
}

// logView is what the checks read: each partition's records, and the
// extent of the log.
type logView struct {
	parts int
	start []int64
	head  []int64
	read  func(p int32, from int64) iter.Seq2[batch.Record, error]
}

// checkLog reads every partition of the log after recovery and checks it
// against the ledger: every acknowledged record at its offset with its
// bytes (acknowledged-durable ones always; the others, after a power
// loss, when they survived), dense offsets, nothing invented, no damaged
// record returned, duplicates only of records in flight at the fault.
// lossy says a power loss may have taken records acknowledged as only
// written to the OS. taken lists offsets a repair reported taken out.
func (lg *ledger) checkLog(v logView, lossy bool, t *tally) map[pos]string {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	stored := map[pos]string{}
	copies := map[string]int{}
	for p := range int32(v.parts) {
		next := v.start[p]
		for rec, err := range v.read(p, v.start[p]) {
			if err != nil {
				t.readErrors++
				t.notef("partition %d: read at offset %d: %v", p, next, err)
				break
			}
			if rec.Offset != next {
				t.notDense++
				t.notef("partition %d: offset %d after %d", p, rec.Offset, next-1)
			}
			next = rec.Offset + 1
			val := string(rec.Value)
			stored[pos{p, rec.Offset}] = val
			s := lg.sent[val]
			switch {
			case !valueIntact(rec.Value):
				t.corrupt++
				t.notef("partition %d offset %d: damaged value %q returned", p, rec.Offset, clip(rec.Value))
			case s == nil:
				t.invented++
				t.notef("partition %d offset %d: value %q never sent", p, rec.Offset, clip(rec.Value))
			case string(rec.Key) != s.key || len(rec.Headers) != 1 || string(rec.Headers[0].Value) != s.hdr || (s.part >= 0 && s.part != p):
				t.corrupt++
				t.notef("partition %d offset %d: record %q has key %q, headers %v (sent key %q, header %q, partition %d)", p, rec.Offset, val, rec.Key, rec.Headers, s.key, s.hdr, s.part)
			}
			copies[val]++
		}
		if next != v.head[p] {
			t.notDense++
			t.notef("partition %d: records end at %d, head %d", p, next, v.head[p])
		}
	}
	for val, n := range copies {
		if n < 2 {
			continue
		}
		if s := lg.sent[val]; s != nil && s.inFlight {
			t.dupWithin += int64(n - 1)
		} else {
			t.dupBeyond += int64(n - 1)
			t.notef("value %q stored %d times", val, n)
		}
	}
	for at, val := range lg.acks {
		t.acked++
		got, ok := stored[at]
		s := lg.sent[val]
		switch {
		case ok && got == val:
		case !ok && lossy && !s.durable && at.off >= v.head[at.part]:
			// Acknowledged as written to the OS only, and the power
			// went: it may go, with everything after it.
		default:
			t.lost++
			t.notef("acknowledged %q at partition %d offset %d: stored %q (present %v)", val, at.part, at.off, got, ok)
		}
	}
	return stored
}

// checkConsumers checks what each consumer processed against what the
// log holds (stored) and against its delivery mode's windows, and that
// no committed offset (committed[name][p], −1 none) runs ahead of what
// was processed.
func (lg *ledger) checkConsumers(stored map[pos]string, head []int64, committed map[string]map[int32]int64, t *tally) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	for name, runs := range lg.runs {
		d := lg.consumers[name]
		maxDone := map[int32]int64{} // highest offset processed by earlier runs
		for i, r := range runs {
			if !r.counted { // once, though a trial may check twice
				t.dupBeyond += r.rewindBeyond
				t.rewound += r.rewindBeyond
				t.dupWithin += r.within
				r.counted = true
			}
			for p, offs := range r.processed {
				start, ok := r.start[p]
				if i > 0 && ok {
					if prev, seen := maxDone[p]; seen {
						if lost, ok := lg.lostFrom[p]; ok && !r.beforeFault {
							prev = min(prev, lost-1) // what a power loss took is not there to read again
						}
						if c, ok := r.commitsBefore[p]; ok {
							if lost, ok := lg.lostFrom[p]; ok && !r.beforeFault {
								c = min(c, lost) // repair reset commits past what survived
							}
							if start < c {
								t.dupBeyond += c - start
								t.notef("%s partition %d: restarted at %d, below its last commit %d", name, p, start, c)
							} else if again := prev + 1 - start; again > 0 {
								t.dupWithin += again
							}
						} else if again := prev + 1 - start; again > d.dupWindow {
							t.dupBeyond += again - d.dupWindow
							t.notef("%s partition %d: restarted at %d after processing up to %d (window %d)", name, p, start, prev, d.dupWindow)
						} else if again > 0 {
							t.dupWithin += again
						}
						if skip := start - (prev + 1); skip > d.skipWindow {
							t.skipped += skip - d.skipWindow
							t.notef("%s partition %d: restarted at %d after processing up to %d: skipped", name, p, start, prev)
						}
					}
				}
				want := start
				for _, at := range offs {
					t.processed++
					if ok && at.off != want && !r.rewinds[at] {
						t.notDense++
						t.notef("%s partition %d: processed %d, expected %d", name, p, at.off, want)
					}
					want = at.off + 1
					val := r.values[at]
					got, present := stored[at]
					if lost, ok := lg.lostFrom[p]; ok && r.beforeFault && at.off >= lost {
						t.dirtyReads++ // processed, then taken by a power loss
					} else if present && got != val {
						t.corrupt++
						t.notef("%s processed %q at partition %d offset %d; the log holds %q", name, clip([]byte(val)), p, at.off, got)
					} else if !present {
						t.corrupt++
						t.notef("%s processed %q at partition %d offset %d; the log has no such record", name, clip([]byte(val)), p, at.off)
					}
					maxDone[p] = max(maxDone[p], at.off)
				}
			}
		}
		for _, n := range lg.rewindNotes { // also once
			t.notef("%s", n)
		}
		lg.rewindNotes = nil
		for p, c := range committed[name] {
			if c < 0 {
				continue
			}
			// Every offset below the committed one was processed (less
			// the skip window of at-most-once), and it is at most one
			// past the last processed.
			top, any := maxDone[p]
			if !any {
				top = -1
			}
			if c > top+1+d.skipWindow {
				t.committedAhead++
				t.notef("%s partition %d: committed %d, processed up to %d", name, p, c, top)
			}
		}
	}
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
