package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/storage"
)

// flipTargets are the files a bit-flip trial damages.
var flipTargets = []string{"segment", "index", "timeindex", "offsets"}

// bitFlip writes a data directory with the embedded workload, closes it,
// flips one random byte of a closed segment, an index or time index, or
// the offset database, and checks that verify reports it (or that it
// changed nothing anyone reads), that no damaged record is ever returned
// as data (reads fail with ErrCorrupt instead), and that after repair the
// log holds every acknowledged record it did not report taking out.
func (e *env) bitFlip() (t tally, target string) {
	t.trials = 1
	dir := e.dir()
	defer os.RemoveAll(dir)
	db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		t.verifyBad++
		t.notef("open: %v", err)
		return t, ""
	}
	lg := newLedger()
	w := &embedded{db: db, sink: lg, tag: e.tag(), producers: 3, rng: rand.New(rand.NewPCG(e.rng.Uint64(), 7))}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	err = w.run(ctx)
	cancel()
	if err != nil {
		t.notef("workload: %v", err)
	}
	before := committed(db, sortedKeys(lg.consumers))
	times := sampleTimes(db, e.rng)
	heads := map[int32]int64{}
	if v, err := view(db); err == nil {
		for p, h := range v.head {
			heads[int32(p)] = h
		}
	}
	if err := db.Close(); err != nil {
		t.notef("close: %v", err)
	}
	lg.Fault() // nothing is in flight: a closed log

	target = flipTargets[e.rng.IntN(len(flipTargets))]
	file, pos := e.flip(dir, target)
	if file == "" {
		return t, target // nothing to flip (no closed segment yet)
	}
	t.faults++

	r, err := passbook.Verify(dir, nil)
	if err != nil {
		t.verifyBad++
		t.notef("verify after a flip in %s at %d: %v", file, pos, err)
		return t, target
	}
	detected := !r.OK()

	// Read everything there is, crossing damage: nothing damaged may come
	// back as data.
	changed := false
	if db, err := passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1}); err == nil {
		for _, p := range db.PartitionProblems() {
			// Open fenced it: refused, as Open used to refuse the
			// whole directory.
			changed = true
			detected = detected || p.State == passbook.StateFenced
		}
		if v, err := view(db); err == nil {
			for p := range int32(v.parts) {
				e.readAcross(v, p, lg, &t, &changed)
			}
		}
		if !sameTimes(db, times) {
			changed = true // lookups by time answer differently
		}
		after := committed(db, sortedKeys(lg.consumers))
		for name, m := range before {
			for p, off := range m {
				if after[name][p] != off {
					changed = true
				}
			}
		}
		db.Close()
	} else {
		changed = true // refused at open: noticed
		detected = detected || errors.Is(err, storage.ErrCorrupt)
	}
	switch {
	case detected:
		t.detected++
	case !changed && (target == "offsets" || target == "timeindex"):
		// SQLite free space, or a time index entry moved to a batch
		// with the same newest timestamp: no read or lookup by time
		// answers differently. Every byte of a segment counts: the
		// fields outside the CRC (base offset, length, partition
		// leader epoch, magic, the CRC) are checked against what the
		// broker wrote, so a flip there is detected, never harmless.
		t.harmless++
	default:
		t.undetected++
		t.notef("a flip in %s at byte %d was not reported (changed what readers see: %v)", file, pos, changed)
		if target != "offsets" {
			t.verifyBad++
		}
	}

	// Repair, then every acknowledged record is there unless repair said
	// it took it out.
	rr, err := passbook.Repair(dir, nil)
	if err != nil {
		t.verifyBad++
		t.notef("repair: %v", err)
		return t, target
	}
	start := map[int32]int64{}
	for _, p := range rr.Partitions {
		if p.Repair != nil {
			start[p.Partition] = p.Repair.Start
		}
	}
	if !rr.OK() && target != "offsets" {
		t.verifyBad++
		t.notef("still wrong after repair of a flip in %s at %d: %v", file, pos, rr.AllProblems())
	}
	db, err = passbook.Open(dir, &passbook.Options{MinSegmentBytes: -1})
	if err != nil {
		if target != "offsets" {
			t.verifyBad++
		}
		t.notef("open after repair of a flip in %s: %v", file, err)
		return t, target
	}
	defer db.Close()
	v, err := view(db)
	if err != nil {
		t.verifyBad++
		return t, target
	}
	for p, h := range v.head {
		if h < heads[int32(p)] {
			t.lost++
			t.notef("partition %d: head %d after repair, %d before", p, h, heads[int32(p)])
		}
	}
	lg.mu.Lock()
	for at := range lg.acks {
		if at.off < start[at.part] {
			t.repairedAway++
			delete(lg.acks, at) // reported as taken out of the log, and kept aside
		}
	}
	lg.mu.Unlock()
	lg.checkLog(v, false, &t)
	return t, target
}

