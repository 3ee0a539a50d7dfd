package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestDiagLog: the log keeps the last diagLines lines, and a mark keeps
// those logged up to the broken promise for the trial's notes, however
// much is logged after it.
func TestDiagLog(t *testing.T) {
	d := newDiagLog()
	for i := range diagLines + 10 {
		fmt.Fprintf(d, "line %d\n", i)
	}
	if s := d.String(); strings.Contains(s, "line 9\n") || !strings.Contains(s, "line 10\n") || strings.Count(s, "\n") != diagLines {
		t.Fatalf("kept:\n%s", s)
	}
	var tl tally
	d.report(&tl)
	if len(tl.notes) != 0 {
		t.Fatalf("notes without a mark: %q", tl.notes)
	}
	d.mark("partition 1 went back")
	for i := range diagLines {
		fmt.Fprintf(d, "after %d\n", i)
	}
	d.mark("a second one")
	d.report(&tl)
	if len(tl.notes) != 1 || !strings.Contains(tl.notes[0], "partition 1 went back") ||
		!strings.Contains(tl.notes[0], fmt.Sprintf("line %d\n", diagLines+9)) || strings.Contains(tl.notes[0], "after 0") {
		t.Fatalf("notes %q", tl.notes)
	}
}
