package batch

import (
	"errors"
	"fmt"
)

// Cursor is a pull-style iterator over the records of one batch at a time,
// for readers that hand out records one by one (a log reader's Next). It
// shares the allocation rules of Decoder.Records. The zero value is ready;
// call Reset with each batch.
type Cursor struct {
	d    Decoder
	h    Header
	data []byte
	i    int32
	err  error
}

// Reset starts iterating the batch at the start of b, which must already
// be checked (see Check). It decompresses the records if needed.
func (c *Cursor) Reset(b []byte) error {
	c.data, c.i, c.err = nil, 0, nil
	h, data, err := c.d.body(b)
	if err != nil {
		c.h = h
		c.h.RecordCount = 0
		if errors.Is(err, ErrCodec) {
			// Stored bytes: an unknown codec in a batch that passed its
			// CRC is corruption (the codec check Records makes).
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return err
	}
	c.h, c.data = h, data
	return nil
}

// Header is the header of the current batch.
func (c *Cursor) Header() Header { return c.h }

// Next returns the next record of the batch; ok is false at its end or on
// an error, which Err then reports.
func (c *Cursor) Next() (rec Record, ok bool) {
	if c.err != nil || c.i >= c.h.RecordCount {
		return Record{}, false
	}
	n, err := c.d.decodeRecord(&rec, c.data, &c.h)
	if err != nil {
		c.err = recordError(err, c.i, c.h.BaseOffset)
		return Record{}, false
	}
	c.data = c.data[n:]
	c.i++
	if c.i == c.h.RecordCount && len(c.data) != 0 {
		c.err = trailingError(len(c.data), c.h.BaseOffset)
	}
	return rec, true
}

// Err returns the first decoding error of the current batch.
func (c *Cursor) Err() error { return c.err }