// readAcross reads partition p from its start to its head, going on past
// each record that fails to read, and checks every record returned.
func (e *env) readAcross(v logView, p int32, lg *ledger, t *tally, changed *bool) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	for from := v.start[p]; from < v.head[p]; {
		next := from
		var rerr error
		for rec, err := range v.read(p, from) {
			if err != nil {
				rerr = err
				break
			}
			next = rec.Offset + 1
			s := lg.sent[string(rec.Value)]
			if !valueIntact(rec.Value) || s == nil || string(rec.Key) != s.key || len(rec.Headers) != 1 || string(rec.Headers[0].Value) != s.hdr || s.acked && s.at != (pos{p, rec.Offset}) {
				t.corrupt++
				t.notef("partition %d offset %d: a damaged or misplaced record returned: %q", p, rec.Offset, clip(rec.Value))
			}
		}
		if rerr == nil {
			break
		}
		*changed = true
		if !errors.Is(rerr, storage.ErrCorrupt) {
			t.readErrors++
			t.notef("partition %d: read at %d failed without ErrCorrupt: %v", p, next, rerr)
		}
		from = next + 1 // skip the record that failed
	}
}

// flip XORs a random byte of a random target file with a random non-zero
// value.
func (e *env) flip(dir, target string) (file string, pos int64) {
	var candidates []string
	if target == "offsets" {
		candidates = []string{layout.OffsetsFile(dir)}
	} else {
		pdirs, _ := filepath.Glob(filepath.Join(layout.TopicDir(dir, topicName), "*"))
		for _, pd := range pdirs {
			logs, _ := filepath.Glob(filepath.Join(pd, "*.log"))
			slices.Sort(logs)
			if len(logs) < 2 {
				continue
			}
			for _, l := range logs[:len(logs)-1] { // closed segments only
				switch target {
				case "segment":
					candidates = append(candidates, l)
				case "index":
					candidates = append(candidates, strings.TrimSuffix(l, ".log")+".index")
				case "timeindex":
					candidates = append(candidates, strings.TrimSuffix(l, ".log")+".timeindex")
				}
			}
		}
	}
	if len(candidates) == 0 {
		return "", 0
	}
	file = candidates[e.rng.IntN(len(candidates))]
	b, err := os.ReadFile(file)
	if err != nil || len(b) == 0 {
		return "", 0
	}
	pos = e.rng.Int64N(int64(len(b)))
	b[pos] ^= byte(1 + e.rng.IntN(255))
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return "", 0
	}
	return file, pos
}

// timeLookup is an answer of OffsetForTime.
type timeLookup struct {
	part int32
	ms   int64
	off  int64
}

// sampleTimes asks OffsetForTime about up to 100 timestamps per
// partition, around those of its records, and returns the answers.
func sampleTimes(db *passbook.DB, rng *rand.Rand) []timeLookup {
	t, err := db.Topic(topicName)
	if err != nil {
		return nil
	}
	var out []timeLookup
	for p := range int32(t.Partitions()) {
		var ms []int64
		for rec, err := range t.Records(p, 0) {
			if err != nil {
				break
			}
			ms = append(ms, rec.Timestamp.UnixMilli())
		}
		l, err := t.Partition(p)
		if err != nil {
			continue
		}
		for range min(len(ms), 100) {
			m := ms[rng.IntN(len(ms))] + int64(rng.IntN(3)) - 1
			off, err := l.OffsetForTime(time.UnixMilli(m))
			if err != nil {
				off = -1
			}
			out = append(out, timeLookup{p, m, off})
		}
	}
	return out
}

// sameTimes reports whether OffsetForTime still answers as it did.
func sameTimes(db *passbook.DB, want []timeLookup) bool {
	t, err := db.Topic(topicName)
	if err != nil {
		return false
	}
	for _, w := range want {
		l, err := t.Partition(w.part)
		if err != nil {
			return false
		}
		if off, err := l.OffsetForTime(time.UnixMilli(w.ms)); err != nil || off != w.off {
			return false
		}
	}
	return true
}
