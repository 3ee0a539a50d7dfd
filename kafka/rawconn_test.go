package kafka

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn speaks the protocol by hand, for tests that need to send what
// no client would.
type rawConn struct {
	t    testing.TB
	nc   net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))}
}

// frame encodes req as a whole request frame.
func (r *rawConn) frame(req kmsg.Request) []byte {
	r.corr++
	return r.f.AppendRequest(nil, req, r.corr)
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// do sends req and reads its response.
func (r *rawConn) do(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	r.write(r.frame(req))
	resp := req.ResponseKind()
	if err := r.read(resp, req.Key() != int16(kmsg.ApiVersions) && req.IsFlexible()); err != nil {
		r.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// read reads one response frame for the last request sent.
func (r *rawConn) read(resp kmsg.Response, flexHeader bool) error {
	r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(r.nc, size[:]); err != nil {
		return err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.nc, b); err != nil {
		return err
	}
	if corr := int32(binary.BigEndian.Uint32(b)); corr != r.corr {
		return errors.New("response for another request")
	}
	b = b[4:]
	if flexHeader {
		var err error
		if b, err = skipTags(b); err != nil {
			return err
		}
	}
	return resp.ReadFrom(b)
}

// closedByServer reports whether the server closed the connection
// (within a few seconds) without sending anything more.
func (r *rawConn) closedByServer() bool {
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	_, err := r.nc.Read(b[:])
	return errors.Is(err, io.EOF) || (err != nil && !errors.Is(err, os.ErrDeadlineExceeded))
}
