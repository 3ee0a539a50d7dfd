package kafka

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/passbook-log/passbook"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated tables of docs/kafka.md")

const kafkaDoc = "../docs/kafka.md"

// TestDocs_Tables checks that the generated tables of docs/kafka.md — the
// APIs and versions (from the handler registry) and the topic configs
// (from topicConfigs) — say what the code does. With -args -update it
// rewrites them. Each table sits between the lines
//
//	<!-- generated: NAME … -->
//	<!-- end: NAME -->
//
// The APIs table's notes column is prose: it is kept, row by row (by API
// key), and a newly registered API gets an empty note to fill in.
func TestDocs_Tables(t *testing.T) {
	b, err := os.ReadFile(kafkaDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	out := doc
	for _, tbl := range []struct {
		name string
		gen  func(old string) string
	}{
		{"apis", apisTable},
		{"topic-configs", topicConfigsTable},
		{"broker-configs", brokerConfigsTable},
	} {
		begin := fmt.Sprintf("<!-- generated: %s (go test ./kafka -run TestDocs_Tables -args -update) -->\n", tbl.name)
		end := fmt.Sprintf("<!-- end: %s -->\n", tbl.name)
		i := strings.Index(out, begin)
		j := strings.Index(out, end)
		if i < 0 || j < i {
			t.Fatalf("%s: no section %q … %q", kafkaDoc, strings.TrimSpace(begin), strings.TrimSpace(end))
		}
		old := out[i+len(begin) : j]
		out = out[:i+len(begin)] + tbl.gen(old) + out[j:]
	}
	if out == doc {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(kafkaDoc, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the generated tables of %s", kafkaDoc)
		return
	}
	t.Fatalf("%s's generated tables differ from the code; run go test ./kafka -run TestDocs_Tables -args -update and commit the result:\n%s", kafkaDoc, lineDiff(doc, out))
}

var apiRow = regexp.MustCompile(`^\| [A-Za-z]+ \((\d+)\) \| [^|]* \|(.*)\|$`)

// apisTable is the table of served APIs: name (key), versions, notes.
func apisTable(old string) string {
	notes := map[int]string{}
	for line := range strings.SplitSeq(old, "\n") {
		if m := apiRow.FindStringSubmatch(line); m != nil {
			k, _ := strconv.Atoi(m[1])
			notes[k] = strings.TrimSpace(m[2])
		}
	}
	var sb strings.Builder
	sb.WriteString("| API (key) | versions | notes |\n|---|---|---|\n")
	for _, h := range handlers {
		if h == nil {
			continue
		}
		v := strconv.Itoa(int(h.min))
		if h.max != h.min {
			v += "–" + strconv.Itoa(int(h.max))
		}
		note := notes[int(h.key)]
		if note != "" {
			note = " " + note + " "
		} else {
			note = " "
		}
		fmt.Fprintf(&sb, "| %s (%d) | %s |%s|\n", kmsg.NameForKey(int16(h.key)), h.key, v, note)
	}
	return sb.String()
}

// topicConfigsTable is the table of Kafka topic configs: type, default
// here, valid values, and what each does (or why it does nothing).
func topicConfigsTable(string) string {
	var sb strings.Builder
	sb.WriteString("| config | type | default | valid values | effect |\n|---|---|---|---|---|\n")
	for i := range topicConfigs {
		k := &topicConfigs[i]
		def, _ := k.value(passbook.TopicConfig{})
		if def == "" {
			def = `""`
		}
		effect := k.effect
		if k.honoured() {
			effect = "**honoured**: " + effect
		}
		fmt.Fprintf(&sb, "| `%s` | %s | %s | %s | %s |\n", k.name, strings.ToLower(configTypeName(k.typ)), def, k.rule, effect)
	}
	return sb.String()
}

// brokerConfigsTable is the table of the broker configs DescribeConfigs
// reports.
func brokerConfigsTable(string) string {
	var sb strings.Builder
	sb.WriteString("| config | type | what it is here |\n|---|---|---|\n")
	for i := range brokerConfigs {
		k := &brokerConfigs[i]
		doc := k.doc
		if k.topic != "" {
			doc += " (`" + k.topic + "` above)"
		}
		fmt.Fprintf(&sb, "| `%s` | %s | %s |\n", k.name, strings.ToLower(configTypeName(k.typ)), doc)
	}
	return sb.String()
}

func configTypeName(t kmsg.ConfigType) string {
	switch t {
	case kmsg.ConfigTypeBoolean:
		return "BOOLEAN"
	case kmsg.ConfigTypeString:
		return "STRING"
	case kmsg.ConfigTypeInt:
		return "INT"
	case kmsg.ConfigTypeShort:
		return "SHORT"
	case kmsg.ConfigTypeLong:
		return "LONG"
	case kmsg.ConfigTypeDouble:
		return "DOUBLE"
	case kmsg.ConfigTypeList:
		return "LIST"
	}
	return t.String()
}

// lineDiff shows the lines of a that b lacks (-) and of b that a lacks
// (+), in order: enough to see what a regeneration changes.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	inA, inB := map[string]int{}, map[string]int{}
	for _, l := range al {
		inA[l]++
	}
	for _, l := range bl {
		inB[l]++
	}
	var sb strings.Builder
	for _, l := range al {
		if inB[l] == 0 {
			sb.WriteString("- " + l + "\n")
		}
	}
	for _, l := range bl {
		if inA[l] == 0 {
			sb.WriteString("+ " + l + "\n")
		}
	}
	return sb.String()
}
