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
//	FORMAT                      "passbook-partition 1\n"
//	LOCK                        flock'd by the owning process; holds its pid
//	CHECKPOINT                  recovery point (see below)
//	00000000000000000000.log        record batches, back to back
//	00000000000000000000.index      sparse offset index
//	00000000000000000000.timeindex  sparse time index
//	00000000000000051234.log        the next segment, named by its base offset
//	…
//
// A .log file is a sequence of Kafka RecordBatch v2 (see package batch),
// each carrying its own length and CRC-32C, with base offsets patched to
// their place in the partition. The newest segment is the active one; all
// appends go there, and it rolls to a new segment when it reaches
// Options.SegmentBytes or Options.SegmentAge.
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
// the preceding bytes (4). It is replaced atomically (write, fsync,
// rename, fsync directory).
//
// Everything above is frozen: it is what existing data directories hold.
// A change needs a new FORMAT version and a migration.
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
// reported in Recovery — unless a whole valid batch follows it, which a
// torn write cannot produce, in which case it is corruption as well.
//
// # Durability
//
// Each append says what returning means (see Durability): the batch is in
// the operating system (it survives the process being killed), or it was
// fsync'd (it survives power loss), or it will be within
// Options.SyncInterval. Concurrent fsync'd appends share one fsync. After
// a failed write or fsync every later append fails with the same error
// until the log is reopened: the log never pretends a write happened.
package storage
