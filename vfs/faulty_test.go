package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/passbook-log/passbook/vfs"
)

// workload does one of every kind of operation, carrying on past errors,
// and returns the errors it met. A fault may cause later, ordinary errors
// (a failed rename makes the stat of the new name fail).
func workload(fsys vfs.FS) []error {
	var errs []error
	try := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	try(fsys.MkdirAll("/d", 0o755))
	try(fsys.SyncDir("/"))
	if f, err := fsys.OpenFile("/d/x.log", os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		try(err)
	} else {
		_, err := f.Write([]byte("hello"))
		try(err)
		try(f.Sync())
		try(f.Truncate(2))
		_, err = f.ReadAt(make([]byte, 1), 0)
		try(err)
		try(f.Close())
	}
	try(fsys.Rename("/d/x.log", "/d/y.log"))
	_, err := fsys.ReadDir("/d")
	try(err)
	_, err = fsys.Stat("/d/y.log")
	try(err)
	if l, err := fsys.Lock("/d/LOCK"); err != nil {
		try(err)
	} else {
		l.Close()
	}
	try(fsys.Remove("/d/y.log"))
	try(fsys.SyncDir("/d"))
	return errs
}

// injectedOnly returns the messages of the injected errors in errs.
func injectedOnly(errs []error) []string {
	var msgs []string
	for _, err := range errs {
		if errors.Is(err, vfs.ErrInjected) {
			msgs = append(msgs, err.Error())
		}
	}
	return msgs
}

func TestFaulty_FailsExactlyIthOp(t *testing.T) {
	for _, sticky := range []bool{false, true} {
		t.Run(fmt.Sprintf("sticky=%v", sticky), func(t *testing.T) {
			for i := 0; ; i++ {
				ffs := vfs.NewFaulty(vfs.NewMem(), vfs.FaultyOptions{FailAt: i, Sticky: sticky})
				errs := workload(ffs)
				if ffs.Ops() <= i {
					if len(errs) != 0 || i != 12 {
						t.Errorf("run %d with no fault: errors %v; want none, after 12 runs", i, errs)
					}
					return
				}
				injected := injectedOnly(errs)
				want := 1
				if sticky {
					want = ffs.Ops() - i
				}
				if len(injected) != want {
					t.Fatalf("run %d: %d injected faults %q, want %d", i, len(injected), injected, want)
				}
				for j, msg := range injected {
					if prefix := fmt.Sprintf("vfs: injected fault at op %d (", i+j); !strings.HasPrefix(msg, prefix) {
						t.Errorf("run %d: fault %q, want it to start %q", i, msg, prefix)
					}
				}
			}
		})
	}
}

func TestFaulty_Kinds(t *testing.T) {
	tests := []struct {
		name    string
		opts    vfs.FaultyOptions
		wantOps int
		wantErr string
	}{
		{
			name:    "default kinds",
			opts:    vfs.FaultyOptions{FailAt: 3},
			wantOps: 12,
			wantErr: "vfs: injected fault at op 3 (write /d/x.log)",
		},
		{
			name:    "all kinds",
			opts:    vfs.FaultyOptions{FailAt: 6, Kinds: vfs.AllOps},
			wantOps: 14,
			wantErr: "vfs: injected fault at op 6 (read /d/x.log)",
		},
		{
			name:    "syncs only",
			opts:    vfs.FaultyOptions{FailAt: 2, Kinds: vfs.OpSync | vfs.OpSyncDir},
			wantOps: 3,
			wantErr: "vfs: injected fault at op 2 (syncdir /d)",
		},
		{
			name: "filter",
			opts: vfs.FaultyOptions{FailAt: 1, Filter: func(op vfs.Op) bool {
				return strings.HasSuffix(op.Name, ".log")
			}},
			wantOps: 7,
			wantErr: "vfs: injected fault at op 1 (write /d/x.log)",
		},
		{
			name:    "rename",
			opts:    vfs.FaultyOptions{FailAt: 0, Kinds: vfs.OpRename},
			wantOps: 1,
			wantErr: "vfs: injected fault at op 0 (rename /d/x.log -> /d/y.log)",
		},
		{
			name:    "never",
			opts:    vfs.FaultyOptions{FailAt: -1},
			wantOps: 12,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ffs := vfs.NewFaulty(vfs.NewMem(), tc.opts)
			got := injectedOnly(workload(ffs))
			var want []string
			if tc.wantErr != "" {
				want = []string{tc.wantErr}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") || ffs.Ops() != tc.wantOps {
				t.Errorf("errors %q, Ops() = %d; want %q, %d", got, ffs.Ops(), want, tc.wantOps)
			}
		})
	}
}

func TestFaulty_ShortWrite(t *testing.T) {
	for _, short := range []bool{false, true} {
		ffs := vfs.NewFaulty(vfs.NewMem(), vfs.FaultyOptions{FailAt: 0, Kinds: vfs.OpWrite, ShortWrite: short})
		f, err := ffs.OpenFile("/x", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		n, err := f.Write([]byte("abcdef"))
		want := ""
		if short {
			want = "abc"
		}
		if n != len(want) || !errors.Is(err, vfs.ErrInjected) {
			t.Errorf("ShortWrite %v: Write = %d, %v; want %d, ErrInjected", short, n, err, len(want))
		}
		if got := readFile(t, ffs, "/x"); got != want {
			t.Errorf("ShortWrite %v: contents %q, want %q", short, got, want)
		}
		f.Close()
	}
}

func TestFaulty_FailedCloseCloses(t *testing.T) {
	ffs := vfs.NewFaulty(vfs.NewMem(), vfs.FaultyOptions{FailAt: 0, Kinds: vfs.OpClose})
	f, err := ffs.OpenFile("/x", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Close = %v, want ErrInjected", err)
	}
	if _, err := io.WriteString(f, "x"); err == nil {
		t.Error("Write after a failed Close succeeded")
	}
}

func TestOpKind_String(t *testing.T) {
	tests := []struct {
		k    vfs.OpKind
		want string
	}{
		{vfs.OpOpen, "open"},
		{vfs.OpSyncDir, "syncdir"},
		{vfs.OpWrite | vfs.OpSync, "write|sync"},
		{vfs.OpKind(1 << 31), "OpKind(1<<31)"},
		{0, ""},
	}
	for _, tc := range tests {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("OpKind(%#x).String() = %q, want %q", uint32(tc.k), got, tc.want)
		}
	}
}
