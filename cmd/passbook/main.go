// Command passbook is the command-line tool for passbook, a durable
// append-only log: topics, produce, consume, lag, replay and offsets on a
// data directory, and the lab that demonstrates the idea end to end.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
)

func main() {
	raiseFileLimit()
	ctx, sig := stopOnSignal(context.Background())
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	code := 0
	switch s := sig(); {
	case err == nil:
		// Done, or stopped by a signal as its normal way to end (serve's
		// graceful shutdown): 0.
	case s != 0 && errors.Is(err, context.Canceled):
		// Interrupted part-way by SIGINT or SIGTERM: the command has said
		// what it did; the status says which signal, as a shell's does
		// (128 + its number: 130 for Ctrl-C, 143 for SIGTERM).
		code = 128 + int(s)
	default:
		fmt.Fprintln(os.Stderr, "error:", err)
		code = exitCode(err)
	}
	os.Exit(code)
}

// stopOnSignal returns a context cancelled by the first SIGINT or SIGTERM,
// and a function saying which one came (0: none). After the first, the
// signals have their default action again: a second Ctrl-C kills the
// process at once, for a command that does not stop.
func stopOnSignal(parent context.Context) (context.Context, func() syscall.Signal) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	var got atomic.Int32
	go func() {
		s := <-ch
		if n, ok := s.(syscall.Signal); ok {
			got.Store(int32(n))
		}
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		cancel()
	}()
	return ctx, func() syscall.Signal { return syscall.Signal(got.Load()) }
}

// usageError marks a bad command line: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command ") { // cobra's, for the root
		return 2
	}
	return 1
}

// run is the whole program, testable without a process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := newRootCmd(&env{stdin: stdin, stdout: stdout, stderr: stderr})
	cmd.SetArgs(args)
	cmd.SetIn(stdin)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	return cmd.ExecuteContext(ctx)
}
