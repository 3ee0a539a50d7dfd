package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// chart draws one panel per workload: a horizontal bar per system with
// figures, on a logarithmic axis (the systems differ by orders of
// magnitude), the median as the bar and the min–max as a whisker.
// passbook's bars are coloured, the peers' grey.

var (
	colBackground = color.RGBA{255, 255, 255, 255}
	colText       = color.RGBA{30, 30, 30, 255}
	colGrid       = color.RGBA{225, 225, 225, 255}
	colPassbook   = color.RGBA{0, 122, 135, 255}
	colPassbookK  = color.RGBA{64, 170, 180, 255}
	colPeer       = color.RGBA{150, 150, 150, 255}
	colWhisker    = color.RGBA{40, 40, 40, 255}
)

type bar struct {
	label         string
	med, min, max float64
	col           color.Color
}

type panel struct {
	title string
	unit  string
	bars  []bar
}

func (r *results) panels() []panel {
	var ps []panel
	for _, w := range r.h.workloads {
		p := panel{title: shortTitle(w, r.h.p)}
		open := w == wOpenSmall || w == wOpenLarge
		switch {
		case w == wLatency:
			p.unit = "p99 latency, ms (shorter is better)"
		case open:
			p.unit = "open time, ms (shorter is better)"
		default:
			p.unit = "records/s (longer is better)"
		}
		for _, s := range r.withFigures(w) {
			c := r.lookup(s.name, w)
			var st stats
			switch {
			case w == wLatency:
				st = summarize(c.pct(0.99))
				st = stats{st.median * 1e3, st.min * 1e3, st.max * 1e3}
			case open:
				var xs []float64
				for _, m := range c.trials {
					xs = append(xs, m.elapsed.Seconds()*1e3)
				}
				st = summarize(xs)
			default:
				st = summarize(c.rates())
			}
			col := color.Color(colPeer)
			switch s.name {
			case pbEmbedded:
				col = colPassbook
			case pbKafka:
				col = colPassbookK
			}
			p.bars = append(p.bars, bar{label: s.name, med: st.median, min: st.min, max: st.max, col: col})
		}
		ps = append(ps, p)
	}
	return ps
}

func shortTitle(w workload, p params) string {
	switch w {
	case wSingle:
		return fmt.Sprintf("%d. append %d B, one at a time", w+1, p.size)
	case wBatch:
		return fmt.Sprintf("%d. append %d B, batches of %s", w+1, p.size, commas(int64(p.batch)))
	case wDurable:
		return fmt.Sprintf("%d. append %d B, batches, fsync before ack", w+1, p.size)
	case wReplay:
		return fmt.Sprintf("%d. replay %s records from offset 0", w+1, commas(int64(p.n)))
	case wCommit:
		return fmt.Sprintf("%d. consume, commit after every record", w+1)
	case wLatency:
		return fmt.Sprintf("%d. produce → consumer, %s/s", w+1, commas(int64(p.rate)))
	case wKiB:
		return fmt.Sprintf("%d. append 1 KiB, batches of %s", w+1, commas(int64(p.batch)))
	case wKiBDurable:
		return fmt.Sprintf("%d. append 1 KiB, batches, fsync before ack", w+1)
	case wDefaults:
		return fmt.Sprintf("%d. Kafka produce, franz-go's defaults", w+1)
	case wAcks1:
		return fmt.Sprintf("%d. acks=all, 1 partition", w+1)
	case wAcksMany:
		return fmt.Sprintf("%d. acks=all, %s partitions", w+1, commas(int64(p.partitions)))
	case wOpenSmall, wOpenLarge:
		return fmt.Sprintf("%d. open %s partitions", w+1, commas(int64(p.openPartitions(w))))
	}
	return ""
}

