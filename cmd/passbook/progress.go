package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// unit is what a progress bar counts.
type unit int

const (
	unitRecords unit = iota // records, shown as counts
	unitBytes               // bytes, shown with units (KiB, MiB, …)
)

// progress is a progress bar on stderr. It is drawn only when stderr is a
// terminal and stdout is not that same terminal: a bar redrawn over the
// lines a command prints (consume to the screen, produce --print-offsets)
// would hide them, so there it is not drawn at all. Otherwise every method
// does nothing.
type progress struct {
	p     *mpb.Progress
	bar   *mpb.Bar
	total int64
	u     unit
	began time.Time
}

// newProgress starts a bar named name counting to total (0: unknown, as
// for stdin: then it shows the count and the rate only) in unit u. stdout
// is where the command writes its data, passed so that the bar never
// hides it; nil says the command writes nothing there (produce without
// --print-offsets), so the bar may share the terminal.
func newProgress(stdout, stderr io.Writer, name string, total int64, u unit) *progress {
	if !isTerminal(stderr) || sameFile(stdout, stderr) {
		return &progress{}
	}
	pr := &progress{total: total, u: u, began: time.Now()}
	pr.p = mpb.New(termOption(stderr.(*os.File)), mpb.WithWidth(30), mpb.WithRefreshRate(200*time.Millisecond))
	status := decor.Any(func(s decor.Statistics) string {
		return progressStatus(pr.u, pr.total, s.Current, time.Since(pr.began), s.Aborted)
	})
	var filler mpb.BarFillerBuilder = mpb.BarStyle()
	if total <= 0 {
		filler = mpb.NopStyle() // no bar to fill without a total
	}
	pr.bar = pr.p.New(max(total, 0), filler,
		mpb.PrependDecorators(decor.Name(name)),
		mpb.AppendDecorators(status),
	)
	return pr
}

// sameFile reports whether a and b are the same open file (the same
// terminal, for stdout and stderr on a screen).
func sameFile(a, b io.Writer) bool {
	if a == nil || b == nil {
		return false
	}
	fa, ok := a.(*os.File)
	if !ok {
		return false
	}
	fb, ok := b.(*os.File)
	if !ok {
		return false
	}
	sa, err := fa.Stat()
	if err != nil {
		return false
	}
	sb, err := fb.Stat()
	return err == nil && os.SameFile(sa, sb)
}

// add counts n more units done.
func (pr *progress) add(n int) {
	if pr.bar != nil && n > 0 {
		pr.bar.IncrBy(n)
	}
}

// finish ends the bar in the state the command ended in: complete when
// err is nil, stopped where it stands (and marked so) otherwise; it waits
// for the last draw.
func (pr *progress) finish(err error) {
	if pr.bar == nil {
		return
	}
	if err != nil {
		pr.bar.Abort(false)
	} else {
		pr.bar.SetTotal(-1, true)
	}
	pr.p.Wait()
}

// progressStatus is the text after a bar's name: how much is done (of
// how much, when the total is known), the share done, and the average
// rate since the start — "1,234 / 5,000 records  24%  61,700 records/s",
// or "12.0 MiB  4.0 MiB/s" for bytes of unknown total. A bar stopped by
// an error or an interrupt says so.
func progressStatus(u unit, total, current int64, elapsed time.Duration, stopped bool) string {
	var b strings.Builder
	b.WriteString(progressAmount(u, current))
	if total > 0 {
		b.WriteString(" / ")
		b.WriteString(progressAmount(u, total))
		if u == unitRecords {
			b.WriteString(" records")
		}
		fmt.Fprintf(&b, "  %d%%", min(100, current*100/total))
	} else if u == unitRecords {
		b.WriteString(" records")
	}
	b.WriteString("  ")
	b.WriteString(progressRate(u, current, elapsed))
	if stopped {
		b.WriteString("  (stopped)")
	}
	return b.String()
}

// progressAmount is n in unit u: a count with thousands separators for
// records, B/KiB/MiB/GiB for bytes.
func progressAmount(u unit, n int64) string {
	if u == unitRecords {
		return thousands.Int(n)
	}
	return byteSize(float64(n))
}

// progressRate is the average rate of n units over elapsed.
func progressRate(u unit, n int64, elapsed time.Duration) string {
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(n) / s
	}
	if u == unitRecords {
		return thousands.Int(int64(rate+0.5)) + " records/s"
	}
	return byteSize(rate) + "/s"
}

// byteSize is n bytes in binary units: 512 B, 1.5 KiB, 12.0 MiB, 3.2 GiB.
func byteSize(n float64) string {
	if n < 1024 {
		return fmt.Sprintf("%.0f B", n)
	}
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		n /= 1024
		if n < 1024 || u == "TiB" {
			return fmt.Sprintf("%.1f %s", n, u)
		}
	}
	panic("unreachable")
}
