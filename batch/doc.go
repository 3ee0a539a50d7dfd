// Package batch encodes and decodes Kafka RecordBatch v2, the one unit
// passbook stores on disk, serves over the Kafka protocol and builds in
// its Go API.
//
// # Byte layout
//
// All integers in the 61-byte header are big-endian:
//
//	offset  size  field
//	     0     8  baseOffset            assigned by the log; patched in place
//	     8     4  length                bytes after this field (total − 12)
//	    12     4  partitionLeaderEpoch  patched in place
//	    16     1  magic                 always 2
//	    17     4  crc                   CRC-32C (Castagnoli) of bytes 21..end
//	    21     2  attributes            bits 0–2 codec, 0x08 log-append time,
//	                                    0x10 transactional, 0x20 control
//	    23     4  lastOffsetDelta
//	    27     8  baseTimestamp         milliseconds since the Unix epoch
//	    35     8  maxTimestamp
//	    43     8  producerId            −1 when none
//	    51     2  producerEpoch
//	    53     4  baseSequence
//	    57     4  recordCount
//	    61     …  records, compressed as a whole by the codec
//
// Each record is a zigzag-varint sequence:
//
//	length · attributes (int8) · timestampDelta · offsetDelta ·
//	keyLength · key · valueLength · value · headerCount ·
//	{ headerKeyLength · headerKey · headerValueLength · headerValue }
//
// A length of −1 means null; a record with a null value is a tombstone.
//
// The layout is frozen: it is Kafka's, and it is what passbook's segment
// files hold. Because the CRC starts at byte 21, the base offset and the
// leader epoch can be rewritten without recomputing it.
//
// # Compression
//
// The records section is compressed as a whole by the batch's codec. Append
// writes what the Java client writes (snappy in xerial framing); decoding
// also reads raw snappy blocks, which franz-go and other clients send. A
// compressed batch may decompress to at most Decoder.MaxDecompressed bytes
// (DefaultMaxDecompressed), so a small batch cannot claim gigabytes.
//
// Decoding costs what the bytes hold, whatever the counts claim: a
// record count needs MinRecordBytes a record and a header count
// HeaderOverhead bytes a header of what is left, or the batch is
// ErrInvalidRecord before anything is allocated for them. Validate counts
// headers against the record size limit (RecordSize) and keeps none.
//
// # Allocation
//
// Decoding an uncompressed batch allocates nothing per record: a Record's
// Key, Value and header values point into the batch bytes (or the
// Decoder's scratch buffer for a compressed batch) and stay valid only
// until the iteration moves on. Use Record.Clone to keep one.
package batch
