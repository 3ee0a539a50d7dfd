package main

import "testing"

// TestLedger_CommitsAfterTheFault: a commit answered before the fault is a
// promise the checks hold the store to; one answered after it (while a
// power cut's snapshot is being taken and the server still answers) may
// or may not survive, so it is not recorded; after Resume, commits count
// again.
func TestLedger_CommitsAfterTheFault(t *testing.T) {
	lg := newLedger()
	lg.Committed("g", 0, 10)
	lg.Fault()
	lg.Committed("g", 0, 20)
	if got := lg.commits["g"][0]; got != 10 {
		t.Fatalf("after the fault: last commit %d, want 10 (the one answered before it)", got)
	}
	lg.Resume([]int64{15})
	lg.Committed("g", 0, 30)
	if got := lg.commits["g"][0]; got != 30 {
		t.Fatalf("after Resume: last commit %d, want 30", got)
	}
}
