#!/usr/bin/env python3
"""A stand-in for the course's Day 23 lab (labs/day-23-log/append_log.py),
written for passbook's side-by-side timing: the course's script is not ours
to commit, so this one does what the course's text says its script does,
with the same workload and the same output lines the harness reads.

  Part 1  an in-memory list is the log; append() hands back len(log).
  Part 2  a consumer reads from its committed offset in a SQLite table,
          processes each record, then commits offset + 1 (one transaction
          per record: at-least-once); it "crashes" after processing offset
          59,999 and before committing it (the object is thrown away), and
          a new consumer of the same name resumes from the committed offset.
  Part 3  a brand-new consumer replays from offset 0, committing after each
          record the same way, while the first stays where it is.

Standard library only, single-threaded. As the course says of its own lab,
the offset store runs with fsync off (PRAGMA synchronous=OFF): a commit
survives the consumer object being thrown away (and a process crash, since
the write has reached the OS), not a power cut. --journal picks SQLite's
journal mode (the course's text names none): WAL unless told otherwise. The one SQLite file it makes is removed at the end.
"""

import argparse
import os
import sqlite3
import sys
import tempfile
import time

PREDICTIONS = {"P1": None, "P2": None, "P3": None, "P4": None}


class Log:
    """An append-only list of records; a record's offset is its index."""

    def __init__(self):
        self._records = []

    def append(self, record):
        offset = len(self._records)
        self._records.append(record)
        return offset

    def read(self, offset):
        return self._records[offset]

    def __len__(self):
        return len(self._records)


class OffsetStore:
    """Committed offsets (the next offset to read) per consumer, in SQLite."""

    def __init__(self, path, journal):
        self.conn = sqlite3.connect(path)
        self.conn.execute("PRAGMA synchronous=OFF")
        self.conn.execute(f"PRAGMA journal_mode={journal}")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS committed ("
            " consumer TEXT PRIMARY KEY, next_offset INTEGER NOT NULL)"
        )
        self.conn.commit()

    def committed(self, consumer):
        row = self.conn.execute(
            "SELECT next_offset FROM committed WHERE consumer = ?", (consumer,)
        ).fetchone()
        return row[0] if row else None

    def commit(self, consumer, next_offset):
        self.conn.execute(
            "INSERT INTO committed (consumer, next_offset) VALUES (?, ?)"
            " ON CONFLICT (consumer) DO UPDATE SET next_offset = excluded.next_offset",
            (consumer, next_offset),
        )
        self.conn.commit()

    def close(self):
        self.conn.close()


class Crash(Exception):
    pass


class Consumer:
    def __init__(self, name, log, store, start=0):
        self.name, self.log, self.store = name, log, store
        committed = store.committed(name)
        self.position = committed if committed is not None else start

    def run(self, handle, crash_after=None):
        while self.position < len(self.log):
            offset = self.position
            handle(offset, self.log.read(offset))
            if offset == crash_after:
                raise Crash(offset)  # after the work, before the commit
            self.store.commit(self.name, offset + 1)
            self.position = offset + 1


def heading(title):
    rule = "=" * 78
    print(f"{rule}\n{title}\n{rule}")


def judge(predicted, actual):
    if predicted is None:
        return "no prediction"
    if predicted == actual:
        return "spot on"
    return "too low" if predicted < actual else "too high"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--crash-at", type=int, default=59_999)
    ap.add_argument("--journal", default="WAL")
    ap.add_argument("--dir", default=None, help="where the SQLite file goes (default: a new temporary directory)")
    args = ap.parse_args()
    n, crash_at = args.n, args.crash_at
    workdir = args.dir or tempfile.mkdtemp(prefix="pylab-")
    path = os.path.join(workdir, "offsets.db")
    began = time.perf_counter()

    heading("Part 1: append. The log only grows, and every record gets an offset.")
    log = Log()
    t0 = time.perf_counter()
    handed = [log.append(f"order #{i}") for i in range(n)]
    took = time.perf_counter() - t0
    print(f"records appended:                {len(log):,}")
    print(f"first three offsets handed back: {handed[:3]}")
    print(f"last three offsets handed back:  {handed[-3:]}")
    print(f"the last record's offset:        {handed[-1]:,}")
    print(f"(appending {n:,} records took {took * 1000:.0f} ms)")

    heading("Part 2: a consumer that remembers its offset, crashes, and resumes.")
    store = OffsetStore(path, args.journal)
    counts = [0] * n

    def work(offset, record):
        counts[offset] += 1

    a = Consumer("orders-writer", log, store)
    try:
        a.run(work, crash_after=crash_at)
    except Crash:
        pass
    before = sum(counts)
    del a  # the crash: the object is gone, only the store remains
    committed = store.committed("orders-writer")
    a = Consumer("orders-writer", log, store)
    resumed = a.position
    a.run(work)
    total = sum(counts)
    missed = [o for o, c in enumerate(counts) if c == 0]
    dups = [o for o, c in enumerate(counts) if c > 1]
    print(f"crashed after processing offset: {crash_at:,}")
    print(f"records processed before crash:  {before:,}")
    print(f"committed offset the store kept: {'none' if committed is None else f'{committed:,}'}")
    print(f"restarted consumer resumed from: {resumed:,}")
    print(f"records processed after restart: {total - before:,}")
    print("----")
    print(f"total records processed:         {total:,} (= N + {total - n})")
    print(f"records MISSED (processed 0x):   {len(missed)}")
    print(f"records DUPLICATED (2x):         {len(dups)} at offset {dups[:10]}")

    heading("Part 3: replay. Add a new consumer later, re-read the whole log.")
    seen = []
    b = Consumer("analytics-v2", log, store, start=0)
    b_start = b.position
    b.run(lambda offset, record: seen.append(offset))
    in_order = seen == list(range(n))
    print(f"consumer A (orders-writer) offset: {store.committed('orders-writer'):,}")
    print(f"consumer B (analytics-v2) starts:  {b_start:,}")
    print(f"records consumer B replayed:       {len(seen):,}")
    print(f"B read every offset 0..{n - 1:,} in order: {in_order}")
    print(f"consumer B's offset now:           {store.committed('analytics-v2'):,}")

    heading("Scoreboard")
    actual = {"P1": handed[-1], "P2": len(dups), "P3": len(missed), "P4": len(seen)}
    for k, v in actual.items():
        print(f"{k} actual = {v:,}  {judge(PREDICTIONS[k], v)}")

    store.close()
    os.remove(path)
    if not args.dir:
        os.rmdir(workdir)
    print(f"(the whole run took {time.perf_counter() - began:.2f} s)")
    ok = handed[-1] == n - 1 and len(dups) == 1 and not missed and len(seen) == n and in_order
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
