package storage

import (
	"fmt"

	"github.com/passbook-log/passbook/batch"
)

// LeaderEpoch is the partition leader epoch passbook stamps on every batch
// it stores (one broker has led every partition since it was created).
// The CRC does not cover the field, so verify and recovery check it.
const LeaderEpoch = 0

// Kafka's CRC-32C starts at a batch's attributes: the base offset, the
// length, the partition leader epoch, the magic byte and the CRC itself
// are outside it. Each is checked against what the broker wrote: the CRC
// by recomputing it (batch.Check), the magic and the length by parsing
// the header (batch.ParseHeader) and by the next batch starting where
// the length says, the base offset by the offset chain (segScanner.checkPlace),
// and the leader epoch here.

// checkFraming checks the one field of a stored batch's header that
// neither the CRC, the header's parsing nor the offset chain covers: the
// partition leader epoch passbook stamps. Open's recovery and Verify both
// call it (through segScanner.checkPlace), so they agree.
func checkFraming(h batch.Header) error {
	if h.PartitionLeaderEpoch != LeaderEpoch {
		return fmt.Errorf("%w: partition leader epoch %d, but passbook stamps %d on every batch (the field is outside the CRC)", ErrCorrupt, h.PartitionLeaderEpoch, LeaderEpoch)
	}
	return nil
}
