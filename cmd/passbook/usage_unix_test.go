//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadOnlyDataDirectory: on a data directory this user cannot write,
// commands that open it say exactly why they cannot and what to do (exit
// 1), and dump, which reads segment files without opening the directory,
// works. As root, where permissions do not stop writes, the commands run
// as the user nobody (uid 65534); otherwise the directory is made
// read-only with chmod.
func TestReadOnlyDataDirectory(t *testing.T) {
	bin := passbookBinary(t)
	base, err := os.MkdirTemp("", "passbook-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error { os.Chmod(p, 0o755); return nil })
		os.RemoveAll(base)
	})
	os.Chmod(base, 0o755)
	data := filepath.Join(base, "data")
	if _, errOut, code := runBinary(t, base, "a\nb\n", "--data", data, "topic", "create", "orders"); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runBinary(t, base, "a\nb\n", "--data", data, "produce", "orders"); code != 0 {
		t.Fatal(errOut)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		os.Chmod(filepath.Dir(bin), 0o755) // nobody must reach the binary
	} else {
		filepath.Walk(data, func(p string, fi os.FileInfo, _ error) error { os.Chmod(p, fi.Mode().Perm()&^0o222); return nil })
	}
	before := tree(t, data)
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, append([]string{"--data", data}, args...)...)
		cmd.Dir = base
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}
	for _, tc := range []struct {
		args string
		code int
		text string
	}{
		{"topic list", 1, "is not writable by this user: every command that opens it takes its lock"},
		{"lag", 1, "run as the directory's owner, or copy it (cp -a) and use the copy"},
		{"offsets list", 1, "is not writable by this user"},
		{"verify", 1, "the data directory is not writable by this user: verify takes its lock"},
		{"dump orders --records", 0, `offset=1 `},
	} {
		out, errOut, code := run(strings.Fields(tc.args)...)
		if code != tc.code || !strings.Contains(out+errOut, tc.text) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d with %q", tc.args, code, out, errOut, tc.code, tc.text)
		}
	}
	if after := tree(t, data); after != before {
		t.Errorf("the read-only data directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// tree lists every file under dir with its size.
func tree(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String())
		if !fi.IsDir() {
			fmt.Fprintf(&b, " %d", fi.Size())
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}
