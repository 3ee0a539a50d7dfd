package passbook

// murmur2 is the 32-bit MurmurHash2 with Kafka's seed, as Kafka's default
// partitioner computes it. Using the same hash means a key lands on the
// same partition whether it is produced through this API or any Kafka
// client.
func murmur2(data []byte) int32 {
	const (
		seed = uint32(0x9747b28c)
		m    = uint32(0x5bd1e995)
		r    = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// KeyPartition returns the partition Kafka's default partitioner picks for
// a key among n partitions: toPositive(murmur2(key)) mod n.
func KeyPartition(key []byte, n int) int32 {
	return int32(int(murmur2(key)&0x7fffffff) % n)
}
