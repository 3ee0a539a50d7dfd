package storage

// WaitDurable returns once the records below offset end meet durability
// d, as an append with d would before returning (DefaultDurability
// meaning the log's). It lets a caller append with InOS and wait later,
// so that appends made meanwhile, from any caller, share the fsync. end
// must not be past the head.
func (l *Log) WaitDurable(end int64, d Durability) error { return l.durable(d, end) }
