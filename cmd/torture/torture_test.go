package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if childMain() {
		return
	}
	os.Exit(m.Run())
}

// TestTorture is the short torture run of CI: every fault kind, under
// every workload, for about 90 s (PASSBOOK_TORTURE_DURATION changes it;
// PASSBOOK_SEED reruns a seed). The long run is go run ./cmd/torture
// (see docs/reliability.md).
func TestTorture(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fault-injection trials for 90 s")
	}
	d := 90 * time.Second
	if s := os.Getenv("PASSBOOK_TORTURE_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-duration", d.String()}
	if s := os.Getenv("PASSBOOK_SEED"); s != "" {
		if _, err := strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-seed", s)
	}
	var out, errs bytes.Buffer
	r, err := torture(context.Background(), args, &out, &errs)
	t.Logf("\n%s%s", out.String(), errs.String())
	if err != nil {
		t.Fatal(err)
	}
	if v := r.total.violations(); v > 0 {
		t.Fatalf("%d broken promises", v)
	}
	for _, k := range kinds {
		if r.byFault[k.fault] == nil || r.byFault[k.fault].faults == 0 {
			t.Errorf("no %s fault was injected", k.fault)
		}
	}
}
