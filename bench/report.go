package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// stats summarizes the trials of one measurement.
type stats struct {
	median, min, max float64
}

func summarize(xs []float64) stats {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n == 0 {
		return stats{}
	}
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return stats{median: med, min: s[0], max: s[n-1]}
}

// commas formats n with thousands separators: 1234567 → "1,234,567".
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// rate formats records/s as a median with its range over the trials.
func (s stats) rate() string {
	r := func(x float64) string { return commas(int64(math.Round(x))) }
	if s.min == s.max {
		return r(s.median)
	}
	return fmt.Sprintf("%s (%s–%s)", r(s.median), r(s.min), r(s.max))
}

// duration formats seconds as a median with its range over the trials.
func (s stats) duration() string {
	d := func(x float64) string { return roundDuration(time.Duration(x * float64(time.Second))).String() }
	if s.min == s.max {
		return d(s.median)
	}
	return fmt.Sprintf("%s (%s–%s)", d(s.median), d(s.min), d(s.max))
}

// size formats bytes as a median with its range over the trials.
func (s stats) size() string {
	b := func(x float64) string { return bytesIEC(int64(math.Round(x))) }
	if s.min == s.max {
		return b(s.median)
	}
	return fmt.Sprintf("%s (%s–%s)", b(s.median), b(s.min), b(s.max))
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(100 * time.Nanosecond)
}

// bytesIEC formats a byte count in binary units: 1073741824 → "1.00 GiB".
func bytesIEC(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	x, i := float64(n), 0
	for x >= 1024 && i < len(units)-1 {
		x /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.2f %s", x, units[i])
}

// parseSize parses a byte count with an optional binary unit: "1GiB",
// "64MiB", "512KiB", "4096".
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 1GiB, 64MiB, 4096)", s)
	}
	return int64(f * float64(mult)), nil
}

// machine describes where the figures were measured.
func machine(dir string) []string {
	lines := []string{
		fmt.Sprintf("cpu: %d logical CPUs%s", runtime.NumCPU(), ifSet(", ", cpuModel())),
		"memory: " + memTotal(),
		fmt.Sprintf("go: %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH),
	}
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		lines = append(lines, "kernel: Linux "+strings.TrimSpace(string(k)))
	}
	if out, err := exec.Command("df", "-hT", dir).Output(); err == nil {
		rows := strings.Split(strings.TrimSpace(string(out)), "\n")
		f := strings.Fields(rows[len(rows)-1])
		if len(f) >= 7 {
			lines = append(lines, fmt.Sprintf("disk (df -hT %s): %s, %s, size %s, %s free, mounted on %s", dir, f[0], f[1], f[2], f[4], f[6]))
		}
	}
	return lines
}

func ifSet(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memTotal() string {
	kb := procValue("/proc/meminfo", "MemTotal")
	if kb == 0 {
		return "unknown"
	}
	return bytesIEC(kb * 1024)
}

// procValue reads a "Key:  123 kB" line of a /proc file, in kB.
func procValue(file, key string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// moduleVersion is the version of a dependency linked into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}
