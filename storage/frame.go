package storage

// LeaderEpoch is the partition leader epoch passbook stamps on every batch
// it stores (one broker has led every partition since it was created).
// The CRC does not cover the field, so verify and recovery check it.
const LeaderEpoch = 0
