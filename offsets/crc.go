package offsets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/ncruces/go-sqlite3"
)

// ErrCorrupt reports a stored committed offset whose row fails its
// checksum: the database file was damaged. SQLite checks its own
// structures (PRAGMA integrity_check) but nothing inside a row, so
// without the checksum a flipped bit in an offset would be read as a
// different offset.
var ErrCorrupt = errors.New("offsets: stored entry fails its checksum")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entryCRC is the checksum stored with each committed offset (column
// crc): CRC-32C over every other column of the row.
func entryCRC(k Key, offset int64, metadata string, updatedMs int64) int64 {
	return entryCRCFrom(keyCRC(k), offset, metadata, updatedMs, new([8]byte))
}

var zeroByte = []byte{0}

// keyCRC is the CRC-32C of the key's columns, where entryCRC starts: a
// consumer commits the same key over and over, so keyStmt keeps it.
func keyCRC(k Key) uint32 {
	var b [4]byte
	h := crc32.Update(0, castagnoli, []byte(k.Consumer))
	h = crc32.Update(h, castagnoli, zeroByte)
	h = crc32.Update(h, castagnoli, []byte(k.Topic))
	h = crc32.Update(h, castagnoli, zeroByte)
	binary.BigEndian.PutUint32(b[:], uint32(k.Partition))
	return crc32.Update(h, castagnoli, b[:])
}

// entryCRCFrom finishes entryCRC from the key's keyCRC, in b (a buffer
// on the stack would escape to the heap through crc32.Update: one
// allocation per commit).
func entryCRCFrom(h uint32, offset int64, metadata string, updatedMs int64, b *[8]byte) int64 {
	binary.BigEndian.PutUint64(b[:], uint64(offset))
	h = crc32.Update(h, castagnoli, b[:])
	if metadata != "" {
		h = crc32.Update(h, castagnoli, []byte(metadata))
	}
	h = crc32.Update(h, castagnoli, zeroByte)
	binary.BigEndian.PutUint64(b[:], uint64(updatedMs))
	h = crc32.Update(h, castagnoli, b[:])
	return int64(h)
}

// checkEntry reports whether a row of passbook_offsets, as read by SQL
// (crc NULL when valid is false), holds its checksum.
func checkEntry(k Key, offset int64, metadata string, updatedMs int64, crc int64, valid bool) error {
	if !valid || crc != entryCRC(k, offset, metadata, updatedMs) {
		return fmt.Errorf("%w: %v (committed offset %d as stored)", ErrCorrupt, k, offset)
	}
	return nil
}

// checkCRC checks the row st is on, whose crc is column i.
func checkCRC(k Key, offset int64, metadata string, updatedMs int64, st *sqlite3.Stmt, i int) error {
	return checkEntry(k, offset, metadata, updatedMs, st.ColumnInt64(i), st.ColumnType(i) == sqlite3.INTEGER)
}

// fillCRCs computes the checksum of the rows written before schema
// version 3, in the migration's wake.
func fillCRCs(c *sqlite3.Conn) error {
	sel, _, err := c.Prepare(`SELECT consumer, topic, partition, next_offset, metadata, updated_ms
		FROM passbook_offsets WHERE crc IS NULL`)
	if err != nil {
		return err
	}
	type row struct {
		k    Key
		off  int64
		meta string
		ms   int64
	}
	var rows []row
	for sel.Step() {
		rows = append(rows, row{Key{sel.ColumnText(0), sel.ColumnText(1), int32(sel.ColumnInt64(2))}, sel.ColumnInt64(3), sel.ColumnText(4), sel.ColumnInt64(5)})
	}
	err = errors.Join(sel.Err(), sel.Close())
	if err != nil || len(rows) == 0 {
		return err
	}
	upd, _, err := c.Prepare(`UPDATE passbook_offsets SET crc = ?4 WHERE consumer = ?1 AND topic = ?2 AND partition = ?3`)
	if err != nil {
		return err
	}
	defer upd.Close()
	if err := c.Exec(`BEGIN IMMEDIATE`); err != nil {
		return err
	}
	for _, r := range rows {
		err := errors.Join(upd.BindText(1, r.k.Consumer), upd.BindText(2, r.k.Topic),
			upd.BindInt64(3, int64(r.k.Partition)), upd.BindInt64(4, entryCRC(r.k, r.off, r.meta, r.ms)))
		if err == nil {
			err = upd.Exec()
		}
		if err != nil {
			c.Exec(`ROLLBACK`)
			return err
		}
	}
	return c.Exec(`COMMIT`)
}
