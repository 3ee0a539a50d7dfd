package storage

import (
	"hash/maphash"
	"math"
	"math/bits"
)

// keyMap is the cleaner's key → newest offset map for one pass: an open
// addressing hash table of 16-byte slots holding 96 bits of hashes of the
// key (not the key) and the offset relative to the pass's first. Two keys
// whose 96 bits collide would be taken for one, and the older one's
// newest record dropped: with the seeds drawn anew for every pass, that
// is about n²/2⁹⁷ per pass of n keys — 10⁻¹⁷ for a million keys. (Kafka's
// cleaner takes the same bet with 128-bit MD5 hashes.)
//
// The table starts small and grows by half up to its budget, keeping at
// most three quarters of the slots full (so 21 to 32 bytes a key); put
// reports false once a key does not fit, and the pass ends there.
type keyMap struct {
	slots        []keySlot
	n            int   // keys
	maxSlots     int   // the budget
	base         int64 // offsets are stored as offset − base + 1; 0 is an empty slot
	seed1, seed2 maphash.Seed
}

type keySlot struct {
	h1  uint64
	h2  uint32
	off uint32
}

// keySlotBytes is the size of a slot: the map's memory is this times the
// number of slots, at most CleanerBufferBytes.
const keySlotBytes = 16

const initialKeySlots = 1 << 12

// newKeyMap returns an empty map for offsets from base on, that may grow
// to budget bytes.
func newKeyMap(budget int, base int64) *keyMap {
	maxSlots := budget / keySlotBytes
	m := &keyMap{maxSlots: maxSlots, base: base, seed1: maphash.MakeSeed(), seed2: maphash.MakeSeed()}
	m.resize(min(initialKeySlots, maxSlots))
	return m
}

func (m *keyMap) resize(n int) {
	old := m.slots
	m.slots = make([]keySlot, n)
	for _, s := range old {
		if s.off != 0 {
			i := m.home(s.h1)
			for m.slots[i].off != 0 {
				i = m.after(i)
			}
			m.slots[i] = s
		}
	}
}

// home is the first slot to probe for hash h: h scaled to the table size.
func (m *keyMap) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(m.slots)))
	return int(hi)
}

// after is the slot probed after slot i.
func (m *keyMap) after(i int) int {
	if i++; i == len(m.slots) {
		return 0
	}
	return i
}

// fits reports whether off can be stored: offsets are kept in 32 bits.
func (m *keyMap) fits(off int64) bool { return off-m.base+1 < math.MaxUint32 }

// put records off as key's newest offset. Offsets come in increasing
// order, so a key seen before is simply overwritten. It returns false,
// recording nothing, when the key is new and the map is full.
func (m *keyMap) put(key []byte, off int64) bool {
	h1, h2 := maphash.Bytes(m.seed1, key), uint32(maphash.Bytes(m.seed2, key))
	rel := uint32(off - m.base + 1)
	for {
		i := m.home(h1)
		for {
			s := &m.slots[i]
			if s.off == 0 {
				break
			}
			if s.h1 == h1 && s.h2 == h2 {
				s.off = rel
				return true
			}
			i = m.after(i)
		}
		if (m.n+1)*4 <= len(m.slots)*3 {
			m.slots[i] = keySlot{h1: h1, h2: h2, off: rel}
			m.n++
			return true
		}
		if len(m.slots) >= m.maxSlots {
			return false
		}
		m.resize(min(len(m.slots)+len(m.slots)/2, m.maxSlots)) // then probe again
	}
}

// get returns key's newest offset, if the map has it.
func (m *keyMap) get(key []byte) (int64, bool) {
	h1, h2 := maphash.Bytes(m.seed1, key), uint32(maphash.Bytes(m.seed2, key))
	for i := m.home(h1); ; i = m.after(i) {
		s := &m.slots[i]
		if s.off == 0 {
			return 0, false
		}
		if s.h1 == h1 && s.h2 == h2 {
			return m.base + int64(s.off) - 1, true
		}
	}
}

// bytes is the memory the map holds.
func (m *keyMap) bytes() int { return len(m.slots) * keySlotBytes }
