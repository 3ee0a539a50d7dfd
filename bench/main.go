// Command bench runs passbook's storage engine side by side with peer
// systems on the same workloads, and prints the figures as markdown.
//
// It is its own module, so that the peers it links are not passbook's
// dependencies. From the repository root:
//
//	go run -C bench . wal           # passbook vs tidwall/wal, 3 trials
//	go run -C bench . wal -quick    # a smoke run of a few seconds
//	go run -C bench . wal -h        # the flags
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

const usage = `usage: bench <command> [flags]

commands:
  wal    passbook's storage.Log vs github.com/tidwall/wal
`

// run dispatches to a subcommand. Commands starting with "_" are the
// child processes that the open-after-kill workload starts.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "wal":
		return runWAL(ctx, args[1:], stdout, stderr)
	case fillCommand:
		return runFill(args[1:])
	case openCommand:
		return runOpenProbe(args[1:], stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
