package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/passbook-log/passbook/batch"
	"github.com/passbook-log/passbook/vfs"
)

// indexCheck checks a segment's .index and .timeindex against its batches
// as a scan meets them, walking the (sparse) entries alongside.
//
// An offset index entry must name a batch start and that batch's base
// offset, in increasing order, the first one (0, 0). A time index entry
// is the running maximum timestamp at a batch that raised it, and that
// batch's relative offset — or the running maximum after a batch at its
// last offset (written when the segment is sealed, or the log closed);
// its first entry is the first batch's, when that has a timestamp, and a
// closed segment's last entry holds its newest timestamp.
type indexCheck struct {
	on                bool
	base              int64
	offPath, timePath string
	offs              []offsetEntry
	times             []timeEntry
	offFound          []int64          // base offset of the batch entry i leads to; −1: none
	timeOK            []bool           // time index entry i matches its batch
	byPos             map[uint32][]int // offset index entries by byte position
	byRel             map[uint32][]int // time index entries by relative offset
	runMax            int64            // running maximum timestamp
	first             bool             // the first batch is still to come
	damage            bool             // a damaged range was seen: timestamps unknown from then on
	bad               bool             // a problem was found
	problems          []Problem
}

func newIndexCheck(fsys vfs.FS, dir string, base int64, suffix string, on bool) *indexCheck {
	x := &indexCheck{on: on, base: base, runMax: -1, first: true,
		offPath:  filepath.Join(dir, segmentName(base, ".index")+suffix),
		timePath: filepath.Join(dir, segmentName(base, ".timeindex")+suffix),
		byPos:    map[uint32][]int{}, byRel: map[uint32][]int{},
	}
	if !on {
		return x
	}
	if b, ok := x.read(fsys, x.offPath, offsetEntrySize); ok {
		for i := 0; i+offsetEntrySize <= len(b); i += offsetEntrySize {
			e := offsetEntry{rel: binary.BigEndian.Uint32(b[i:]), pos: binary.BigEndian.Uint32(b[i+4:])}
			x.byPos[e.pos] = append(x.byPos[e.pos], len(x.offs))
			x.offs = append(x.offs, e)
		}
		x.offFound = make([]int64, len(x.offs))
		for i := range x.offFound {
			x.offFound[i] = -1
		}
	}
	if b, ok := x.read(fsys, x.timePath, timeEntrySize); ok {
		for i := 0; i+timeEntrySize <= len(b); i += timeEntrySize {
			e := timeEntry{ms: int64(binary.BigEndian.Uint64(b[i:])), rel: binary.BigEndian.Uint32(b[i+8:])}
			x.byRel[e.rel] = append(x.byRel[e.rel], len(x.times))
			x.times = append(x.times, e)
		}
		x.timeOK = make([]bool, len(x.times))
	}
	return x
}

// read returns an index file's bytes; a missing file reads as empty.
func (x *indexCheck) read(fsys vfs.FS, path string, entry int) ([]byte, bool) {
	kind := ProblemIndex
	if entry == timeEntrySize {
		kind = ProblemTimeIndex
	}
	b, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	if err != nil {
		x.problem(kind, path, -1, err.Error())
		return nil, false
	}
	if len(b)%entry != 0 {
		x.problem(kind, path, int64(len(b)-len(b)%entry), fmt.Sprintf("%d bytes is not a whole number of %d-byte entries", len(b), entry))
	}
	return b, true
}

func (x *indexCheck) problem(kind ProblemKind, file string, pos int64, detail string) {
	x.bad = true
	x.problems = append(x.problems, Problem{Kind: kind, File: file, Pos: pos, Detail: detail})
}

