package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// pythonLab is the course's Python lab script, given with --python-lab
// (it is not ours to commit). The harness runs it once per trial with
// python3 in a fresh directory, times the whole run and divides the
// records it says it processed ("total records processed: N") by that
// time: its consumer commits after every record, so this is its rate of
// handled-and-committed records, appends and replay included.
func pythonLab(file string) *system {
	s := &system{
		key:  "python-lab",
		name: "the course's Python lab",
		durability: func(workload) string {
			return "the script's own consumer and offset store; the rate is its processed records over the whole run's wall time"
		},
		skip:    onlyFor(wCommit, "the lab script runs only its own fixed workload"),
		variant: true,
	}
	if file == "" {
		s.unavailable = "no --python-lab FILE given (the course's script is not ours to commit)"
	} else if abs, err := filepath.Abs(file); err != nil {
		s.unavailable = err.Error()
	} else if _, err := exec.LookPath("python3"); err != nil {
		s.unavailable = "python3 is not installed"
	} else {
		s.start = func(ctx context.Context, dir string) (target, error) { return &pyLabTarget{file: abs, dir: dir}, nil }
		s.version = filepath.Base(file)
	}
	return s
}

type pyLabTarget struct{ file, dir string }

func (t *pyLabTarget) close() error { return nil }

var processedRE = regexp.MustCompile(`(?i)records processed:\s*([\d,]+)`)

func (t *pyLabTarget) run(ctx context.Context, w workload, p params) (measure, error) {
	if w != wCommit {
		return measure{}, na("the lab script runs only its own fixed workload")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", t.file)
	cmd.Dir = t.dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	el := time.Since(start)
	if err != nil {
		return measure{}, fmt.Errorf("python3 %s: %v: %s", t.file, err, tail(string(out), 300))
	}
	m := processedRE.FindStringSubmatch(string(out))
	if m == nil {
		return measure{}, fmt.Errorf("python3 %s printed no \"total records processed: N\" line: %s", t.file, tail(string(out), 300))
	}
	n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if err != nil {
		return measure{}, err
	}
	return measure{records: n, elapsed: el}, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return strings.ReplaceAll(s, "\n", " | ")
}
