package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var stamps = regexp.MustCompile(`\d{8}T\d{6}Z`)

// TestCLI_Forensics_Golden runs verify, repair and dump on a data
// directory, clean and then damaged, and compares what they print with
// testdata/forensics.golden.
func TestCLI_Forensics_Golden(t *testing.T) {
	data := t.TempDir()
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("order-%03d", i))
	}
	var seg string // the second segment
	flip := func(pos int64) func() {
		return func() {
			logs, _ := filepath.Glob(filepath.Join(data, "topics", "orders", "0", "*.log"))
			if len(logs) < 3 {
				t.Fatalf("segments %v", logs)
			}
			seg = logs[1]
			b, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			b[pos] ^= 0x20
			os.WriteFile(seg, b, 0o644)
		}
	}
	steps := []struct {
		before func()
		stdin  string
		args   string
	}{
		{nil, "", "topic create orders --internal-segment-bytes 1024"},
		{nil, strings.Join(lines, "\n") + "\n", "produce orders --batch-records 1"}, // a batch per record, three segments
		{nil, "", "offsets set 30 --consumer billing --topic orders"},
		{nil, "", "verify"},
		{nil, "", "dump orders --segment 13 --from 14 --records --max-bytes 5"},
		{flip(2*79 + 70), "", "verify"}, // a value byte of the third batch of the second segment
		{nil, "", "verify --quiet"},
		{nil, "", "dump orders --segment 13"},
		{nil, "", "repair --dry-run"},
		{nil, "", "repair"},
		{nil, "", "verify"},
		{nil, "", "consume orders --consumer billing --max 1"},
		{nil, "", "consume orders --consumer late --from earliest --max 1"},
		{nil, "", "repair"},
		{nil, "", "dump nope"},
		{nil, "", "dump ../x"},
		{nil, "", "dump orders --segment 7"},
		{nil, "", "verify extra"},
	}
	var got strings.Builder
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		args := append([]string{"--data", data}, strings.Fields(s.args)...)
		out, errOut, code := runCLI(t, s.stdin, args...)
		fmt.Fprintf(&got, "$ passbook %s\n%s", s.args, strings.ReplaceAll(out, data, "DATA"))
		if code != 0 {
			fmt.Fprintf(&got, "[exit %d] %s", code, strings.ReplaceAll(errOut, data, "DATA"))
		}
	}
	// The moved-aside file reads back with dump FILE.
	aside, _ := filepath.Glob(seg + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v", aside)
	}
	out, errOut, code := runCLI(t, "", "dump", aside[0], "--records", "--max-bytes", "5")
	fmt.Fprintf(&got, "$ passbook dump %s --records --max-bytes 5\n%s", strings.ReplaceAll(aside[0], data, "DATA"), strings.ReplaceAll(out, data, "DATA"))
	if code != 0 {
		fmt.Fprintf(&got, "[exit %d] %s", code, errOut)
	}
	text := stamps.ReplaceAllString(timestamps.ReplaceAllString(got.String(), "TIME"), "STAMP")
	text = regexp.MustCompile(`crc is [0-9a-f]{8}, header says [0-9a-f]{8}`).ReplaceAllString(text, "crc is CRC, header says CRC")
	golden := filepath.Join("testdata", "forensics.golden")
	if *update {
		os.WriteFile(golden, []byte(text), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Errorf("output differs from %s (run with -update to see):\n%s", golden, text)
	}
}