func (r *results) chart(file string) error {
	ps := r.panels()
	regular, err := face(goregular.TTF, 13)
	if err != nil {
		return err
	}
	bold, err := face(gobold.TTF, 15)
	if err != nil {
		return err
	}
	small, err := face(goregular.TTF, 11)
	if err != nil {
		return err
	}
	const (
		width    = 1400
		cols     = 2
		panelW   = width / cols
		labelW   = 290
		barH     = 18
		barGap   = 6
		margin   = 16
		titleH   = 52
		axisH    = 22
		headerH  = 40
		valueRes = 110 // room right of the bars for the value
	)
	heights := make([]int, len(ps))
	for i, p := range ps {
		heights[i] = titleH + max(len(p.bars), 1)*(barH+barGap) + axisH + margin
	}
	rows := (len(ps) + cols - 1) / cols
	rowH := make([]int, rows)
	for i, h := range heights {
		rowH[i/cols] = max(rowH[i/cols], h)
	}
	total := headerH
	for _, h := range rowH {
		total += h
	}
	img := image.NewRGBA(image.Rect(0, 0, width, total))
	draw.Draw(img, img.Bounds(), &image.Uniform{colBackground}, image.Point{}, draw.Src)
	text(img, bold, margin, 26, colText, "passbook side by side with its peers: medians of "+fmt.Sprint(r.h.trials)+" trial(s), whiskers min–max; logarithmic axes")

	y0 := headerH
	for row := range rows {
		for col := range cols {
			i := row*cols + col
			if i >= len(ps) {
				break
			}
			p := ps[i]
			x := col * panelW
			text(img, bold, x+margin, y0+20, colText, p.title)
			text(img, small, x+margin, y0+38, colText, p.unit)
			plotX0, plotX1 := x+labelW, x+panelW-valueRes
			top := y0 + titleH
			if len(p.bars) == 0 {
				text(img, regular, x+margin, top+14, colText, "no figures")
				continue
			}
			lo, hi := math.Inf(1), 0.0
			for _, b := range p.bars {
				lo, hi = math.Min(lo, b.min), math.Max(hi, b.max)
			}
			dLo, dHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
			if dHi <= dLo {
				dHi = dLo + 1
			}
			xOf := func(v float64) int {
				f := (math.Log10(math.Max(v, math.Pow(10, dLo))) - dLo) / (dHi - dLo)
				return plotX0 + int(f*float64(plotX1-plotX0))
			}
			bottom := top + len(p.bars)*(barH+barGap)
			for d := dLo; d <= dHi; d++ {
				gx := xOf(math.Pow(10, d))
				fill(img, gx, top-4, gx+1, bottom, colGrid)
				lbl := axisLabel(math.Pow(10, d))
				text(img, small, gx-width10(small, lbl)/2, bottom+15, colText, lbl)
			}
			for j, b := range p.bars {
				by := top + j*(barH+barGap)
				text(img, regular, x+margin, by+barH-4, colText, clip(b.label, 42))
				fill(img, plotX0, by, max(xOf(b.med), plotX0+1), by+barH, b.col)
				if b.max > b.min {
					wy := by + barH/2
					fill(img, xOf(b.min), wy, xOf(b.max)+1, wy+1, colWhisker)
					fill(img, xOf(b.min), wy-4, xOf(b.min)+1, wy+5, colWhisker)
					fill(img, xOf(b.max), wy-4, xOf(b.max)+1, wy+5, colWhisker)
				}
				v := commas(int64(math.Round(b.med)))
				if strings.Contains(p.unit, ", ms") { // latency and open time: milliseconds
					v = strings.TrimSuffix(ms(b.med/1e3), " ms") + " ms"
				}
				text(img, small, max(xOf(b.max), xOf(b.med))+6, by+barH-5, colText, v)
			}
		}
		y0 += rowH[row]
	}
	// The free cell, if any, says where and how the figures were taken.
	if i := len(ps); i%cols != 0 {
		x, y := (i%cols)*panelW+margin, headerH
		for r := range i / cols {
			y += rowH[r]
		}
		lines := append([]string{"how: " + r.h.command}, r.machine...)
		lines = append(lines, fmt.Sprintf("load average before: %s; after: %s; during: median %.2f (%.2f–%.2f)", r.loadAvg[0], r.loadAvg[1], r.loadDuring.median, r.loadDuring.min, r.loadDuring.max))
		text(img, bold, x, y+20, colText, "the run")
		for k, l := range lines {
			text(img, small, x, y+42+k*16, colText, clip(l, 110))
		}
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func axisLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func face(ttf []byte, size float64) (font.Face, error) {
	f, err := opentype.Parse(ttf)
	if err != nil {
		return nil, err
	}
	return opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
}

func text(img draw.Image, f font.Face, x, y int, c color.Color, s string) {
	d := font.Drawer{Dst: img, Src: &image.Uniform{c}, Face: f, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func width10(f font.Face, s string) int { return font.MeasureString(f, s).Round() }

func fill(img draw.Image, x0, y0, x1, y1 int, c color.Color) {
	draw.Draw(img, image.Rect(x0, y0, x1, y1), &image.Uniform{c}, image.Point{}, draw.Src)
}
