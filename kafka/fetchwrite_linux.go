package kafka

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

const sendfileSupported = true

// sendFile sends n bytes of f from pos to the connection raw with
// sendfile(2), waiting (under the connection's write deadline) while the
// socket's buffer is full. It passes the offset itself, so f's own file
// position — shared by every reader of the descriptor — is neither used
// nor moved. A file that ends before pos+n fails with
// io.ErrUnexpectedEOF: the frame is then cut short and the caller closes
// the connection.
func sendFile(raw syscall.RawConn, f *os.File, pos, n int64) (sent int64, err error) {
	src, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var serr, werr error // sendfile's, and waiting for the socket's
	rerr := src.Read(func(in uintptr) bool {
		werr = raw.Write(func(out uintptr) bool {
			for sent < n {
				k, err := syscall.Sendfile(int(out), int(in), &pos, int(min(n-sent, 1<<30)))
				if k > 0 {
					sent += int64(k) // the kernel moved pos
				}
				switch {
				case err == syscall.EINTR:
					continue
				case err == syscall.EAGAIN:
					return false // wait until the socket can take more
				case err != nil:
					serr = os.NewSyscallError("sendfile", err)
					return true
				case k == 0:
					serr = fmt.Errorf("sendfile %s: %w at %d, %d bytes short", f.Name(), io.ErrUnexpectedEOF, pos, n-sent)
					return true
				}
			}
			return true
		})
		return true
	})
	if serr != nil {
		return sent, serr
	}
	if werr != nil {
		return sent, werr
	}
	return sent, rerr
}
