package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is a peer's server process that the harness started. It runs in
// a process group of its own, led by the PID the harness started, so
// that stopping it also stops whatever it forked (RabbitMQ's shell
// script starts the Erlang VM); the terminal's Ctrl-C reaches only the
// harness, which then stops its processes itself.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string        // the file its stdout and stderr go to
	done chan struct{} // closed when it has exited
	err  error         // its exit status, once done is closed
}

// startProc starts argv with env added to the harness's environment,
// in the directory of logFile, its output to logFile.
func startProc(name, logFile string, env []string, argv ...string) (*proc, error) {
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("%s is not installed: %w", argv[0], err)
	}
	out, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	// Its working directory is its own (crash dumps land there), not the
	// harness's, which may be gone by the time it starts.
	cmd.Dir = filepath.Dir(logFile)
	cmd.Stdout, cmd.Stderr = out, out
	// Setpgid: its own process group, so that a signal to -pid reaches
	// its children too. Pdeathsig: if the harness dies without stopping
	// it (SIGKILL), the kernel sends it SIGTERM.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p := &proc{name: name, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// pid is the PID the harness started: also the process group's ID.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM to the process group, waits up to grace for the
// process to exit, then sends SIGKILL to the group.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
	default:
		syscall.Kill(-p.pid(), syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	}
	// Whatever is left in the group (children that outlived the leader).
	syscall.Kill(-p.pid(), syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// logTail is the end of the process's log, for error messages.
func (p *proc) logTail(lines int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, " | ")
}

// waitReady polls ready until it succeeds, the process exits (an error
// quoting its log) or timeout passes.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if p.exited() {
			return fmt.Errorf("%s exited at startup (%v): %s", p.name, p.err, p.logTail(3))
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		last = ready(rctx)
		cancel()
		if last == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %v; log: %s", p.name, timeout, last, p.logTail(3))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dialable is a readiness check: something accepts connections on addr.
func dialable(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// errNotApplicable marks a workload a system cannot do, with the reason.
type notApplicable struct{ reason string }

func (e notApplicable) Error() string { return e.reason }

func na(format string, args ...any) error { return notApplicable{fmt.Sprintf(format, args...)} }

func isNA(err error) (string, bool) {
	var n notApplicable
	if errors.As(err, &n) {
		return n.reason, true
	}
	return "", false
}