// batch meets the valid batch at pos.
func (x *indexCheck) batch(pos int64, h batch.Header) {
	if !x.on {
		return
	}
	if int64(uint32(pos)) == pos {
		for _, i := range x.byPos[uint32(pos)] {
			x.offFound[i] = h.BaseOffset
		}
	}
	if x.first {
		x.first = false
		if pos == 0 && (len(x.offs) == 0 || x.offs[0] != offsetEntry{}) {
			x.problem(ProblemIndex, x.offPath, 0, fmt.Sprintf("the first entry is not the first batch (offset %d, byte 0)", x.base))
		}
		if pos == 0 && h.MaxTimestamp >= 0 && (len(x.times) == 0 || x.times[0] != timeEntry{ms: h.MaxTimestamp}) {
			x.problem(ProblemTimeIndex, x.timePath, 0, fmt.Sprintf("the first entry is not the first batch's timestamp %d at offset %d", h.MaxTimestamp, x.base))
		}
	}
	if x.damage {
		return
	}
	raised := h.MaxTimestamp > x.runMax
	x.runMax = max(x.runMax, h.MaxTimestamp)
	first, last := uint32(h.BaseOffset-x.base), uint32(h.LastOffset()-x.base)
	for _, i := range x.byRel[first] {
		x.timeOK[i] = raised && x.times[i].ms == h.MaxTimestamp || first == last && x.times[i].ms == x.runMax
	}
	if last != first {
		for _, i := range x.byRel[last] {
			x.timeOK[i] = x.times[i].ms == x.runMax
		}
	}
}

// damaged meets a damaged range: timestamps cannot be followed past it,
// and entries that led into it are not reported (the damage is).
func (x *indexCheck) damaged(pos, end int64) {
	for p, is := range x.byPos {
		if int64(p) >= pos && int64(p) < end {
			for _, i := range is {
				x.offFound[i] = x.base + int64(x.offs[i].rel) // not reported
			}
		}
	}
	x.damage = true
}

// finish reports the entries that matched no batch, and entries out of
// order among those that did.
func (x *indexCheck) finish(s *segScan) []Problem {
	if !x.on {
		return x.problems
	}
	prev := -1
	for i, e := range x.offs {
		switch found := x.offFound[i]; {
		case found < 0:
			x.offProblem(i, "does not lead to the start of a batch")
		case found != x.base+int64(e.rel):
			x.offProblem(i, fmt.Sprintf("leads to the batch at offset %d", found))
		case prev >= 0 && (e.rel <= x.offs[prev].rel || e.pos <= x.offs[prev].pos):
			x.offProblem(i, "is not after the entry before it")
		default:
			prev = i
		}
	}
	if s.size > 0 && len(x.offs) == 0 && len(s.damage) == 0 {
		x.problem(ProblemIndex, x.offPath, -1, "empty, for a segment that is not")
	}
	if x.damage {
		return x.problems
	}
	last := int64(-1)
	if s.next > s.base {
		last = s.next - 1 - s.base
	}
	prev = -1
	for i, e := range x.times {
		if i == len(x.times)-1 && int64(e.rel) == last && e.ms == x.runMax {
			x.timeOK[i] = true // the entry the seal adds
		}
		switch {
		case !x.timeOK[i]:
			x.timeProblem(i, "no batch raised the newest timestamp to it at that offset")
		case prev >= 0 && (e.rel <= x.times[prev].rel || e.ms <= x.times[prev].ms):
			x.timeProblem(i, "is not after the entry before it")
		default:
			prev = i
		}
	}
	if !s.active && x.runMax >= 0 && (len(x.times) == 0 || x.times[len(x.times)-1].ms != x.runMax) {
		x.problem(ProblemTimeIndex, x.timePath, -1, fmt.Sprintf("the segment's newest timestamp %d is not its last entry (retention by age would see an older one)", x.runMax))
	}
	return x.problems
}

func (x *indexCheck) offProblem(i int, what string) {
	e := x.offs[i]
	x.problem(ProblemIndex, x.offPath, int64(i)*offsetEntrySize, fmt.Sprintf("entry (offset %d, byte %d) %s", x.base+int64(e.rel), e.pos, what))
}

func (x *indexCheck) timeProblem(i int, what string) {
	e := x.times[i]
	x.problem(ProblemTimeIndex, x.timePath, int64(i)*timeEntrySize, fmt.Sprintf("entry (time %d, offset %d): %s", e.ms, x.base+int64(e.rel), what))
}
