package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A KIP-848 group (franz-go, kgo.ServerSideBalancer) and a classic group
// commit on the same topic of a running passbook serve: `passbook lag
// --brokers` shows both, each with its own offsets, and `offsets set
// --brokers` refuses to move the KIP-848 group's offsets while it has a
// member (exit 1, naming it), as it does for a classic group, and moves
// them once it has left.
func TestBrokers_KIP848GroupInLagAndOffsets(t *testing.T) {
	p := startServe(t, "--group-consumer-heartbeat-interval", "100ms")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte("order")})
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consume := func(group string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.kafkaAddr), kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 10; {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s read %d of 10", group, got)
			}
			got += len(fs.Records())
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	member := consume("billing-848", kgo.ServerSideBalancer())
	consume("billing-classic").Close()

	out, errOut, code := runBinary(t, t.TempDir(), "", "lag", "--brokers", p.kafkaAddr)
	if code != 0 {
		t.Fatalf("lag --brokers: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"billing-848  orders  0  5  5  0  0", "billing-848  orders  1  5  5  0  0", "billing-classic  orders  0  5  5  0  0"} {
		if !strings.Contains(strings.Join(strings.Fields(out), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("lag --brokers has no row %q:\n%s", want, out)
		}
	}
	_, errOut, code = runBinary(t, t.TempDir(), "", "offsets", "set", "0", "--consumer", "billing-848", "--topic", "orders", "--brokers", p.kafkaAddr)
	if code != 1 || !strings.Contains(errOut, "billing-848 has 1 member") || !strings.Contains(errOut, "consumer protocol") {
		t.Errorf("offsets set on the live KIP-848 group: exit %d, %q; want exit 1 naming its member", code, errOut)
	}
	member.Close() // leaves the group (epoch -1)
	out, errOut, code = runBinary(t, t.TempDir(), "", "offsets", "set", "0", "--consumer", "billing-848", "--topic", "orders", "--brokers", p.kafkaAddr)
	if code != 0 {
		t.Fatalf("offsets set once the group is empty: exit %d: %s", code, errOut)
	}
	offs, err := adm.FetchOffsets(ctx, "billing-848")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("orders", 0); o.At != 0 {
		t.Errorf("billing-848 on orders/0 committed %d after offsets set 0, want 0 (%s)", o.At, out)
	}
	classic, err := adm.FetchOffsets(ctx, "billing-classic")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := classic.Lookup("orders", 0); o.At != 5 {
		t.Errorf("billing-classic on orders/0 committed %d, want 5 still", o.At)
	}
}
