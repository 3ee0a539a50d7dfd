package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"

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
		Version:       version(),
		Args:          unknownCommand,
		RunE:          func(c *cobra.Command, args []string) error { return c.Help() },
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.PersistentFlags().StringVar(&e.data, "data", "./passbook-data", "data directory")
	root.PersistentFlags().BoolVarP(&e.verbose, "verbose", "v", false, "log what the engine does to stderr")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if m := negativeArg.FindStringSubmatch(err.Error()); m != nil {
			if c.CommandPath() == "passbook offsets set" {
				return usagef("offset %s: a committed offset can't be negative (it is the next offset to read: 0 or more)\nSee '%s --help'.", m[1], c.CommandPath())
			}
			return usagef("%s reads as a flag, and no argument here is a negative number\nSee '%s --help'.", m[1], c.CommandPath())
		}
		//lint:ignore ST1005 printed to people as it is: a sentence, and how to get help
		return usageError{fmt.Errorf("%w\nSee '%s --help'.", err, c.CommandPath())}
	})
	root.AddCommand(
		newTopicCmd(e), newProduceCmd(e), newConsumeCmd(e), newLagCmd(e),
		newReplayCmd(e), newOffsetsCmd(e), newLabCmd(e),
		newServeCmd(e), newUserCmd(e), newACLCmd(e), newTokenCmd(e),
		newVerifyCmd(e), newRepairCmd(e), newDumpCmd(e), newMirrorCmd(e),
		newVersionCmd(),
	)
	wrapArgs(root)
	return root
}

// negativeArg matches pflag's error for an argument such as -3, which it
// reads as shorthand flags.
var negativeArg = regexp.MustCompile(`^unknown shorthand flag: '[0-9]' in (-[0-9][0-9_]*)$`)

// unknownCommand is the Args of a command that only groups subcommands
// (and of the root): any argument is a mistyped subcommand, a usage error
// (exit 2) with cobra's suggestions, where cobra itself would print help
// and exit 0 for all but the root.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only for the root
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usagef("%s", msg) // wrapArgs adds the pointer to --help
}

// group makes c a command that only groups subcommands: run without one,
// it prints its help and exits 2; with an unknown one, it says so.
func group(c *cobra.Command) *cobra.Command {
	c.Args = unknownCommand
	c.RunE = func(c *cobra.Command, args []string) error {
		c.SetOut(c.ErrOrStderr())
		c.Help()
		return usagef("%s needs a command: %s", c.CommandPath(), strings.Join(subNames(c), ", "))
	}
	return c
}

func subNames(c *cobra.Command) []string {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return names
}

// wrapArgs makes argument-count errors usage errors (exit code 2).
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				//lint:ignore ST1005 printed to people as it is: a sentence, and how to get help
				return usageError{fmt.Errorf("%w\nSee '%s --help'.", err, cmd.CommandPath())}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// open opens an existing data directory: every command but topic create,
// serve and lab works on one that exists (produce too: it never creates
// a topic or a directory), and none creates one where --data was mistyped.
func (e *env) open() (*passbook.DB, error) {
	db, err := e.openDB(true)
	return db, noDataDirHint(err)
}

// noDataDirHint says what to do about a data directory that is not there.
func noDataDirHint(err error) error {
	if errors.Is(err, passbook.ErrNoDataDir) {
		return fmt.Errorf("%w (create one with: passbook topic create NAME, or pass --data)", err)
	}
	return err
}

// create opens the data directory, creating it if needed.
func (e *env) create() (*passbook.DB, error) { return e.openDB(false) }

// openWith opens the data directory with o, creating it if needed.
func (e *env) openWith(o *passbook.Options) (*passbook.DB, error) {
	if e.verbose {
		o.Logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return passbook.Open(e.data, o)
}

func (e *env) openDB(existing bool) (*passbook.DB, error) {
	o := &passbook.Options{NoCreate: existing}
	if e.verbose {
		o.Logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		logFileLimit(o.Logger.Debug)
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

// closeDB closes a command's data directory when it returns: Close
// writes the clean-shutdown checkpoint and syncs what is left, so its
// failure is the command's failure when nothing else went wrong first.
// Use it as defer closeDB(db, &rerr) with rerr the command's named
// result.
func closeDB(db *passbook.DB, rerr *error) {
	if err := db.Close(); err != nil && *rerr == nil {
		*rerr = fmt.Errorf("close the data directory: %w", err)
	}
}
