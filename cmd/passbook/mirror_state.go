package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// The mirror's state directory: what it has copied, durably, so that a
// mirror killed at any moment and started again resumes with nothing
// missing and nothing written twice, and translates every commit
// exactly.
//
//	STATE/
//	  mirror.json          the two ends it mirrors between (checked on start)
//	  maps/TOPIC/P.map     partition P's source→target offset map
//	  commits.json         the commits carried: each one's source and target offset
//
// A .map file is a sequence of 40-byte entries, each written and fsync'd
// after the target acknowledged the records it names and before any
// commit is translated with it:
//
//	0   srcStart  int64 big-endian   records srcStart … srcStart+n−1 of the source
//	8   tgtStart  int64              are target offsets tgtStart … tgtStart+n−1
//	16  n         int64              (0: the entry only moves covered on)
//	24  covered   int64              every source offset below it is on the target
//	32  crc       uint32             CRC-32C of bytes 0–31
//	36  zero      [4]byte
//
// The target's next offset is the last entry's tgtStart+n. A torn last
// entry (a kill mid-write) is dropped on open: the records it named are
// on the target, and the start's reconciliation finds them there. The
// layout is frozen: it is on disk.
const (
	mapEntrySize = 40
	stateFormat  = 1
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// mapRun is a run of source records that are dense on both sides.
type mapRun struct{ src, tgt, n int64 }

// mapEntry is one entry of a .map file.
type mapEntry struct {
	mapRun
	covered int64
}

func (e mapEntry) encode(b []byte) {
	binary.BigEndian.PutUint64(b[0:], uint64(e.src))
	binary.BigEndian.PutUint64(b[8:], uint64(e.tgt))
	binary.BigEndian.PutUint64(b[16:], uint64(e.n))
	binary.BigEndian.PutUint64(b[24:], uint64(e.covered))
	binary.BigEndian.PutUint32(b[32:], crc32.Checksum(b[:32], crc32c))
	clear(b[36:40])
}

// partMap is one partition's offset map, in memory and on disk.
type partMap struct {
	path    string
	f       *os.File
	runs    []mapRun
	covered int64 // every source offset below is mirrored
	tgtNext int64 // the target offset the next mirrored record gets
	tgtBase int64 // the target's head when the mirror first met it
	begun   bool  // an entry was written: tgtBase is known
}

// openPartMap opens (creating) a partition's map and reads it, dropping
// a torn tail.
func openPartMap(path string) (*partMap, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("mirror state: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mirror state: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("mirror state %s: %w", path, err)
	}
	m := &partMap{path: path, f: f}
	whole := 0
	for ; whole+mapEntrySize <= len(b); whole += mapEntrySize {
		e := b[whole : whole+mapEntrySize]
		if binary.BigEndian.Uint32(e[32:]) != crc32.Checksum(e[:32], crc32c) {
			if whole+mapEntrySize < len(b) {
				f.Close()
				return nil, fmt.Errorf("mirror state %s: entry at byte %d is damaged and is not the last: %w", path, whole, errMirrorState)
			}
			break // torn: the last write, cut short
		}
		m.apply(mapEntry{mapRun{
			src: int64(binary.BigEndian.Uint64(e[0:])), tgt: int64(binary.BigEndian.Uint64(e[8:])), n: int64(binary.BigEndian.Uint64(e[16:])),
		}, int64(binary.BigEndian.Uint64(e[24:]))})
	}
	if whole != len(b) {
		if err := f.Truncate(int64(whole)); err != nil {
			f.Close()
			return nil, fmt.Errorf("mirror state %s: %w", path, err)
		}
	}
	if _, err := f.Seek(int64(whole), io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("mirror state %s: %w", path, err)
	}
	return m, nil
}

var errMirrorState = errors.New("mirror state damaged")

func (m *partMap) apply(e mapEntry) {
	if !m.begun {
		m.begun, m.tgtBase = true, e.tgt
	}
	if e.n > 0 {
		if k := len(m.runs) - 1; k >= 0 && m.runs[k].src+m.runs[k].n == e.src && m.runs[k].tgt+m.runs[k].n == e.tgt {
			m.runs[k].n += e.n
		} else {
			m.runs = append(m.runs, e.mapRun)
		}
	}
	m.tgtNext = e.tgt + e.n
	m.covered = max(m.covered, e.covered)
}

// write appends entries durably (write, fsync), then applies them.
func (m *partMap) write(entries []mapEntry) error {
	if len(entries) == 0 {
		return nil
	}
	b := make([]byte, mapEntrySize*len(entries))
	for i, e := range entries {
		e.encode(b[i*mapEntrySize:])
	}
	if _, err := m.f.Write(b); err != nil {
		return fmt.Errorf("mirror state %s: %w", m.path, err)
	}
	if err := m.f.Sync(); err != nil {
		return fmt.Errorf("mirror state %s: fsync: %w", m.path, err)
	}
	for _, e := range entries {
		m.apply(e)
	}
	return nil
}

func (m *partMap) close() error { return m.f.Close() }

// identical reports whether every mirrored record has the same offset on
// the target as on the source.
func (m *partMap) identical() bool {
	for _, r := range m.runs {
		if r.src != r.tgt {
			return false
		}
	}
	return true
}

// translate is the target offset of a commit at source offset o (the
// next offset to read): the target offset of the first mirrored source
// record at or after o, or the target's next offset when none is. ok is
// false when the mirror has not yet copied everything below o: such a
// commit would point past records the target does not have.
func (m *partMap) translate(o int64) (t int64, ok bool) {
	if o > m.covered {
		return 0, false
	}
	i := sort.Search(len(m.runs), func(i int) bool { return m.runs[i].src+m.runs[i].n > o })
	if i == len(m.runs) {
		return m.tgtNext, true
	}
	r := m.runs[i]
	if o <= r.src {
		return r.tgt, true
	}
	return r.tgt + (o - r.src), true
}

// runsOf turns acknowledged records (source offsets src[i] at target
// offsets tgt[i], in order) into map entries, the last moving covered
// to coveredTo.
func runsOf(src, tgt []int64, coveredTo int64) []mapEntry {
	var out []mapEntry
	for i := range src {
		if k := len(out) - 1; k >= 0 && out[k].src+out[k].n == src[i] && out[k].tgt+out[k].n == tgt[i] {
			out[k].n++
			continue
		}
		out = append(out, mapEntry{mapRun: mapRun{src: src[i], tgt: tgt[i], n: 1}})
	}
	for i := range out {
		out[i].covered = out[i].src + out[i].n
	}
	if len(out) > 0 {
		out[len(out)-1].covered = max(out[len(out)-1].covered, coveredTo)
	}
	return out
}

// mirrorIdentity is mirror.json: the ends a state directory belongs to.
type mirrorIdentity struct {
	Format int    `json:"format"`
	Source string `json:"source"`
	Target string `json:"target"`
}

// carried is one commit the mirror put on the target.
type carried struct {
	Source int64 `json:"source"`
	Target int64 `json:"target"`
}

// mirrorState is an open state directory.
type mirrorState struct {
	dir     string
	lock    io.Closer
	parts   map[string]map[int32]*partMap
	carried map[string]carried // by commitKey
}

// openMirrorState opens (creating) dir for mirroring source to target:
// a directory made for other ends is refused, as is one another mirror
// has open.
func openMirrorState(dir, source, target string) (*mirrorState, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("mirror state: %w", err)
	}
	lock, err := lockStateDir(filepath.Join(dir, "LOCK"))
	if err != nil {
		return nil, err
	}
	s := &mirrorState{dir: dir, lock: lock, parts: map[string]map[int32]*partMap{}, carried: map[string]carried{}}
	want := mirrorIdentity{Format: stateFormat, Source: source, Target: target}
	idPath := filepath.Join(dir, "mirror.json")
	b, err := os.ReadFile(idPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := writeFileSync(idPath, mustJSON(want)); err != nil {
			lock.Close()
			return nil, err
		}
	case err != nil:
		lock.Close()
		return nil, fmt.Errorf("mirror state: %w", err)
	default:
		var got mirrorIdentity
		if err := json.Unmarshal(b, &got); err != nil {
			lock.Close()
			return nil, fmt.Errorf("mirror state %s: %w: %w", idPath, errMirrorState, err)
		}
		if got != want {
			lock.Close()
			return nil, usagef("--state %s holds the mirror of %s to %s, not of %s to %s: give another --state (or remove it to start over)",
				dir, got.Source, got.Target, source, target)
		}
	}
	b, err = os.ReadFile(filepath.Join(dir, "commits.json"))
	if err == nil {
		err = json.Unmarshal(b, &s.carried)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		lock.Close()
		return nil, fmt.Errorf("mirror state commits.json: %w", err)
	}
	return s, nil
}

