package kafka

import (
	"fmt"
	"testing"
	"time"

	"github.com/passbook-log/passbook/acl"
	"github.com/passbook-log/passbook/auth"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// BenchmarkProduce_Security: what TLS, SASL and ACLs cost a franz-go
// producer (acks=all, 100-byte records, four partitions), against the
// same server without them.
//
//	go test ./kafka -run '^$' -bench Produce_Security -benchtime 1000000x
func BenchmarkProduce_Security(b *testing.B) {
	for _, tc := range []struct {
		name             string
		tls, sasl, authz bool
	}{
		{"plaintext", false, false, false},
		{"TLS", true, false, false},
		{"SCRAM-SHA-512+ACLs", false, true, true},
		{"TLS+SCRAM-SHA-512+ACLs", true, true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			o := &Options{}
			opts := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(250_000), kgo.ProducerLinger(time.Millisecond)}
			if tc.tls {
				set := certs(b, "bench")
				o.TLS = set.ServerConfig(false)
				opts = append(opts, kgo.DialTLSConfig(set.ClientConfig(false)))
			}
			if tc.sasl {
				o.SASLMechanisms, o.Users = []string{auth.SCRAMSHA512}, openUsers(b)
				opts = append(opts, kgo.SASL(scram.Auth{User: "alice", Pass: testUsers["alice"]}.AsSha512Mechanism()))
			}
			if tc.authz {
				o.Authorizer = authorizer(b)
				// A few ACLs that do not match, then the one that does.
				for _, name := range []string{"a", "b", "c"} {
					if err := o.Authorizer.Store().Add(allow(acl.Topic, acl.Prefixed, name, acl.Read)); err != nil {
						b.Fatal(err)
					}
				}
				if err := o.Authorizer.Store().Add(allow(acl.Topic, acl.Literal, benchTopic, acl.Write)); err != nil {
					b.Fatal(err)
				}
			}
			ts := startServer(b, o)
			ts.createTopic(b, benchTopic, benchPartitions)
			cl := ts.client(b, opts...)
			produceN(b, cl, 1000) // warm up: metadata, connections, authentication
			b.ResetTimer()
			began := time.Now()
			produceN(b, cl, b.N)
			b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "records/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkAuthorize: one ACL check (what a request pays per topic or
// group), with the matching ACL among n others.
//
//	go test ./kafka -run '^$' -bench Authorize
func BenchmarkAuthorize(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("%d ACLs", n), func(b *testing.B) {
			az := authorizer(b)
			var bs []acl.Binding
			for i := range n - 1 {
				bs = append(bs, withPrincipal(allow(acl.Topic, acl.Literal, fmt.Sprintf("topic-%d", i), acl.Write), fmt.Sprintf("User:u%d", i)))
			}
			bs = append(bs, allow(acl.Topic, acl.Prefixed, "bench", acl.Write))
			if err := az.Store().Add(bs...); err != nil {
				b.Fatal(err)
			}
			ts := startServer(b, &Options{Authorizer: az})
			c := &conn{s: ts.srv, principal: "User:alice", ip: "127.0.0.1"}
			b.ResetTimer()
			for b.Loop() {
				if !c.allowed(acl.Write, acl.Topic, benchTopic) {
					b.Fatal("denied")
				}
			}
		})
	}
}
