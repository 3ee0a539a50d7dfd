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
		{"out of range/partitions", "", "topic create t --partitions 20000", 2, "--partitions 20000: want 1 to 10,000"},
		{"out of range/partitions zero", "", "topic create t --partitions 0", 2, "--partitions 0: want 1 to 10,000"},
		{"out of range/partitions negative", "", "topic create t --partitions -1", 2, "--partitions -1: want 1 to 10,000"},
		{"out of range/retention", "", "topic create t --retention -5h", 2, "--retention -5h0m0s: want a duration of 0 (keep forever) or more"},
		{"out of range/retention bytes", "", "topic create t --retention-bytes -1", 2, "--retention-bytes -1: want 0 (no limit) or more"},
		{"out of range/segment bytes", "", "topic create t --segment-bytes 10", 2, "--segment-bytes 10: want 1,048,576 to 2,147,483,648"},
		{"out of range/segment bytes zero", "", "topic create t --segment-bytes 0", 2, "--segment-bytes 0: want 1,048,576"},
		{"out of range/segment age", "", "topic create t --segment-age 0s", 2, "--segment-age 0s: want 1ms or more"},
		{"out of range/max message bytes", "", "topic create t --max-message-bytes 0", 2, "--max-message-bytes 0: want 1 to 268,435,456"},
		{"out of range/max message bytes big", "", "topic create t --max-message-bytes 300000000", 2, "--max-message-bytes 300000000: want 1 to 268,435,456"},
		{"out of range/delete retention", "", "topic create t --cleanup-policy compact --delete-retention 0s", 2, "--delete-retention 0s: want a positive duration"},
		{"ignored/delete retention", "", "topic create t --delete-retention 1h", 2, "--delete-retention applies only to a compacted topic"},
		{"ignored/retention on compact", "", "topic create t --cleanup-policy compact --retention 1h", 2, "do nothing with --cleanup-policy compact"},
		{"wrong type/cleanup policy", "", "topic create t --cleanup-policy keep", 2, `cleanup policy "keep"`},
		{"reserved/topic name", "", "topic create __consumer_offsets", 2, `starts with "__", which Kafka reserves for internal topics`},
		{"reserved/dash topic name", "", "topic create -- -orders", 2, "starts with '-', which reads as a flag"},
		{"out of range/replay partition", "", "replay orders --consumer c --to earliest --partition 9", 2, "topic orders has no partition 9"},
		{"out of range/offsets set partition", "", "offsets set 1 --consumer c --topic orders --partition 9", 2, "topic orders has no partition 9"},
		{"out of range/negative after --", "", "offsets set --consumer c --topic orders -- -3", 2, "offset -3: a committed offset can't be negative"},
		{"out of range/offset", "", "consume orders --consumer c --from 99", 2, "offset 99 on orders/0 is past the head"},
		{"out of range/partition", "", "consume orders --consumer c --partition 7", 2, "topic orders has no partition 7"},
		{"out of range/negative", "", "offsets set -5 --consumer c --topic orders", 2, "offset -5: a committed offset can't be negative"},
		{"unknown name/topic", "", "consume nope --consumer c", 1, "unknown topic: nope (create it with: passbook topic create nope)"},
		{"unknown name/command", "", "frobnicate", 2, `unknown command "frobnicate"`},
		{"unknown name/subcommand", "", "topic craete x", 2, `unknown command "craete" for "passbook topic"; did you mean create?`},
		{"unknown name/offsets subcommand", "", "offsets frob", 2, `unknown command "frob" for "passbook offsets"`},
		{"unknown name/root suggestion", "", "lga", 2, `unknown command "lga" for "passbook"`},
		{"empty/subcommand", "", "topic", 2, "passbook topic needs a command: alter, compact, config, create, delete, describe, list, trim"},
		{"unknown name/lag consumer", "", "lag --consumer ghost", 1, "no consumer named ghost"},
		{"unknown name/lag topic", "", "lag --topic nosuch", 1, "unknown topic: nosuch"},
		{"unknown name/replay consumer", "", "replay orders --consumer typo --to earliest", 1, "no consumer named typo: no consumer has committed an offset on topic orders; to start a new consumer there, pass --create"},
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
			// The same through the built binary, as a user runs it.
			_, errOut, code = runBinary(t, t.TempDir(), tc.stdin, args...)
			if code != tc.code || !strings.Contains(errOut, tc.text) {
				t.Fatalf("binary: exit %d, stderr %q; want exit %d with %q", code, errOut, tc.code, tc.text)
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
