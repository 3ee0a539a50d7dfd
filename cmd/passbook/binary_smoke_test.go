package main

import (
	"strings"
	"testing"
)

// TestBinary_Help: the built binary starts and prints its help.
func TestBinary_Help(t *testing.T) {
	out, _, code := runBinary(t, t.TempDir(), "", "--help")
	if code != 0 || !strings.Contains(out, "passbook lab") {
		t.Fatalf("passbook --help: exit %d, output %q", code, out)
	}
}
