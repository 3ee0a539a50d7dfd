package librdkafka

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binDir holds the passbook binary built for this test run.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// passbookBinary builds ./cmd/passbook of this checkout once per run.
func passbookBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "passbook-librdkafka-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "passbook")
		cmd := exec.Command("go", "build", "-C", "../../..", "-o", binPath, "./cmd/passbook")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/passbook: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Server is one `passbook serve` process on a data directory.
type Server struct {
	Addr string // the Kafka listener, 127.0.0.1:port
	HTTP string // the HTTP listener
	Dir  string // the data directory

	t      testing.TB
	extra  []string
	cmd    *exec.Cmd
	exited chan struct{}
	stderr *syncBuffer
}

// startServe starts `passbook serve` on a new data directory with extra
// flags and returns its Kafka address; it is stopped at the end of the
// test.
func startServe(t testing.TB, extra ...string) string {
	t.Helper()
	return launch(t, t.TempDir(), extra...).Addr
}

// launch starts `passbook serve` on dir with extra flags, on free
// loopback ports, and returns once its listeners accept. It is stopped
// (SIGTERM, then SIGKILL) at the end of the test.
func launch(t testing.TB, dir string, extra ...string) *Server {
	t.Helper()
	s := &Server{Dir: dir, t: t, extra: extra}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	if s.Addr == "" {
		ports := freePorts(s.t, 2)
		s.Addr, s.HTTP = ports[0], ports[1]
	}
	args := append([]string{"--data", s.Dir, "serve", "--kafka", s.Addr, "--http", s.HTTP}, s.extra...)
	s.cmd = exec.Command(passbookBinary(s.t), args...)
	s.stderr = &syncBuffer{}
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { cmd.Wait(); close(exited) }(s.cmd, s.exited)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.exited:
			s.t.Fatalf("passbook serve exited before listening:\n%s", s.stderr.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("passbook serve did not listen on %s within 30 s:\n%s", s.Addr, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill ends the server with SIGKILL and waits for it to exit.
func (s *Server) Kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// Restart kills the server with SIGKILL and starts it again on the same
// data directory and the same Kafka port, so clients reconnect to it.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// Stop sends SIGTERM and waits up to 15 s before SIGKILL.
func (s *Server) Stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		s.Kill()
	}
}

// Log is what the server wrote to stderr so far.
func (s *Server) Log() string { return s.stderr.String() }

func freePorts(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
