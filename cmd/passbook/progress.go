package main

import (
	"io"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// unit is what a progress bar counts.
type unit int

const (
	unitRecords unit = iota // records, shown as counts
	unitBytes               // bytes, shown with units (KiB, MiB, …)
)

// progress is a progress bar on stderr, drawn only when stderr is a
// terminal; otherwise every method does nothing.
type progress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

// newProgress starts a bar named name counting to total (0: unknown) in
// unit u. stdout is passed so that the bar never hides data the command
// writes there.
func newProgress(stdout, stderr io.Writer, name string, total int64, u unit) *progress {
	if !isTerminal(stderr) {
		return &progress{}
	}
	p := mpb.New(mpb.WithOutput(stderr), mpb.WithWidth(40))
	bar := p.AddBar(total,
		mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d / %d")),
		mpb.AppendDecorators(decor.EwmaSpeed(0, " %.0f/s", 30), decor.Name(" "), decor.Percentage()),
	)
	return &progress{p: p, bar: bar}
}

func (pr *progress) add(n int) {
	if pr.bar != nil {
		pr.bar.EwmaIncrBy(n, 0)
	}
}

// finish ends the bar in the state the command ended in: complete when
// err is nil, stopped where it was otherwise; it waits for the last draw.
func (pr *progress) finish(err error) {
	if pr.bar != nil {
		pr.bar.SetTotal(-1, true)
		pr.p.Wait()
	}
}
