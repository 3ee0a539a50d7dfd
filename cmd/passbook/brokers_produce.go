package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceTimeout bounds how long a batch may wait for its
// acknowledgement from the brokers before produce says it failed.
const produceTimeout = 30 * time.Second

// kafkaSink is a topic over the Kafka protocol: produce's batches go to
// their partitions (picked here, as on a data directory: Kafka's murmur2
// for a key, round robin otherwise) with an idempotent producer and
// acks=all, all partitions of a batch at once.
type kafkaSink struct {
	*cluster
	ext      *topicExtent
	compact  bool
	maxBytes int
	rr       uint32 // the next partition of an unkeyed record
}

func dialKafkaSink(ctx context.Context, b *brokerFlags, topic string) (*kafkaSink, error) {
	// The topic's max.message.bytes comes first: the client's largest
	// batch must hold the largest record.
	c, err := b.dial(ctx)
	if err != nil {
		return nil, err
	}
	ext, err := c.extent(ctx, topic)
	if err != nil {
		c.Close()
		return nil, err
	}
	cfg, err := c.topicConfig(ctx, topic)
	c.Close()
	if err != nil {
		return nil, err
	}
	maxBytes := cfg.MaxRecordBytes
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	c, err = b.dial(ctx,
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), // produce batches itself (--batch-records, --batch-bytes, --linger)
		kgo.ProducerBatchMaxBytes(int32(max(1_000_012, min(maxBytes+64<<10, 1<<30)))),
		kgo.MaxBufferedRecords(max(defaultBatchRecords, 2*maxBatchRecords)),
		kgo.RecordDeliveryTimeout(produceTimeout),
	)
	if err != nil {
		return nil, err
	}
	return &kafkaSink{cluster: c, ext: ext, compact: cfg.Compacted(), maxBytes: maxBytes}, nil
}

func (k *kafkaSink) Name() string                      { return k.ext.name }
func (k *kafkaSink) Partitions() int                   { return k.ext.partitions }
func (k *kafkaSink) Compacted() bool                   { return k.compact }
func (k *kafkaSink) MaxRecordBytes(int32) (int, error) { return k.maxBytes, nil }
func (k *kafkaSink) PartitionFor(key []byte) int32 {
	if key != nil {
		return passbook.KeyPartition(key, k.ext.partitions)
	}
	p := int32(k.rr % uint32(k.ext.partitions))
	k.rr++
	return p
}

// AppendAll produces every partition's records at once and waits for
// each one's acknowledgement. It is not cancelled with the command:
// what was read is sent even after Ctrl-C, within produceTimeout.
func (k *kafkaSink) AppendAll(parts [][]passbook.Record, first []int64, ok []bool) error {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs = make([]error, len(parts))
		low  = make([]int64, len(parts))
	)
	for part, recs := range parts {
		low[part] = -1
		for i := range recs {
			r := &kgo.Record{Topic: k.ext.name, Partition: int32(part), Key: recs[i].Key, Value: recs[i].Value}
			if !recs[i].Timestamp.IsZero() {
				r.Timestamp = recs[i].Timestamp
			}
			wg.Add(1)
			k.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if errs[r.Partition] == nil {
						errs[r.Partition] = err
					}
					return
				}
				if low[r.Partition] < 0 || r.Offset < low[r.Partition] {
					low[r.Partition] = r.Offset
				}
			})
		}
	}
	wg.Wait()
	var err error
	for part, recs := range parts {
		if len(recs) == 0 {
			continue
		}
		if errs[part] != nil {
			if err == nil {
				err = fmt.Errorf("produce to %s/%s: %w", k.ext.name, strconv.Itoa(part), errs[part])
			}
			continue
		}
		ok[part], first[part] = true, low[part]
	}
	return err
}
