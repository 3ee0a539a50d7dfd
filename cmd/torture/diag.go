package main

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// diagLog keeps the last lines logged by a Kafka trial's consumer client
// and in-process server, to explain a broken promise after the fact
// without printing every trial's chatter.
type diagLog struct {
	mu     sync.Mutex
	lines  []string
	next   int
	marked string // the lines kept when mark was first called
}

const diagLines = 400

func newDiagLog() *diagLog { return &diagLog{lines: make([]string, 0, diagLines)} }

func (d *diagLog) Write(b []byte) (int, error) {
	s := time.Now().Format("15:04:05.000000 ") + strings.TrimRight(string(b), "\n")
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.lines) < diagLines {
		d.lines = append(d.lines, s)
	} else {
		d.lines[d.next] = s
		d.next = (d.next + 1) % diagLines
	}
	return len(b), nil
}

// String returns the lines kept, oldest first.
func (d *diagLog) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for i := range d.lines {
		b.WriteString(d.lines[(d.next+i)%len(d.lines)])
		b.WriteByte('\n')
	}
	return b.String()
}

// client returns a franz-go logger writing into d.
func (d *diagLog) client(prefix string) kgo.Logger {
	return kgo.BasicLogger(d, kgo.LogLevelInfo, func() string { return prefix + " " })
}

// server returns a slog logger writing into d at debug level.
func (d *diagLog) server() *slog.Logger {
	return slog.New(slog.NewTextHandler(d, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// mark notes a broken promise (the ledger's onRewind) and keeps the
// lines logged up to it, which hold its cause; only the first counts.
func (d *diagLog) mark(note string) {
	d.Write([]byte("TORTURE: " + note))
	s := fmt.Sprintf("---- %s: the last %d lines of the Kafka client and server logs ----\n%s----", note, diagLines, d.String())
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.marked == "" {
		d.marked = s
	}
}

// report adds the lines kept by mark, if any, to t's notes.
func (d *diagLog) report(t *tally) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.marked != "" {
		t.notef("%s", d.marked)
	}
}
