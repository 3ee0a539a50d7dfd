package lab

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/passbook-log/passbook"
	"github.com/passbook-log/passbook/consumer"
)

// ChildEnv is the environment variable that carries the consumer
// process's settings (CrashProcess) from the lab to its child, as JSON.
// The child's command line (Options.Child, default "passbook lab --child")
// carries none of them, so no command-line parser can misread them.
const ChildEnv = "PASSBOOK_LAB_CHILD"

// childSpec is what the consumer process needs to know.
type childSpec struct {
	Dir       string `json:"dir"`
	CrashAt   int64  `json:"crash_at"`
	Commit    string `json:"commit"`
	Processed string `json:"processed"`
}

// crashChild runs Part 2's first consumer in a child process, kills it
// with SIGKILL at the crash point, reopens the data directory and resumes
// with a new consumer of the same name.
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
	spec, err := json.Marshal(childSpec{Dir: dir, CrashAt: o.CrashAt, Commit: string(o.Commit), Processed: processed})
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), ChildEnv+"="+string(spec))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
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
		msg := strings.TrimSpace(stderr.String())
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return nil, nil, fmt.Errorf("the consumer process (%s) did not reach the crash point: %s", strings.Join(args, " "), msg)
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
// waits to be killed. With CommitTx the file records each handler run and
// the work is the record's row in WorkTable, written in the transaction
// of its offset, which is still open when the kill comes. spec is the
// value of ChildEnv, set by the lab.
func ChildMain(ctx context.Context, spec string, stdout io.Writer) error {
	if spec == "" {
		return fmt.Errorf("lab: the consumer process needs $%s (it is started by the lab, not by hand)", ChildEnv)
	}
	var cs childSpec
	if err := json.Unmarshal([]byte(spec), &cs); err != nil {
		return fmt.Errorf("lab: $%s: %w", ChildEnv, err)
	}
	commit := Commit(cs.Commit)
	if !slices.Contains(Commits, commit) {
		return fmt.Errorf("lab: $%s: commit %q (want after, before or tx)", ChildEnv, cs.Commit)
	}
	db, err := passbook.Open(cs.Dir, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	t, err := db.Topic(topicName)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(cs.Processed, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	c, err := consumer.New(ctx, t, db.Offsets(), consumer.Options{Name: consumerA, Commit: commit.consumerMode()})
	if err != nil {
		return err
	}
	var buf [8]byte
	crashed := func() error {
		// With CommitTx the transaction holding this record's work row
		// and its offset is still open: SIGKILL ends it uncommitted.
		fmt.Fprintln(stdout, "at the crash point")
		<-ctx.Done() // SIGKILL comes first
		return ctx.Err()
	}
	h := func(ctx context.Context, m consumer.Message) error {
		if m.Offset == cs.CrashAt && commit == CommitBefore {
			return crashed()
		}
		binary.LittleEndian.PutUint64(buf[:], uint64(m.Offset))
		if _, err := f.Write(buf[:]); err != nil {
			return err
		}
		if m.Offset == cs.CrashAt {
			return crashed()
		}
		return nil
	}
	if commit != CommitTx {
		return c.Drain(ctx, h)
	}
	ins, err := prepareWork(ctx, db.Offsets().DB())
	if err != nil {
		return err
	}
	defer ins.Close()
	return c.RunTx(ctx, false, func(ctx context.Context, tx *sql.Tx, m consumer.Message) error {
		if err := writeWork(ctx, tx, ins, consumerA, m); err != nil {
			return err
		}
		return h(ctx, m)
	})
}
