package lab

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
)

// WorkTable is the table of the offset store's database where CommitTx's
// consumer does its work: one row per record handled, written in the
// transaction that commits the record's offset. It has no unique key, so
// a record handled twice would show as two rows: the lab counts misses
// and duplicates from this table, not from what the handler was called
// on.
const WorkTable = "lab_work"

// afterPass is the consumer CommitTx runs first, committing after each
// record, to measure what the transaction costs.
const afterPass = "after-pass"

// TxFigures are the figures only CommitTx has.
type TxFigures struct {
	WorkTable string `json:"work_table"`
	// RowsAtCrash is how many rows consumer A had in the work table when
	// it died: the records whose transaction committed.
	RowsAtCrash int `json:"rows_at_crash"`
	// Rows is how many it has at the end.
	Rows int `json:"rows"`
	// TxRecords records were handled in TxMs by consumer A's transactions
	// in the lab's own process (with --crash process, the resumed
	// consumer's only: the child's run is not timed).
	TxRecords int     `json:"tx_records"`
	TxMs      float64 `json:"tx_ms"`
	// AfterRecords records were handled in AfterMs by consumer
	// "after-pass", which commits after each record, on the same log in
	// the same process, just before Part 2: what --commit after pays.
	AfterRecords int     `json:"after_records"`
	AfterMs      float64 `json:"after_ms"`
}

// TxRate and AfterRate are the two passes' records per second (0 when
// nothing was timed).
func (f *TxFigures) TxRate() float64    { return perSecond(f.TxRecords, f.TxMs) }
func (f *TxFigures) AfterRate() float64 { return perSecond(f.AfterRecords, f.AfterMs) }

func perSecond(n int, ms float64) float64 {
	if ms <= 0 {
		return 0
	}
	return float64(n) / ms * 1000
}

// prepareTx times the after pass over the n records, then creates the
// work table.
func prepareTx(ctx context.Context, db *passbook.DB, t *passbook.Topic, n int) (*TxFigures, error) {
	f := &TxFigures{WorkTable: WorkTable}
	c, err := consumer.New(ctx, t, db.Offsets(), consumer.Options{Name: afterPass, Commit: consumer.CommitAfter})
	if err != nil {
		return nil, err
	}
	seen := make([]bool, n) // the same in-memory work as --commit after's consumer
	began := time.Now()
	err = c.Drain(ctx, func(ctx context.Context, m consumer.Message) error {
		seen[m.Offset] = true
		f.AfterRecords++
		return nil
	})
	f.AfterMs = ms(time.Since(began))
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("the after pass: %w", err)
	}
	if f.AfterRecords != n {
		return nil, fmt.Errorf("the after pass handled %d records of %d", f.AfterRecords, n)
	}
	_, err = db.Offsets().DB().ExecContext(ctx, `CREATE TABLE `+WorkTable+` (
		consumer      TEXT    NOT NULL,
		record_offset INTEGER NOT NULL,
		value         BLOB    NOT NULL
	)`)
	if err != nil {
		return nil, fmt.Errorf("create the work table: %w", err)
	}
	return f, nil
}

// prepareWork prepares the work table's insert.
func prepareWork(ctx context.Context, db *sql.DB) (*sql.Stmt, error) {
	st, err := db.PrepareContext(ctx, `INSERT INTO `+WorkTable+` (consumer, record_offset, value) VALUES (?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("the work table: %w", err)
	}
	return st, nil
}

// writeWork is the work of CommitTx's consumer: the record as a row of
// the work table, inside tx.
func writeWork(ctx context.Context, tx *sql.Tx, ins *sql.Stmt, name string, m consumer.Message) error {
	if _, err := tx.StmtContext(ctx, ins).ExecContext(ctx, name, m.Offset, m.Value); err != nil {
		return fmt.Errorf("write the work of offset %d: %w", m.Offset, err)
	}
	return nil
}

// errWorkOffset is a row of the work table for an offset the log does
// not have.
var errWorkOffset = errors.New("lab: the work table names an offset outside the log")

// countWork counts the work table's rows of consumer name and, if counts
// is not nil, adds each row to its offset's count.
func countWork(ctx context.Context, db *sql.DB, name string, counts []uint8) (int, error) {
	rows, err := db.QueryContext(ctx, `SELECT record_offset, COUNT(*) FROM `+WorkTable+` WHERE consumer = ? GROUP BY record_offset`, name)
	if err != nil {
		return 0, fmt.Errorf("count the work table: %w", err)
	}
	defer rows.Close()
	total := 0
	for rows.Next() {
		var off int64
		var n int
		if err := rows.Scan(&off, &n); err != nil {
			return 0, fmt.Errorf("count the work table: %w", err)
		}
		total += n
		if counts == nil {
			continue
		}
		if off < 0 || off >= int64(len(counts)) {
			return 0, fmt.Errorf("%w: %d", errWorkOffset, off)
		}
		counts[off] += uint8(min(n, 255-int(counts[off])))
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("count the work table: %w", err)
	}
	return total, nil
}
