package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/passbook-log/passbook"
	"github.com/spf13/cobra"
)

// env is what every command shares: the streams and the global flags.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	data           string
	verbose        bool
}

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "passbook",
		Short: "A durable append-only log where every reader keeps its own place",
		Long: `passbook is a durable append-only log. Records get offsets 0, 1, 2, … that
never change; each consumer keeps its own committed offset (the next offset
to read), so a crashed consumer resumes with nothing lost and a new one can
replay all of history.

Start with:  passbook lab`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&e.data, "data", "./passbook-data", "data directory")
	root.PersistentFlags().BoolVarP(&e.verbose, "verbose", "v", false, "log what the engine does to stderr")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nSee '%s --help'.", err, c.CommandPath())}
	})
	root.AddCommand(
		newTopicCmd(e), newProduceCmd(e), newConsumeCmd(e), newLagCmd(e),
		newReplayCmd(e), newOffsetsCmd(e), newLabCmd(e),
		newServeCmd(e), newVerifyCmd(e), newRepairCmd(e), newDumpCmd(e),
	)
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	return root
}

// wrapArgs makes argument-count errors usage errors (exit code 2).
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{fmt.Errorf("%w\nSee '%s --help'.", err, cmd.CommandPath())}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// open opens the data directory.
func (e *env) open() (*passbook.DB, error) {
	o := &passbook.Options{}
	if e.verbose {
		o.Logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return passbook.Open(e.data, o)
}

// topic opens the data directory and one topic in it.
func (e *env) topic(name string) (*passbook.DB, *passbook.Topic, error) {
	db, err := e.open()
	if err != nil {
		return nil, nil, err
	}
	t, err := db.Topic(name)
	if err != nil {
		db.Close()
		if errors.Is(err, passbook.ErrInvalidName) {
			return nil, nil, usageError{err} // no topic can have that name
		}
		return nil, nil, fmt.Errorf("%w (create it with: passbook topic create %s)", err, name)
	}
	return db, t, nil
}

// isTerminalReader reports whether r is a terminal (to ask questions).
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// isTerminal reports whether w is a terminal (for progress bars).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
