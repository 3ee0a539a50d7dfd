// Command bench runs passbook's storage engine side by side with peer
// systems on the same workloads, and prints the figures as markdown.
//
// It is its own module, so that the peers it links are not passbook's
// dependencies. From the repository root:
//
//	go run -C bench . --peers all --n 1000000   # passbook vs every peer, 3 trials
//	go run -C bench . --quick                   # a smoke run of seconds, peers that are installed
//	go run -C bench . -h                        # the flags
//	go run -C bench . wal                       # storage.Log vs tidwall/wal in depth, 3 trials
//	go run -C bench . wal -quick                # a smoke run of a few seconds
//	go run -C bench . mirror [-brokers B]       # passbook mirror vs kcat | kcat vs franz-go's producer
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

const usage = `usage: bench [--peers LIST] [--n N] [flags]    passbook side by side with its peers
       bench wal [flags]                         passbook's storage.Log vs github.com/tidwall/wal
       bench mirror [flags]                      passbook mirror to Kafka vs kcat | kcat vs franz-go's producer

Run "bench -h" or "bench wal -h" for the flags.
`

// run dispatches to a subcommand. Commands starting with "_" are the
// child processes that the open-after-kill workload starts.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	if strings.HasPrefix(args[0], "-") && !slices.Contains([]string{"-h", "-help", "--help"}, args[0]) {
		return runPeers(ctx, args, stdout, stderr)
	}
	switch args[0] {
	case "peers":
		return runPeers(ctx, args[1:], stdout, stderr)
	case "wal":
		return runWAL(ctx, args[1:], stdout, stderr)
	case "mirror":
		return runMirror(ctx, args[1:], stdout, stderr)
	case kfakeCommand:
		return runKfake(args[1:])
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
