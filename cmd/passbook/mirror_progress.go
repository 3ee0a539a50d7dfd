package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/passbook-log/passbook/internal/thousands"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// mirrorProgress is mirror's progress on a terminal (stderr): a line per
// topic with the records and bytes copied, the rate, and the lag (source
// records not yet on the target). Off a terminal it draws nothing.
type mirrorProgress struct {
	p     *mpb.Progress
	m     *mirror
	began time.Time

	mu     sync.Mutex
	bars   map[string]*mpb.Bar
	counts map[string]*[3]int64 // records, bytes, lag
}

func newMirrorProgress(e *env, m *mirror) *mirrorProgress {
	pr := &mirrorProgress{m: m, began: time.Now(), bars: map[string]*mpb.Bar{}, counts: map[string]*[3]int64{}}
	if !isTerminal(e.stderr) {
		return pr
	}
	pr.p = mpb.New(termOption(e.stderr.(*os.File)), mpb.WithWidth(1), mpb.WithRefreshRate(200*time.Millisecond))
	width := 0
	for _, name := range m.sum.order {
		width = max(width, len(name))
	}
	for _, name := range m.sum.order {
		c := &[3]int64{0, 0, m.lagOf(name)}
		pr.counts[name] = c
		pr.bars[name] = pr.p.New(0, mpb.NopStyle(),
			mpb.PrependDecorators(decor.Name("mirror "+name, decor.WCSyncSpaceR)),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
				pr.mu.Lock()
				defer pr.mu.Unlock()
				el := time.Since(pr.began)
				return fmt.Sprintf("%s records  %s  %s  %s  lag %s", thousands.Int(c[0]), byteSize(float64(c[1])),
					progressRate(unitRecords, c[0], el), progressRate(unitBytes, c[1], el), thousands.Int(c[2]))
			})))
	}
	return pr
}

// lagOf is the lag of a topic: source records not yet on the target.
func (m *mirror) lagOf(name string) int64 {
	var lag int64
	for at, pm := range m.parts {
		if at.topic == name {
			lag += max(0, m.heads[at]-pm.covered)
		}
	}
	return lag
}

// add counts records and bytes copied of topic, whose lag is now lag.
func (pr *mirrorProgress) add(topic string, records int, bytes, lag int64) {
	if pr.p == nil {
		return
	}
	pr.mu.Lock()
	if c := pr.counts[topic]; c != nil {
		c[0] += int64(records)
		c[1] += bytes
		c[2] = lag
	}
	pr.mu.Unlock()
}

func (pr *mirrorProgress) finish(err error) {
	if pr.p == nil {
		return
	}
	for _, b := range pr.bars {
		if err != nil {
			b.Abort(false)
		} else {
			b.SetTotal(-1, true)
		}
	}
	pr.p.Wait()
}
