package lab

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
)

// crashChild runs Part 2's first consumer in a child process, kills it
// with SIGKILL right after the crash point, reopens the data directory and
// resumes with a new consumer of the same name.
func crashChild(ctx context.Context, o Options, dir string, r *Result) (*passbook.DB, *passbook.Topic, error) {
	processed := filepath.Join(dir, "processed-by-child")
	args := o.Child
	if len(args) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, nil, err
		}
		args = []string{exe, "lab", "--child"}
	}
	cmd := exec.CommandContext(ctx, args[0], append(args[1:],
		"-dir", dir, "-crash-at", fmt.Sprint(o.CrashAt), "-commit", o.Commit.String(), "-processed", processed)...)
	cmd.Env = append(os.Environ(), "PASSBOOK_LAB_CHILD=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start the consumer process: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "at the crash point\n" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, nil, fmt.Errorf("the consumer process did not reach the crash point (said %q): %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	db, err := passbook.Open(dir, nil)
	if err != nil {
		return nil, nil, err
	}
	t, err := db.Topic(topicName)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	counts := make([]uint8, r.N)
	b, err := os.ReadFile(processed)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	for ; len(b) >= 8; b = b[8:] {
		counts[binary.LittleEndian.Uint64(b)]++
		r.ProcessedBeforeCrash++
	}
	// The killed consumer's lease is still live, but it names a process
	// that is gone, so the new consumer takes it over at once.
	if err := resume(ctx, o, db, t, r, counts); err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, t, nil
}

// ChildMain is the consumer process of CrashProcess: it consumes as
// consumer A, recording each processed offset in a file with one write
// (which survives SIGKILL), and at the crash point says so on stdout and
// waits to be killed.
func ChildMain(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("lab-child", flag.ContinueOnError)
	dir := fs.String("dir", "", "data directory")
	crashAt := fs.Int64("crash-at", 0, "crash after this offset")
	commit := fs.String("commit", "after", "after or before")
	processed := fs.String("processed", "", "file of processed offsets")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mode, _, _, err := consumer.ParseCommit(*commit)
	if err != nil {
		return err
	}
	db, err := passbook.Open(*dir, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	t, err := db.Topic(topicName)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(*processed, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	c, err := consumer.New(ctx, t, db.Offsets(), consumer.Options{Name: consumerA, Commit: mode})
	if err != nil {
		return err
	}
	var buf [8]byte
	crashed := func() error {
		fmt.Fprintln(stdout, "at the crash point")
		<-ctx.Done() // SIGKILL comes first
		return ctx.Err()
	}
	return c.Drain(ctx, func(ctx context.Context, m consumer.Message) error {
		if m.Offset == *crashAt && mode == consumer.CommitBefore {
			return crashed()
		}
		binary.LittleEndian.PutUint64(buf[:], uint64(m.Offset))
		if _, err := f.Write(buf[:]); err != nil {
			return err
		}
		if m.Offset == *crashAt {
			return crashed()
		}
		return nil
	})
}
