package kafka

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/auth"
	"github.com/passbook-log/passbook/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// panicCounter counts the server's "handler panic" lines.
type panicCounter struct {
	slog.Handler
	n    *atomic.Int64
	last *atomic.Value
}

func (h panicCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h panicCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panic") {
		h.n.Add(1)
		h.last.Store(r.Message)
	}
	return nil
}

func (h panicCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panicCounter) WithGroup(string) slog.Handler      { return h }

// FuzzSASL sends arbitrary SASL tokens through a real connection of a
// server with every mechanism: in SaslAuthenticate requests after a
// v1 handshake, as raw frames after a v0 handshake, or as the first frame
// itself. Whatever the bytes, nothing panics and the connection is never
// authenticated: the Metadata request that follows is never answered.
func FuzzSASL(f *testing.F) {
	db, err := passbook.Open(f.TempDir(), &passbook.Options{FS: vfs.NewMem()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	var panics atomic.Int64
	var last atomic.Value
	o := saslOptions(f)
	o.Logger = slog.New(panicCounter{n: &panics, last: &last})
	o.RequestTimeout = 2 * time.Second
	srv, err := NewServer(db, o)
	if err != nil {
		f.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go srv.Serve(context.Background(), ln)
	f.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	f.Add(uint8(0), []byte("n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"))
	f.Add(uint8(1), []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="))
	f.Add(uint8(2), []byte("\x00alice\x00not-the-password"))
	f.Add(uint8(3), []byte("\x00\x00\x00"))
	f.Add(uint8(4), []byte{0, 36, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add(uint8(5), []byte("n,a=bob,n=alice,r=x"))
	f.Fuzz(func(t *testing.T, mode uint8, data []byte) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		r := &rawConn{t: t, nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))}
		mechanism := auth.Mechanisms[int(mode/4)%len(auth.Mechanisms)]
		send := func(b []byte) bool {
			_, err := nc.Write(b)
			return err == nil
		}
		readFrame := func() ([]byte, bool) {
			var size [4]byte
			if _, err := io.ReadFull(nc, size[:]); err != nil {
				return nil, false
			}
			n := binary.BigEndian.Uint32(size[:])
			if n > 1<<20 {
				t.Fatalf("a %d-byte answer", n)
			}
			b := make([]byte, n)
			_, err := io.ReadFull(nc, b)
			return b, err == nil
		}
		switch mode % 4 {
		case 0, 1: // SaslHandshake v1, then the bytes as SaslAuthenticate tokens (twice)
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Version, hs.Mechanism = 1, mechanism
			if !send(r.frame(hs)) {
				return
			}
			if _, ok := readFrame(); !ok {
				t.Fatal("no handshake answer")
			}
			for range 2 {
				a := kmsg.NewPtrSASLAuthenticateRequest()
				a.Version, a.SASLAuthBytes = int16(mode%3), data
				if !send(r.frame(a)) {
					break
				}
				if _, ok := readFrame(); !ok {
					break
				}
			}
		case 2: // SaslHandshake v0, then the bytes as raw tokens (twice)
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Mechanism = mechanism
			if !send(r.frame(hs)) {
				return
			}
			if _, ok := readFrame(); !ok {
				t.Fatal("no handshake answer")
			}
			for range 2 {
				tok := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
				if !send(append(tok, data...)) {
					break
				}
				if _, ok := readFrame(); !ok {
					break
				}
			}
		case 3: // the bytes as a whole first frame
			frame := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
			if !send(append(frame, data...)) {
				return
			}
		}
		// Whatever happened, the connection is not authenticated: a
		// Metadata request is never answered with the cluster.
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 12
		if send(r.frame(md)) {
			for {
				b, ok := readFrame()
				if !ok {
					break
				}
				resp := kmsg.NewPtrMetadataResponse()
				resp.Version = 12
				if len(b) > 5 && resp.ReadFrom(b[5:]) == nil && len(resp.Brokers) == 1 && binary.BigEndian.Uint32(b) == uint32(r.corr) {
					t.Fatalf("authenticated by %q (mode %d)", data, mode)
				}
			}
		}
		if n := panics.Load(); n > 0 {
			t.Fatalf("%d handler panics: %v", n, last.Load())
		}
	})
}
