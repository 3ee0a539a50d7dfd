// Package consumer reads a topic as a named consumer that keeps its own
// place: its committed offset per partition, the next offset to read, in
// the offset store. The log knows nothing of it.
//
// When the consumer commits, relative to handling a record, is the whole
// of delivery semantics, and it is chosen explicitly:
//
//   - CommitAfter (the default): handle, then commit. A crash between the
//     two re-delivers that record on restart: at-least-once.
//   - CommitBefore: commit, then handle. A crash between the two skips
//     the record: at-most-once.
//   - CommitEvery: commit every N records or D time, and when the consumer
//     stops. At-least-once with at most a window of duplicates, and fast.
//   - RunTx: the handler gets a *sql.Tx on the offset store's database;
//     its writes and the commit succeed or fail together: an
//     exactly-once effect on that database.
//
// A consumer name is exclusive on a topic while it runs: New takes a lease
// in the offset store, and a second consumer with the same name gets an
// error naming the holder. Each commit is fenced by the lease's
// generation, so a consumer that lost its lease cannot move the bookmark.
//
// Retention never moves a consumer silently: if records it never read
// were deleted, New fails with a *GapError that counts them, unless the
// Options ask for a reset policy, which logs the count.
package consumer
