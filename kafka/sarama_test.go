package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func TestSarama_ProduceConsume(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version sarama.KafkaVersion
		codec   sarama.CompressionCodec
	}{
		{"default version", sarama.DefaultVersion, sarama.CompressionNone},
		{"3.9 gzip", sarama.V3_9_0_0, sarama.CompressionGZIP},
		{"max version zstd", sarama.MaxVersion, sarama.CompressionZSTD},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, nil)
			cfg := sarama.NewConfig()
			cfg.Version = tc.version
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Return.Successes = true
			cfg.Producer.Compression = tc.codec
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			cfg.Metadata.AllowAutoTopicCreation = true
			cfg.Consumer.Return.Errors = true

			prod, err := sarama.NewSyncProducer([]string{ts.addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			const n = 1000
			var msgs []*sarama.ProducerMessage
			for i := range n {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: "sarama", Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.ByteEncoder(value(i))})
			}
			// A hundred one at a time (each waits for its fsync), the
			// rest in one call (batched).
			for i, m := range msgs[:100] {
				p, off, err := prod.SendMessage(m)
				if err != nil {
					t.Fatal(err)
				}
				if p != 0 || off != int64(i) {
					t.Fatalf("message %d acknowledged at %d/%d", i, p, off)
				}
			}
			if err := prod.SendMessages(msgs[100:]); err != nil {
				t.Fatal(err)
			}
			for i, m := range msgs {
				if m.Offset != int64(i) {
					t.Fatalf("message %d acknowledged at offset %d", i, m.Offset)
				}
			}
			if err := prod.Close(); err != nil {
				t.Fatal(err)
			}

			cons, err := sarama.NewConsumer([]string{ts.addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			for _, from := range []int64{sarama.OffsetOldest, 600} {
				pc, err := cons.ConsumePartition("sarama", 0, from)
				if err != nil {
					t.Fatal(err)
				}
				want := max(from, 0)
				for want < n {
					select {
					case m := <-pc.Messages():
						if m.Offset != want || string(m.Value) != string(value(int(want))) || string(m.Key) != fmt.Sprint(want) {
							t.Fatalf("got offset %d %q, want offset %d", m.Offset, m.Value, want)
						}
						want++
					case err := <-pc.Errors():
						t.Fatal(err)
					case <-time.After(20 * time.Second):
						t.Fatalf("stuck at offset %d", want)
					}
				}
				if hw := pc.HighWaterMarkOffset(); hw != n {
					t.Fatalf("high watermark %d", hw)
				}
				pc.Close()
			}
			t.Logf("sarama %s negotiated: %s", tc.version, ts.log)
		})
	}
}
