package storage

import (
	"bytes"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// FuzzVerify lays arbitrary bytes out as a partition's segment, index or
// time index, as FuzzRecover does, and checks Verify and Repair on them:
// neither panics nor fails; when Verify finds nothing wrong, Open opens
// the partition and every record reads back without an error; and Repair
// always leaves a partition that Verify finds clean, that Open opens at a
// head not below the one Verify saw (no offset is reused), and all of
// whose records read back.
func FuzzVerify(f *testing.F) {
	seg, index, timeIndex := validSegment()
	for v := range uint8(fuzzVariants) {
		data := seg
		switch v {
		case fuzzIndexActive, fuzzIndexClosed:
			data = index
		case fuzzTimeIndexClosed:
			data = timeIndex
		}
		f.Add(v, false, data)
		torn := bytes.Clone(data[:len(data)*2/3])
		f.Add(v, false, torn)
		flipped := bytes.Clone(data)
		flipped[len(flipped)/2] ^= 0x10
		f.Add(v, true, flipped)
	}
	f.Fuzz(func(t *testing.T, variant uint8, fixCRC bool, data []byte) {
		data = bytes.Clone(data)
		if fixCRC {
			fixCRCs(data)
		}
		mem := vfs.NewMem()
		layoutFuzzPartition(mem, variant%fuzzVariants, data)
		r, err := Verify("/p", &VerifyOptions{FS: mem})
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		{
			// A partition that Open refuses (and a data directory fences)
			// is one verify says is fenced. (Verify checks index files more
			// closely than Open, so it may say fenced of a closed segment's
			// damage that Open does not read.)
			cp := vfs.NewMem()
			layoutFuzzPartition(cp, variant%fuzzVariants, data)
			l, err := Open("/p", fuzzOptions(cp))
			if err != nil && r.Fenced == "" {
				t.Fatalf("verify says fenced %q (problems %v); Open: %v", r.Fenced, r.Problems, err)
			}
			if l != nil {
				l.Close()
			}
		}
		if onlyTorn(r) {
			// One rule for Open and Verify: a torn tail is what Open
			// truncates, and the head is where Verify says it is.
			// (On a copy: Repair below starts from the bytes as they are.)
			cp := vfs.NewMem()
			layoutFuzzPartition(cp, variant%fuzzVariants, data)
			l, err := Open("/p", fuzzOptions(cp))
			if err != nil {
				t.Fatalf("verify found at most a torn tail (%v), Open failed: %v", r.Problems, err)
			}
			if l.Head() != r.Head {
				t.Fatalf("verify found at most a torn tail (%v) and head %d; Open's head is %d", r.Problems, r.Head, l.Head())
			}
			l.Close()
		}
		if r.OK() {
			l, err := Open("/p", fuzzOptions(mem))
			if err != nil {
				t.Fatalf("verify found nothing wrong, Open failed: %v", err)
			}
			readAll(t, l, "verify found nothing wrong")
			l.Close()
		}
		rep, err := Repair("/p", &RepairOptions{FS: mem})
		if err != nil {
			t.Fatalf("repair: %v (verify found %v)", err, r.Problems)
		}
		if !rep.After.OK() {
			t.Fatalf("after repair of %v: %v", r.Problems, rep.After.Problems)
		}
		l, err := Open("/p", fuzzOptions(mem))
		if err != nil {
			t.Fatalf("open after repair of %v: %v", r.Problems, err)
		}
		defer l.Close()
		if l.Head() < r.Head {
			t.Fatalf("head %d after repair, %d before: offsets would be reused", l.Head(), r.Head)
		}
		readAll(t, l, "after repair")
	})
}

// onlyTorn reports whether every problem r holds is a torn tail.
func onlyTorn(r *VerifyReport) bool {
	for _, p := range r.Problems {
		if p.Kind != ProblemTornTail {
			return false
		}
	}
	return true
}

// readAll reads every record of l from its start, failing on any error.
func readAll(t *testing.T, l *Log, what string) {
	t.Helper()
	next := l.StartOffset()
	for rec, err := range l.Records(next) {
		if err != nil {
			t.Fatalf("%s: read at offset %d: %v", what, next, err)
		}
		next = rec.Offset + 1
	}
}
