package offsets

import (
	"context"
	"fmt"

	"github.com/ncruces/go-sqlite3"
)

// KafkaProducerIDSequence is the name of the sequence the Kafka server
// draws producer ids from (NextID); passbook offsets repair carries it
// over to a rebuilt store.
const KafkaProducerIDSequence = "kafka-producer-id"

const nextIDSQL = `INSERT INTO passbook_sequences (name, next) VALUES (?1, 1)
	ON CONFLICT (name) DO UPDATE SET next = next + 1
	RETURNING next - 1`

// NextID returns the next number of the sequence called name: 0, 1, 2, …
// Each number is handed out once, ever: the commit is fsync'd before
// NextID returns, whatever Options.Synchronous says, so neither a crash
// of the process nor a power loss makes the store hand a number out
// again. It costs an fsync; the Kafka server calls it once per producer.
func (s *SQLite) NextID(ctx context.Context, name string) (int64, error) {
	if name == "" {
		return 0, fmt.Errorf("%w: empty sequence name", ErrInvalid)
	}
	var id int64
	err := s.do(ctx, func(c *sqlite3.Conn) error {
		if s.opts.Synchronous != SyncFull {
			// In WAL mode, synchronous=FULL fsyncs the WAL at commit.
			if err := c.Exec(`PRAGMA synchronous=FULL`); err != nil {
				return err
			}
			defer c.Exec(`PRAGMA synchronous=` + s.opts.Synchronous.pragma())
		}
		st, _, err := c.Prepare(nextIDSQL)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.BindText(1, name); err != nil {
			return err
		}
		if !st.Step() {
			if err := st.Err(); err != nil {
				return err
			}
			return fmt.Errorf("no row returned")
		}
		id = st.ColumnInt64(0)
		return st.Reset()
	})
	if err != nil {
		return 0, wrap(err, "next id of sequence %q", name)
	}
	return id, nil
}
