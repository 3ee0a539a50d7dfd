// Package storage is passbook's storage engine: one partition's durable,
// append-only log of Kafka record batches, split into segments.
//
// It knows nothing of topics, consumers, networks or metrics: it hands out
// offsets 0, 1, 2, … at append, never reuses or changes them, and lets any
// number of readers iterate from any offset while one writer appends.
//
// # Files
//
// A partition is a directory:
//
//	FORMAT                      "passbook-partition 1\n" (2 once compacted)
//	LOCK                        flock'd by the owning process; holds its pid
//	CHECKPOINT                  recovery point (see below)
//	CLEANER                     compaction state (see Compaction)
//	LOGSTART                    a log start offset DeleteRecords moved (see logstart.go)
//	00000000000000000000.log        record batches, back to back
//	00000000000000000000.index      sparse offset index
//	00000000000000000000.timeindex  sparse time index
//	00000000000000000000.txnindex   aborted transactions (only once transactions came; txnindex.go)
//	TXN                             from which segment on each has a .txnindex (txnindex.go)
//	00000000000000051234.log        the next segment, named by its base offset
//	…
//
// A .log file is a sequence of Kafka RecordBatch v2 (see package batch),
// each carrying its own length and CRC-32C, with base offsets patched to
// their place in the partition. The newest segment is the active one; all
// appends go there, and it rolls to a new segment when it reaches
// Options.SegmentBytes or Options.SegmentAge. Where the file system can
// map files (vfs.MapFS), the active segment is written through a shared
// mapping with its space allocated ahead (mapwrite.go): while it is
// active its file is longer than its batches, the rest zeros. A closed
// segment, and the active one after a clean Close, end exactly with their
// last batch, as with write(2); a file that was never closed cleanly may
// hold anything after its batches (allocated zeros, a page the disk kept
// from before), which Open cuts as a torn tail.
//
// A .index file holds 8-byte big-endian entries (relative offset uint32,
// byte position uint32), one for the first batch after every
// Options.IndexInterval bytes: the batch at that position has base offset
// segmentBase + relative offset. A .timeindex file holds 12-byte entries
// (timestamp int64 ms, relative offset uint32): the largest timestamp seen
// so far in the segment and the base offset of the batch that raised it.
// Both are sparse, so memory and seek cost do not grow with log size, and
// both can be rebuilt from the .log file.
//
// CHECKPOINT holds 33 bytes: magic "PBCK" (4), version (1), the active
// segment's base offset (8), a byte position in it up to which the log was
// fsync'd (8), a clean-shutdown flag (1), reserved (7), and a CRC-32C of
// the preceding bytes (4). It is created atomically (write, fsync,
// rename, fsync directory) and then updated in place: one write of its 33
// bytes at offset 0 and one fdatasync. A power loss during an update may
// leave it torn, old bytes and new mixed: the right size, magic, version
// and reserved bytes but a bad CRC. Open treats a torn checkpoint as
// none (not clean, nothing of the active segment known fsync'd: it is
// re-validated from its start and damage in it is a torn tail), which
// loses nothing fsync'd; any other damage to CHECKPOINT is corruption.
//
// Everything above is frozen: it is what existing data directories hold.
// A change needs a new FORMAT version and a migration. (Version 2 is
// version 1 plus what compaction adds, below; the cleaner moves a
// partition to it before its first CLEANER, so that a passbook that does
// not know compaction refuses the partition instead of reporting its gaps
// as corruption.)
//
// # Recovery
//
// Closed segments were fsync'd, with their indexes, before the next one
// was created. So after a crash only the active segment can be damaged. On
// open it is re-read batch by batch and every CRC checked, unless the
// checkpoint says the last shutdown was clean and the file ends exactly
// where the checkpoint says. A batch that fails inside the checkpointed
// (fsync'd) range is corruption: Open refuses with a *CorruptError naming
// the file and byte position. A batch that fails after it is a torn write:
// the tail is truncated to the last whole batch and the dropped byte count
// reported in Recovery. That holds even when whole valid batches follow
// the damage: the page cache writes unsynced pages back in any order, so a
// power loss can keep a later page and lose an earlier one, and only
// unsynced bytes go. Verify classifies damage by the same rule (tornTail).
//
// # Durability
//
// Each append says what returning means (see Durability): the batch is in
// the operating system (it survives the process being killed), or it was
// fsync'd (it survives power loss), or it will be within
// Options.SyncInterval. Concurrent fsync'd appends share one fsync. After
// a failed write or fsync every later append fails with ErrUnwritable: the
// log never pretends a write happened. A failed write (ENOSPC, EROFS,
// EMFILE) is retried with backoff and the log takes appends again once
// the disk does (see recover.go and Log.Health); after a failed fsync it
// refuses them until reopened.
//
// # Reading
//
// Every batch carries its CRC, and what reads it decides how often to
// check it. Each segment keeps, since the log was opened, the prefix of
// its .log file known to be good batches: the writer extends it over
// every batch it writes (each was validated, CRC and every record,
// before it was written), and a reader over each batch it checked. A
// Reader (Records, Follow, passbook consume, the HTTP API) checks every
// batch's CRC as it decodes it, every time: nothing checks after it. A
// Kafka fetch (ReadBatches) checks only the batches past the prefix —
// found on disk at open, such as a closed segment a clean Open did not
// read, once, by the first fetch that passes, and a fetch that starts
// past the prefix first checks up to 4 MiB of what lies between, so that
// the prefix catches up with the fetches — and otherwise reads only
// batch headers (skipping through the sparse index over many small
// batches), so that the server can hand the file's bytes to sendfile(2)
// (Chunk.OSFile) without reading them.
//
// This is Kafka's choice: a broker does not re-check the CRCs of what it
// serves, the client does (franz-go and the Java client by default).
// What it means for bit rot: a batch that goes bad on disk after it was
// written or first checked by this process is served as it is to Kafka
// clients, who refuse it (franz-go reports a CRC error, the Java client
// a CorruptRecordException), while a Reader and passbook verify report it
// as a *CorruptError naming the file and position; after a restart the
// first fetch finds it too. passbook verify reads everything.
//
// # Transactions
//
// Kafka's transactions are stored as Kafka stores them (txn.go):
// transactional batches (attribute 0x10) and control batches (0x30, one
// control record: a commit or abort marker, which takes an offset). A
// partition keeps its open transactions and last stable offset in memory
// and an aborted-transaction index per segment (.txnindex, whose layout
// and rules txnindex.go draws). What is durable when: the batches and
// markers exactly as any batch (Durability); the index is derived from
// them and never trusted over them. Closed segments' .txnindex files are
// fsync'd when the segment is sealed; the active segment's is rebuilt
// from the segment after an unclean shutdown, and a torn tail drops the
// index entries of the markers it held, and their effect (a transaction
// whose marker was torn off is open again, as in the log). A partition
// that never saw a transaction has no such file.
//
// # Compaction
//
// A log opened with Options.Compact is compacted (Kafka's
// cleanup.policy=compact): every record has a key, and a cleaner
// rewrites closed segments keeping, for every key, only its newest
// record. The active segment is never rewritten, and no record changes
// offset: compaction leaves gaps, which readers cross without a word — a
// reader (or a consumer whose committed offset is in a gap) goes on at
// the next record kept. A tombstone (a keyed record with a nil value)
// stays DeleteRetention after the cleaner first saw it, so that a
// consumer that keeps up catches the delete, and is then removed; one
// that lags more than that may miss it, as in Kafka.
//
// The gap rule. Compaction keeps every batch's offset span — its base
// offset and last offset delta, its timestamps and producer fields, as
// Kafka does (KAFKA-5443) — and writes one empty batch (no records) over
// each run of batches it emptied. So in every segment, cleaned or not,
// batches follow one another offset by offset from the segment's base,
// and segments follow one another: Open and readers keep checking that
// chain as before. Only inside a batch of a segment the cleaner may have
// rewritten do records skip offsets: there they must increase strictly
// and stay inside the batch's span, and a batch may hold fewer records
// than offsets, or none. Everywhere else records run base, base+1, … to
// the batch's last offset, as checked before compaction existed.
//
// A cleaning pass reads the dirty records — from the first dirty offset
// (CLEANER's cleaned point) up to the active segment — into a map of key
// hashes to newest offsets (Options.CleanerBufferBytes bounds it; keys
// that do not fit end the pass early, and the next pass goes on from
// there), then rewrites every closed segment below the pass's end,
// dropping records a newer one of the same key supersedes and tombstones
// past the horizon. Consecutive segments that fit in SegmentBytes
// together are rewritten into one. Each rewrite is written as
// <base>.log.cleaned, <base>.index.cleaned and <base>.timeindex.cleaned
// and swapped in.
//
// CLEANER holds: magic "PBCL" (4), version 1 (1), then big-endian int64s:
// the cleaned point (the first dirty offset), the rewritten point
// (segments with a base below it may have been rewritten: the gap rule
// applies to them), the tombstone horizon (tombstones below it may be
// removed), and the base and end offsets of the last swap committed
// (end > base; 0, 0 for none); a mark count (uint16, at most 64) and the
// marks, 24 bytes each (end offset, time in ms, tombstone count: the
// tombstones below end, and not below the end of the mark before, were
// first seen at that time); and a CRC-32C of all that (4). It is
// replaced atomically (write, fsync, rename, fsync directory).
//
// The swap of a cleaned segment at base B replacing the segments with
// bases in [B, E) goes through these states; Open recovers from each:
//
//	writing     B.*.cleaned are written, fsync'd, the directory fsync'd.
//	            A crash here: CLEANER names no swap of B, so Open removes
//	            every *.cleaned file: the old segments stay (roll back).
//	commit      CLEANER is replaced with swap = [B, E) and rewritten ≥ E.
//	            From here Open completes the swap (roll forward).
//	rename      B.index.cleaned, B.timeindex.cleaned, B.log.cleaned are
//	            renamed over B.index, B.timeindex, B.log.
//	remove      the .log, then the indexes, of every segment with a base
//	            in (B, E).
//	sync        the directory is fsync'd: the swap is done. The swap
//	            record stays until the next CLEANER write clears it.
//
// Completing is idempotent — rename each B.*.cleaned still there, remove
// segments in (B, E) still there, fsync the directory — so a crash
// during recovery is recovered the same way. A pass clears a swap record
// left by a failed one before writing any .cleaned file, so Open never
// completes an old swap with new, uncommitted files. Once a swap is
// committed, a failure is sticky: appends are refused until the log is
// reopened, and Open completes the swap. Readers holding the old
// segments go on reading their open files.
package storage
