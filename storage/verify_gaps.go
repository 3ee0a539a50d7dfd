package storage

import "fmt"

// gapRule says where a partition's offsets may legitimately skip, so
// that Verify accepts gaps exactly where the engine does.
type gapRule struct{}

// readGapRule reads what the partition's FORMAT line says about gaps.
func readGapRule(fsys interface{}, dir, format string) (gapRule, error) {
	if format != formatLine {
		return gapRule{}, fmt.Errorf("unknown format %q", format)
	}
	return gapRule{}, nil
}

// inside reports whether offsets may skip inside the segment at base.
func (g gapRule) inside(base int64) bool { return false }

// between reports whether offsets may skip from prevNext, where one
// segment ends, to base, where the next one starts.
func (g gapRule) between(prevNext, base int64) bool { return false }

// isGapRuleFile reports whether name is a file the gap rule reads.
func isGapRuleFile(name string) bool { return false }
