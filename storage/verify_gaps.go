package storage

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/passbook-log/passbook/vfs"
)

// gapRule says where a partition's offsets may legitimately skip, so
// that Verify accepts gaps exactly where the engine does (see "The gap
// rule" in the package doc): only inside the batches of a closed segment
// the cleaner may have rewritten — one whose base is below CLEANER's
// rewritten point — in a partition of format 2. Batches and segments
// always follow one another offset by offset.
type gapRule struct {
	rewritten int64
	// swapBase and swapEnd are a swap CLEANER has committed (swapEnd >
	// swapBase): Open completes it, putting the cleaned segment at
	// swapBase in place of the segments with bases in [swapBase, swapEnd).
	swapBase, swapEnd int64
	state             cleanerState
}

// readGapRule reads the gap rule of the partition in dir, whose FORMAT
// file holds format.
func readGapRule(fsys vfs.FS, dir, format string) (gapRule, error) {
	switch format {
	case formatLine:
		return gapRule{}, nil
	case formatLine2:
		st, err := readCleaner(fsys, dir)
		if err != nil {
			return gapRule{}, err
		}
		return gapRule{rewritten: st.rewritten, swapBase: st.swapBase, swapEnd: st.swapEnd, state: st}, nil
	}
	return gapRule{}, fmt.Errorf("unknown format %q", strings.TrimSpace(format))
}

// inside reports whether records may skip offsets inside the batches of
// the segment at base (never the active one).
func (g gapRule) inside(base int64, active bool) bool { return !active && base < g.rewritten }

// swapPending reports whether CLEANER names a swap that Open completes.
func (g gapRule) swapPending() bool { return g.swapEnd > g.swapBase }

// swapped reports whether the segment at base is one a pending swap
// removes.
func (g gapRule) swapped(base int64) bool {
	return g.swapPending() && base > g.swapBase && base < g.swapEnd
}

// isGapRuleFile reports whether name is a file of compaction's, which
// Verify knows.
func isGapRuleFile(name string) bool {
	return name == cleanerFile
}

// isCleanedFile reports whether name is a cleaned segment file being
// written or swapped in.
func isCleanedFile(name string) bool { return strings.HasSuffix(name, cleanedSuffix) }

// cleanedPath is the name of the cleaned file that will replace the
// segment file path when a pending swap completes, if it exists.
func cleanedPath(fsys vfs.FS, path string) (string, bool) {
	p := path + cleanedSuffix
	_, err := fsys.Stat(p)
	return p, err == nil && strings.HasPrefix(filepath.Base(p), filepath.Base(path))
}
