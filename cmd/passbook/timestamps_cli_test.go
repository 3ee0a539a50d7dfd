package main

import (
	"strings"
	"testing"
)

// passbook topic create takes Kafka's message.timestamp.before.max.ms and
// after.max.ms as durations, refuses what is not one, and topic describe
// shows them under Kafka's names.
func TestTopicCreate_TimestampFlags(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runBinary(t, dir, "", "topic", "create", "strict", "--message-timestamp-before-max", "24h", "--message-timestamp-after-max", "1m"); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runBinary(t, dir, "", "topic", "create", "open", "--message-timestamp-after-max", "-1s"); code != 0 {
		t.Fatalf("topic create: exit %d: %s", code, stderr)
	}
	for topic, want := range map[string][]string{
		"strict": {`"message.timestamp.before.max.ms": 86400000`, `"message.timestamp.after.max.ms": 60000`},
		"open":   {`"message.timestamp.before.max.ms": 0`, `"message.timestamp.after.max.ms": 9223372036854775807`},
	} {
		out, stderr, code := runBinary(t, dir, "", "topic", "describe", topic, "--json")
		if code != 0 {
			t.Fatalf("topic describe %s: exit %d: %s", topic, code, stderr)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("topic describe %s --json has no %s:\n%s", topic, w, out)
			}
		}
	}
	for _, args := range [][]string{
		{"--message-timestamp-before-max", "0s"},
		{"--message-timestamp-before-max", "-1h"},
		{"--message-timestamp-after-max", "100us"},
	} {
		_, stderr, code := runBinary(t, dir, "", append([]string{"topic", "create", "bad"}, args...)...)
		if code != 2 || !strings.Contains(stderr, args[0]) {
			t.Errorf("topic create %v: exit %d, %q; want a usage error naming the flag", args, code, stderr)
		}
	}
}
