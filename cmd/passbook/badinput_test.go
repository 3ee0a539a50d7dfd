package main

import (
	"strings"
	"testing"
)

// TestBadInput_CLI is the CLI's column of the bad-input table in
// docs/reliability.md: every kind of bad input, the exit code (2: a bad
// command line, 1: refused by the data) and the message on stderr, and
// the data directory unchanged.
func TestBadInput_CLI(t *testing.T) {
	data := t.TempDir()
	setup := [][]string{{"topic", "create", "orders", "--partitions", "2"}}
	for _, args := range setup {
		if _, errOut, code := runCLI(t, "", append([]string{"--data", data}, args...)...); code != 0 {
			t.Fatalf("%v: %s", args, errOut)
		}
	}
	if _, errOut, code := runCLI(t, "a\nb\n", "--data", data, "produce", "orders"); code != 0 {
		t.Fatal(errOut)
	}
	huge := strings.Repeat("x", 2<<20) + "\n"
	for _, tc := range []struct {
		name  string
		stdin string
		args  string
		code  int
		text  string
	}{
		{"oversized/line", huge, "produce orders", 2, "line 1 refused: longer than --max-line 1,048,576 bytes"},
		{"oversized/record", strings.Repeat("y", 1<<20+1) + "\n", "produce orders --max-line 4194304", 2, "line 1 refused: storage: record too large: 1,048,577 bytes of key and value, over the topic's max message bytes 1,048,576"},
		{"oversized/topic name", "", "topic create " + strings.Repeat("a", 250), 2, "250 characters, at most 249"},
		{"malformed/duration", "", "topic create t --retention 5x", 2, `invalid argument "5x" for "--retention"`},
		{"malformed/start", "", "consume orders --consumer c --from yesterday", 2, `"yesterday" is not earliest, latest, an offset or an RFC 3339 time`},
		{"wrong type/partitions", "", "topic create t --partitions ten", 2, `invalid argument "ten" for "--partitions"`},
		{"wrong type/commit", "", "consume orders --consumer c --commit sometimes", 2, `commit mode "sometimes"`},
		{"wrong type/durability", "", "produce orders --durability always", 2, `unknown durability "always"`},
		{"out of range/partitions", "", "topic create t --partitions 20000", 1, "partitions 20000 not in [1, 10000]"},
		{"out of range/offset", "", "consume orders --consumer c --from 99", 1, "offset 99 is out of range"},
		{"out of range/partition", "", "consume orders --consumer c --partition 7", 1, "topic orders has no partition 7"},
		{"out of range/negative", "", "offsets set -5 --consumer c --topic orders", 2, ""},
		{"unknown name/topic", "", "consume nope --consumer c", 1, "unknown topic: nope (create it with: passbook topic create nope)"},
		{"unknown name/command", "", "frobnicate", 2, `unknown command "frobnicate"`},
		{"unknown name/flag", "", "topic list --colour", 2, "unknown flag: --colour"},
		{"path-like/create", "", "topic create ../x", 2, `"../x" has '/'`},
		{"path-like/produce", "z\n", "produce ../x", 2, `"../x" has '/'`},
		{"path-like/dump", "", "dump ../x", 2, `"../x" has '/'`},
		{"empty/topic name", "", "topic create ''", 2, ""},
		{"empty/consumer", "", "consume orders", 2, "--consumer"},
		{"empty/arguments", "", "produce", 2, "accepts 1 arg(s), received 0"},
		{"unicode/topic name", "", "topic create commandes-été", 2, `has 'é'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--data", data}, strings.Fields(tc.args)...)
			if tc.name == "empty/topic name" {
				args = []string{"--data", data, "topic", "create", ""}
			}
			_, errOut, code := runCLI(t, tc.stdin, args...)
			if code != tc.code || !strings.Contains(errOut, tc.text) {
				t.Fatalf("exit %d, stderr %q; want exit %d with %q", code, errOut, tc.code, tc.text)
			}
			t.Logf("exit %d: %s", code, strings.TrimSpace(strings.SplitN(errOut, "\n", 2)[0]))
		})
	}
	// Unicode values are data: they go in and come out byte for byte.
	t.Run("unicode/data", func(t *testing.T) {
		if _, errOut, code := runCLI(t, "clé:valeur-日本-🔑\n", "--data", data, "produce", "orders", "--key-sep", ":"); code != 0 {
			t.Fatal(errOut)
		}
		out, errOut, code := runCLI(t, "", "--data", data, "consume", "orders", "--consumer", "lecteur-é", "--format", "json")
		if code != 0 || !strings.Contains(out, `"key":"clé","value":"valeur-日本-🔑"`) {
			t.Fatalf("exit %d: %s %s", code, out, errOut)
		}
	})
	out, _, _ := runCLI(t, "", "--data", data, "topic", "list")
	if strings.Count(out, "\n") != 2 { // a header and orders
		t.Errorf("topics after refused input:\n%s", out)
	}
}
