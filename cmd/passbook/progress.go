package main

import (
	"io"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progress is a progress bar on stderr, drawn only when stderr is a
// terminal; otherwise every method does nothing.
type progress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

// newProgress starts a bar counting to total (0: unknown) named name.
func newProgress(stderr io.Writer, name string, total int64) *progress {
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

// done completes the bar and waits for it to be drawn.
func (pr *progress) done() {
	if pr.bar != nil {
		pr.bar.SetTotal(-1, true)
		pr.p.Wait()
	}
}
