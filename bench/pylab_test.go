package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestPythonLab_StandIn: our stand-in for the course's script
// (pylab/append_log.py, run by bench/labvspython.sh beside `passbook lab`)
// reproduces the course's figures, and the harness's python-lab peer
// reads its tally.
func TestPythonLab_StandIn(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	out, err := exec.Command("python3", "pylab/append_log.py", "--dir", t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("python3 pylab/append_log.py: %v\n%s", err, out)
	}
	for _, want := range []string{
		"last three offsets handed back:  [99997, 99998, 99999]",
		"crashed after processing offset: 59,999",
		"committed offset the store kept: 59,999",
		"restarted consumer resumed from: 59,999",
		"total records processed:         100,001 (= N + 1)",
		"records MISSED (processed 0x):   0",
		"records DUPLICATED (2x):         1 at offset [59999]",
		"records consumer B replayed:       100,000",
		"B read every offset 0..99,999 in order: True",
		"consumer B's offset now:           100,000",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the stand-in's output lacks %q:\n%s", want, out)
		}
	}

	s := pythonLab("pylab/append_log.py")
	if s.unavailable != "" {
		t.Fatal(s.unavailable)
	}
	tg, err := s.start(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := tg.run(context.Background(), wCommit, params{})
	if err != nil {
		t.Fatal(err)
	}
	if m.records != 100_001 || m.elapsed <= 0 {
		t.Errorf("the harness read %d records in %v, want 100,001", m.records, m.elapsed)
	}
	t.Logf("the stand-in: %d records processed in %v", m.records, m.elapsed)
}