// part opens a partition's map.
func (s *mirrorState) part(topic string, p int32) (*partMap, error) {
	if m := s.parts[topic][p]; m != nil {
		return m, nil
	}
	m, err := openPartMap(filepath.Join(s.dir, "maps", topic, strconv.Itoa(int(p))+".map"))
	if err != nil {
		return nil, err
	}
	if s.parts[topic] == nil {
		s.parts[topic] = map[int32]*partMap{}
	}
	s.parts[topic][p] = m
	return m, nil
}

func commitKey(group, topic string, p int32) string {
	return group + "\x00" + topic + "\x00" + strconv.Itoa(int(p))
}

// saveCarried replaces commits.json atomically.
func (s *mirrorState) saveCarried() error {
	return writeFileSync(filepath.Join(s.dir, "commits.json"), mustJSON(s.carried))
}

func (s *mirrorState) close() error {
	var err error
	for _, ps := range s.parts {
		for _, m := range ps {
			err = errors.Join(err, m.close())
		}
	}
	return errors.Join(err, s.lock.Close())
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// writeFileSync replaces path with b so that a kill or a power loss
// leaves the old file or the new one: a temporary file, fsync, rename,
// fsync of the directory.
func writeFileSync(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("mirror state: %w", err)
	}
	if _, err = io.Copy(f, bytes.NewReader(b)); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(filepath.Dir(path)); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("mirror state %s: %w", path, err)
	}
	return nil
}
