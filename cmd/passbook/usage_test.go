package main

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestReadOnlyCommands_NoDataDirectory: a mistyped --data is an error
// (exit 1) that says so, and nothing is created, through the built
// binary.
func TestReadOnlyCommands_NoDataDirectory(t *testing.T) {
	for _, args := range []string{
		"topic list", "topic list --json", "topic describe orders", "lag", "lag --json", "offsets list",
		"dump orders", "verify", "verify --json", "repair --dry-run",
		"replay orders --consumer c --to earliest", "offsets set 1 --consumer c --topic orders",
		"offsets delete --consumer c", "topic delete orders", "topic compact orders",
		"consume orders --consumer c", "produce orders",
	} {
		t.Run(args, func(t *testing.T) {
			wd := t.TempDir()
			_, errOut, code := runBinary(t, wd, "x\n", append([]string{"--data", "./typo"}, strings.Fields(args)...)...)
			want := "no data directory at ./typo (create one with: passbook topic create NAME, or pass --data)"
			if code != 1 || !strings.Contains(errOut, want) {
				t.Fatalf("exit %d, stderr %q; want exit 1 with %q", code, errOut, want)
			}
			if _, err := os.Stat(filepath.Join(wd, "typo")); !os.IsNotExist(err) {
				t.Fatalf("./typo exists after %q (stat: %v)", args, err)
			}
		})
	}
}

// TestReadOnlyCommands_ExistingDirectory: the same commands work on a
// data directory that exists, and print JSON with snake_case keys.
func TestReadOnlyCommands_ExistingDirectory(t *testing.T) {
	wd := t.TempDir()
	steps := []struct {
		stdin, args string
		want        string // in stdout
	}{
		{"", "topic create orders --partitions 2 --max-message-bytes 65536", "created topic orders with 2 partitions"},
		{"a\nb\nc\n", "produce orders", ""},
		{"", "consume orders --consumer billing --max 1", ""},
		{"", "topic list --json", `"start_offset": 0`},
		{"", "topic describe orders --json", `"max.message.bytes": 65536`},
		{"", "offsets list --json", `"updated_at": "`},
		{"", "lag --consumer billing --json", `"consumer": "billing"`},
		{"", "verify --json", `"committed_offsets": 1`},
		{"", "repair --dry-run --json", `"dry_run": true`},
		{"", "dump orders --json --records", `"type":"record"`},
		{"", "replay orders --consumer fresh --to earliest --create", "fresh on orders/0: nothing committed -> 0"},
	}
	for _, s := range steps {
		out, errOut, code := runBinary(t, wd, s.stdin, strings.Fields(s.args)...)
		if code != 0 || !strings.Contains(out, s.want) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit 0 with %q", s.args, code, out, errOut, s.want)
		}
		if strings.Contains(s.args, "--json") && !strings.HasPrefix(s.args, "topic") {
			// One key style: no PascalCase keys (topic configs keep
			// Kafka's dotted names, as in topic.json and the HTTP API).
			if m := regexp.MustCompile(`"[A-Z][A-Za-z]*":`).FindString(out); m != "" {
				t.Errorf("%s: key %s is not snake_case:\n%s", s.args, m, out)
			}
		}
	}
}

// TestVersion: --version and version print the module version and the
// VCS revision the binary was built from.
func TestVersion(t *testing.T) {
	re := regexp.MustCompile(`^passbook (\(devel\)|v\S+) \((revision [0-9a-f]{12}(\+dirty)?|no VCS revision recorded)(, committed \S+)?, go\S+\)\n$`)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, errOut, code := runBinary(t, t.TempDir(), "", args...)
		if code != 0 || !re.MatchString(out) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want a line matching %s", args, code, out, errOut, re)
		}
		t.Logf("%v: %s", args, strings.TrimSpace(out))
	}
}

func TestFormatVersion(t *testing.T) {
	for _, tc := range []struct {
		main     string
		settings map[string]string
		want     string
	}{
		{"v1.2.0", nil, "v1.2.0 (no VCS revision recorded, go1.26)"},
		{"", map[string]string{"vcs.revision": "0123456789abcdef0123", "vcs.time": "2026-01-02T03:04:05Z", "vcs.modified": "false"},
			"(devel) (revision 0123456789ab, committed 2026-01-02T03:04:05Z, go1.26)"},
		{"(devel)", map[string]string{"vcs.revision": "0123456789abcdef0123", "vcs.modified": "true"},
			"(devel) (revision 0123456789ab+dirty, go1.26)"},
	} {
		bi := &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Version: tc.main}}
		for k, v := range tc.settings {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: v})
		}
		if got := formatVersion(bi); got != tc.want {
			t.Errorf("formatVersion(%q, %v) = %q, want %q", tc.main, tc.settings, got, tc.want)
		}
	}
}
