//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/vbauerster/mpb/v8"
	"golang.org/x/sys/unix"
)

// termOption gives mpb a console writer that starts every frame at
// column 0. mpb's own (cupwriter) goes back up over the last frame
// without a carriage return; a terminal echoes ^C where the cursor is,
// so the final frame of an interrupted command was drawn two columns to
// the right, over the start of the old one ("coconsume [===…").
func termOption(f *os.File) mpb.ContainerOption {
	return mpb.WithConsoleWriter(&termWriter{out: f})
}

// termWriter is an mpb.ConsoleWriter on a terminal: frames gather in the
// buffer and Flush writes each in one write, after a carriage return and
// the escape codes that go back over the previous frame.
type termWriter struct {
	bytes.Buffer
	out   *os.File
	lines int // lines the previous frame took
	frame []byte
}

func (w *termWriter) IsTerminal() bool { return true }

func (w *termWriter) GetTermSize() (width, height int, err error) {
	ws, err := unix.IoctlGetWinsize(int(w.out.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, err
	}
	return int(ws.Col), int(ws.Row), nil
}

func (w *termWriter) Flush(lines int) error {
	w.frame = append(w.frame[:0], '\r')
	if w.lines > 0 {
		w.frame = fmt.Appendf(w.frame, "\x1b[%dA\x1b[J", w.lines)
	}
	w.frame = append(w.frame, w.Bytes()...)
	w.Reset()
	w.lines = lines
	_, err := w.out.Write(w.frame)
	return err
}
