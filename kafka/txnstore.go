package kafka

// The transaction coordinator's durable state: DIR/transactions.log.
//
// One file in the data directory, appended to and fsync'd before every
// answer that depends on what it records. It is a log of whole states:
// each record is the complete state of one transactional id (producer
// id and epoch, state, partitions, groups, pending offsets), and the
// last record of an id is its state. Layout:
//
//	file   := magic record*
//	magic  := "pbtxnlog" 0x00 0x00 0x00 0x01   (12 bytes)
//	record := length:uint32 crc:uint32 payload   (big endian)
//
// length is the payload's size and crc its CRC-32C (Castagnoli); the
// payload is a JSON txnRecord. The magic and the framing are frozen:
// they are on disk. JSON keeps the payload readable with `strings` and
// lets fields be added without a format version.
//
// Open reads every record; a torn tail (a record cut short, or a last
// record whose CRC fails and that reaches the end of the file) is the
// trace of a crash in the middle of an append and is truncated, as the
// logs' tails are; a damaged record followed by more data is corruption
// and refused with an error naming the file and the position. When the
// file grows past four times the size of the live states (and past
// txnCompactMin), it is rewritten with only those: a temporary file,
// fsync'd, renamed over the log, and the directory fsync'd.

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
	"sync"

	"github.com/passbook-log/passbook/internal/layout"
	"github.com/passbook-log/passbook/vfs"
)

const (
	txnLogName    = layout.Transactions // in the data directory; frozen
	txnLogMagic   = "pbtxnlog\x00\x00\x00\x01"
	txnFrameSize  = 8
	txnMaxRecord  = 64 << 20 // a record claiming more is damage
	txnCompactMin = 4 << 20
)

var (
	errTxnStoreCorrupt = errors.New("kafka: transaction log is damaged")
	errTxnStoreFailed  = errors.New("kafka: transaction log can no longer be written")
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// txnRecord is one transactional id's state as stored.
type txnRecord struct {
	ID             string         `json:"id"`
	ProducerID     int64          `json:"producer_id"`
	PrevProducerID int64          `json:"prev_producer_id"`
	Epoch          int16          `json:"epoch"`
	LastEpoch      int16          `json:"last_epoch"`
	State          string         `json:"state"`
	TimeoutMs      int32          `json:"timeout_ms"`
	StartMs        int64          `json:"start_ms"`
	UpdatedMs      int64          `json:"updated_ms"`
	Partitions     []txnPartition `json:"partitions,omitempty"`
	Groups         []string       `json:"groups,omitempty"`
	Offsets        []txnOffset    `json:"offsets,omitempty"`
}

type txnPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// txnOffset is an offset a transaction commits for a group.
type txnOffset struct {
	Group       string `json:"group"`
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
}

// txnStore is the transaction log file. put appends a record and
// returns once it is fsync'd; concurrent puts share an fsync.
type txnStore struct {
	fsys       vfs.FS
	dir        string
	path       string
	compactMin int64 // txnCompactMin

	syncMu sync.Mutex // held by the one fsync in progress, and by compaction
	synced uint64     // puts made durable; guarded by syncMu

	mu struct {
		sync.Mutex
		f       vfs.File
		size    int64
		written uint64           // puts written
		live    map[string]int64 // bytes of each id's last record
		liveSum int64            // their sum
		err     error            // sticky: a failed write or fsync
	}
}

// openTxnStore opens (creating if needed) dir's transaction log and
// returns it with the last state of every transactional id.
func openTxnStore(fsys vfs.FS, dir string) (*txnStore, []txnRecord, error) {
	path := filepath.Join(dir, txnLogName)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: open transaction log: %w", err)
	}
	st := &txnStore{fsys: fsys, dir: dir, path: path, compactMin: txnCompactMin}
	st.mu.f = f
	st.mu.live = map[string]int64{}
	recs, err := st.load()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return st, recs, nil
}

