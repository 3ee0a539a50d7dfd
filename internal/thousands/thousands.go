// Package thousands formats numbers for people: with thousands
// separators, as every figure passbook prints is written.
package thousands

import (
	"strconv"
	"strings"
)

// Int formats n with commas: 1234567 → "1,234,567".
func Int[T ~int | ~int32 | ~int64 | ~uint32 | ~uint64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Float formats f rounded to a whole number, with commas.
func Float(f float64) string {
	if f < 0 {
		return "-" + Int(int64(-f+0.5))
	}
	return Int(int64(f + 0.5))
}
