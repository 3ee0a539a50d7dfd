package passbook_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
	"github.com/passbook-log/passbook/offsets"
	"github.com/passbook-log/passbook/storage"
)

// TestBadInput_GoAPI is the Go API's column of the bad-input table in
// docs/reliability.md: every kind of bad input, the error a caller gets
// (matched with errors.Is, and the text it reads), and nothing written.
func TestBadInput_GoAPI(t *testing.T) {
	db, err := passbook.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	orders, err := db.CreateTopic("orders", passbook.TopicConfig{Partitions: 2, MaxRecordBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orders.AppendTo(0, []passbook.Record{{Value: []byte("first")}}, storage.DefaultDurability); err != nil {
		t.Fatal(err)
	}
	p0, _ := orders.Partition(0)
	newConsumer := func(o consumer.Options) error {
		c, err := consumer.New(ctx, orders, db.Offsets(), o)
		if err == nil {
			c.Close()
		}
		return err
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want error
		text string
	}{
		{"oversized/record", func() error {
			_, err := orders.Append(passbook.Record{Value: make([]byte, 2<<10)})
			return err
		}, storage.ErrRecordTooLarge, "record 0 has 2048 bytes, limit 1024"},
		{"oversized/topic name", func() error {
			_, err := db.CreateTopic(strings.Repeat("a", 250), passbook.TopicConfig{})
			return err
		}, passbook.ErrInvalidName, "250 characters, at most 249"},
		{"malformed/batch", func() error {
			_, err := p0.AppendBatch([]byte("not a record batch, just bytes that are long enough to hold a header"), storage.DefaultDurability)
			return err
		}, storage.ErrInvalidBatch, "invalid batch"},
		{"wrong type/cleanup policy", func() error {
			_, err := db.CreateTopic("t1", passbook.TopicConfig{CleanupPolicy: "sometimes"})
			return err
		}, passbook.ErrInvalidConfig, `cleanup policy "sometimes" (want delete, compact or compact,delete)`},
		{"wrong type/durability", func() error {
			_, err := db.CreateTopic("t2", passbook.TopicConfig{Durability: 9})
			return err
		}, passbook.ErrInvalidConfig, "durability 9"},
		{"wrong type/commit mode", func() error {
			_, _, _, err := consumer.ParseCommit("sometimes")
			return err
		}, consumer.ErrInvalid, `commit mode "sometimes"`},
		{"out of range/partitions", func() error {
			_, err := db.CreateTopic("t3", passbook.TopicConfig{Partitions: 20_000})
			return err
		}, passbook.ErrInvalidConfig, "partitions 20000 not in [1, 10,000]"},
		{"out of range/partition", func() error {
			_, err := orders.AppendTo(7, []passbook.Record{{Value: []byte("x")}}, storage.DefaultDurability)
			return err
		}, passbook.ErrUnknownPartition, "topic orders has no partition 7 (it has 2)"},
		{"out of range/read offset", func() error {
			for _, err := range orders.Records(0, 5) {
				return err
			}
			return nil
		}, storage.ErrOutOfRange, "offset 5 is out of range [0, 1]"},
		{"out of range/consumer start", func() error {
			return newConsumer(consumer.Options{Name: "c1", Start: consumer.AtOffset(99)})
		}, storage.ErrOutOfRange, "offset 99 on orders/0 is past the head"},
		{"out of range/negative commit", func() error {
			return db.Offsets().Commit(ctx, offsets.Key{Consumer: "c", Topic: "orders"}, -1)
		}, offsets.ErrInvalid, "negative offset -1"},
		{"unknown name/topic", func() error {
			_, err := db.Topic("nope")
			return err
		}, passbook.ErrUnknownTopic, "unknown topic: nope"},
		{"unknown name/consumer", func() error {
			_, err := db.Offsets().Committed(ctx, offsets.Key{Consumer: "nobody", Topic: "orders"})
			return err
		}, offsets.ErrNotFound, ""},
		{"path-like/create", func() error {
			_, err := db.CreateTopic("../x", passbook.TopicConfig{})
			return err
		}, passbook.ErrInvalidName, `"../x" has '/'`},
		{"path-like/dot-dot", func() error {
			_, err := db.CreateTopic("..", passbook.TopicConfig{})
			return err
		}, passbook.ErrInvalidName, `invalid topic name: ".."`},
		{"path-like/lookup", func() error {
			_, err := db.Topic("../orders")
			return err
		}, passbook.ErrInvalidName, `"../orders" has '/'`},
		{"empty/topic name", func() error {
			_, err := db.CreateTopic("", passbook.TopicConfig{})
			return err
		}, passbook.ErrInvalidName, "empty"},
		{"empty/append", func() error {
			_, err := orders.AppendTo(0, nil, storage.DefaultDurability)
			return err
		}, storage.ErrEmpty, "no records"},
		{"empty/consumer name", func() error {
			return newConsumer(consumer.Options{})
		}, consumer.ErrInvalid, "a consumer needs a name"},
		{"unicode/topic name", func() error {
			_, err := db.CreateTopic("commandes-été", passbook.TopicConfig{})
			return err
		}, passbook.ErrInvalidName, `has 'é'; use letters, digits, '.', '_' and '-'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, tc.want) || !strings.Contains(fmtErr(err), tc.text) {
				t.Fatalf("error %v, want %v with %q", err, tc.want, tc.text)
			}
			t.Logf("%v", err)
		})
	}
	// Unicode in keys, values, headers and consumer names is data: it
	// goes in and comes back byte for byte.
	t.Run("unicode/data", func(t *testing.T) {
		rec := passbook.Record{Key: []byte("clé-🔑"), Value: []byte("valeur\x00\xff-日本"), Headers: []passbook.Header{{Key: "en-tête", Value: []byte("ü")}}}
		off, err := orders.AppendTo(1, []passbook.Record{rec}, storage.DefaultDurability)
		if err != nil {
			t.Fatal(err)
		}
		for got, err := range orders.Records(1, off) {
			if err != nil || string(got.Key) != string(rec.Key) || string(got.Value) != string(rec.Value) || got.Headers[0].Key != "en-tête" {
				t.Fatalf("read back %+v, %v", got, err)
			}
			break
		}
		if err := newConsumer(consumer.Options{Name: "lecteur-é"}); err != nil {
			t.Fatal(err)
		}
	})
	// Nothing refused was written, no topic was made.
	if len(db.Topics()) != 1 || p0.Head() != 1 {
		t.Fatalf("%d topics, head %d after refused input", len(db.Topics()), p0.Head())
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