// load reads the file, truncating a torn tail, and returns the last
// record of each id, sorted by id.
func (st *txnStore) load() ([]txnRecord, error) {
	f := st.mu.f
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("kafka: transaction log: %w", err)
	}
	size := fi.Size()
	if size == 0 {
		if _, err := f.Write([]byte(txnLogMagic)); err != nil {
			return nil, fmt.Errorf("kafka: transaction log: %w", err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("kafka: transaction log: %w", err)
		}
		if err := st.fsys.SyncDir(st.dir); err != nil {
			return nil, fmt.Errorf("kafka: transaction log: %w", err)
		}
		st.mu.size = int64(len(txnLogMagic))
		return nil, nil
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("kafka: read transaction log: %w", err)
	}
	if len(data) < len(txnLogMagic) || string(data[:len(txnLogMagic)]) != txnLogMagic {
		if len(data) < len(txnLogMagic) && bytes.HasPrefix([]byte(txnLogMagic), data) {
			// Cut short while being created: nothing was in it.
			if err := f.Truncate(0); err != nil {
				return nil, fmt.Errorf("kafka: transaction log: %w", err)
			}
			return st.load()
		}
		return nil, fmt.Errorf("%w: %s does not start with passbook's transaction log header", errTxnStoreCorrupt, st.path)
	}
	last := map[string]txnRecord{}
	pos := int64(len(txnLogMagic))
	for pos < size {
		rest := data[pos:]
		torn := func() error {
			// Nothing whole follows: the tail of an interrupted append.
			if err := f.Truncate(pos); err != nil {
				return fmt.Errorf("kafka: truncate transaction log's torn tail: %w", err)
			}
			if err := f.Sync(); err != nil {
				return fmt.Errorf("kafka: transaction log: %w", err)
			}
			size = pos
			return nil
		}
		if len(rest) < txnFrameSize {
			if err := torn(); err != nil {
				return nil, err
			}
			break
		}
		n := int64(binary.BigEndian.Uint32(rest))
		sum := binary.BigEndian.Uint32(rest[4:])
		if n > txnMaxRecord {
			return nil, fmt.Errorf("%w: %s at byte %d: a record of %d bytes", errTxnStoreCorrupt, st.path, pos, n)
		}
		if int64(len(rest)) < txnFrameSize+n {
			if err := torn(); err != nil {
				return nil, err
			}
			break
		}
		payload := rest[txnFrameSize : txnFrameSize+n]
		if crc32.Checksum(payload, crc32c) != sum {
			if pos+txnFrameSize+n == size {
				if err := torn(); err != nil {
					return nil, err
				}
				break
			}
			return nil, fmt.Errorf("%w: %s at byte %d: checksum mismatch", errTxnStoreCorrupt, st.path, pos)
		}
		var r txnRecord
		if err := json.Unmarshal(payload, &r); err != nil || r.ID == "" {
			return nil, fmt.Errorf("%w: %s at byte %d: undecodable record", errTxnStoreCorrupt, st.path, pos)
		}
		last[r.ID] = r
		st.mu.liveSum += txnFrameSize + n - st.mu.live[r.ID]
		st.mu.live[r.ID] = txnFrameSize + n
		pos += txnFrameSize + n
	}
	st.mu.size = size
	recs := make([]txnRecord, 0, len(last))
	for _, r := range last {
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return recs, nil
}

func encodeTxnRecord(r *txnRecord) ([]byte, error) {
	payload, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	b := make([]byte, txnFrameSize, txnFrameSize+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(payload, crc32c))
	return append(b, payload...), nil
}

// put appends r and, with sync, returns once it is durable (without,
// once it is in the operating system: the next sync, or close, makes it
// durable). After a failed write or fsync every put fails
// (errTxnStoreFailed): the coordinator must not answer as if a state
// were recorded when it might not be.
func (st *txnStore) put(r *txnRecord, sync bool) error {
	b, err := encodeTxnRecord(r)
	if err != nil {
		return fmt.Errorf("kafka: encode transaction state: %w", err)
	}
	st.mu.Lock()
	if st.mu.err != nil {
		err := st.mu.err
		st.mu.Unlock()
		return err
	}
	if _, err := st.mu.f.Write(b); err != nil { // O_APPEND
		st.mu.err = fmt.Errorf("%w: write %s: %w", errTxnStoreFailed, st.path, err)
		err := st.mu.err
		st.mu.Unlock()
		return err
	}
	st.mu.size += int64(len(b))
	st.mu.liveSum += int64(len(b)) - st.mu.live[r.ID]
	st.mu.live[r.ID] = int64(len(b))
	st.mu.written++
	mine := st.mu.written
	st.mu.Unlock()
	if !sync {
		return nil
	}

	st.syncMu.Lock()
	defer st.syncMu.Unlock()
	if st.synced >= mine {
		return nil // someone's fsync covered this put
	}
	st.mu.Lock()
	upTo, f, err := st.mu.written, st.mu.f, st.mu.err
	st.mu.Unlock()
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		st.mu.Lock()
		st.mu.err = fmt.Errorf("%w: fsync %s: %w", errTxnStoreFailed, st.path, err)
		err := st.mu.err
		st.mu.Unlock()
		return err
	}
	st.synced = upTo
	return nil
}

// needsCompaction reports whether the file is mostly old states.
func (st *txnStore) needsCompaction() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.err == nil && st.mu.size > st.compactMin && st.mu.size > 4*st.mu.liveSum
}

// compact rewrites the log with recs, the current state of every id.
// The caller must hold every id's lock, so that no put races it.
func (st *txnStore) compact(recs []txnRecord) error {
	st.syncMu.Lock()
	defer st.syncMu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mu.err != nil {
		return st.mu.err
	}
	if err := st.compactLocked(recs); err != nil {
		return err
	}
	st.synced = st.mu.written
	return nil
}

func (st *txnStore) compactLocked(recs []txnRecord) error {
	tmp := st.path + ".tmp"
	f, err := st.fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("kafka: compact transaction log: %w", err)
	}
	buf := []byte(txnLogMagic)
	live := map[string]int64{}
	sum := int64(0)
	for i := range recs {
		b, err := encodeTxnRecord(&recs[i])
		if err != nil {
			f.Close()
			return fmt.Errorf("kafka: compact transaction log: %w", err)
		}
		buf = append(buf, b...)
		live[recs[i].ID] = int64(len(b))
		sum += int64(len(b))
	}
	fail := func(err error) error {
		f.Close()
		st.fsys.Remove(tmp)
		return fmt.Errorf("kafka: compact transaction log: %w", err)
	}
	if _, err := f.Write(buf); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := st.fsys.Rename(tmp, st.path); err != nil {
		return fail(err)
	}
	// If the directory's fsync fails the rename may or may not survive
	// a power loss; both files hold every live state, so either is
	// right, and the new one is used from here on.
	dirErr := st.fsys.SyncDir(st.dir)
	st.mu.f.Close()
	st.mu.f, st.mu.size, st.mu.live, st.mu.liveSum = f, int64(len(buf)), live, sum
	if dirErr != nil {
		return fmt.Errorf("kafka: compact transaction log: %w", dirErr)
	}
	return nil
}

func (st *txnStore) close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mu.f == nil {
		return nil
	}
	var err error
	if st.mu.err == nil {
		err = st.mu.f.Sync()
	}
	err = errors.Join(err, st.mu.f.Close())
	st.mu.f = nil
	if st.mu.err == nil {
		st.mu.err = fmt.Errorf("%w: closed", errTxnStoreFailed)
	}
	return err
}
