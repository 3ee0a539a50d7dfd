package lint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/passbook-log/passbook"

// A rule says what a package, and so everything it imports, must not
// import. Patterns name an import path, or a tree of them with "/...";
// "." is the root package.
type rule struct {
	pkg    string   // relative to the module: "storage", "." for the root
	forbid []string // patterns
	allow  []string // exceptions to forbid
	why    string
}

var (
	// network is the net tree but its value types (a URL, an address),
	// which do no I/O: noIO below.
	network = []string{"net/...", "crypto/tls/..."}
	kafka   = []string{"kafka/...", "github.com/twmb/franz-go/..."}
	metrics = []string{"github.com/prometheus/..."}
	doors   = []string{"kafka/...", "web/...", "lab/...", "cmd/..."}
	readers = []string{"offsets/...", "consumer/...", "."}
)

// noIO are the packages under net/ that parse and hold values and do no
// I/O (offsets names its SQLite files with file: URIs): allowed under
// every rule; what they import is still checked.
var noIO = []string{"net/url", "net/netip"}

func join(lists ...[]string) []string { return slices.Concat(lists...) }

// rules are DESIGN's arrows: storage ← offsets ← consumer ← (root) ←
// kafka / web ← cmd, and the security packages beside the doors.
var rules = []rule{
	{pkg: "vfs", forbid: []string{module + "/..."}, allow: []string{"internal/..."},
		why: "vfs is the bottom: the file system seam imports no other passbook package"},
	{pkg: "batch", forbid: join([]string{module + "/..."}, network, kafka, metrics), allow: []string{"internal/..."},
		why: "batch is the byte format: it knows no files, logs, networks, Kafka or metrics"},
	{pkg: "storage", forbid: join(network, kafka, metrics, readers, doors, []string{"auth/...", "acl/...", "database/sql/..."}),
		why: "the storage engine knows nothing of networks, Kafka, metrics or readers"},
	{pkg: "offsets", forbid: join(network, kafka, metrics, []string{"consumer/...", "."}, doors, []string{"auth/...", "acl/..."}),
		why: "the offset store knows no consumers, doors or networks"},
	{pkg: "consumer", forbid: join(network, kafka, metrics, []string{"."}, doors, []string{"auth/...", "acl/..."}),
		why: "consumers read logs and keep bookmarks: no doors, networks or metrics"},
	{pkg: ".", forbid: join(network, kafka, metrics, doors, []string{"auth/...", "acl/..."}),
		why: "the embedded API imports neither kafka nor web: the doors are built on it"},
	{pkg: "auth", forbid: join(doors, []string{"acl/..."}),
		why: "the security packages know nothing of the doors they guard"},
	{pkg: "acl", forbid: join(doors, []string{"auth/..."}),
		why: "the security packages know nothing of the doors they guard"},
	{pkg: "kafka", forbid: []string{"web/...", "lab/...", "cmd/..."},
		why: "kafka and web are doors side by side: neither imports the other"},
	{pkg: "web", forbid: []string{"kafka/...", "github.com/twmb/franz-go/...", "lab/...", "cmd/..."},
		why: "kafka and web are doors side by side: neither imports the other"},
	{pkg: "internal/thousands", forbid: []string{module + "/..."},
		why: "internal helpers sit below everything that uses them"},
	{pkg: "internal/layout", forbid: join(readers, []string{"storage/..."}, doors),
		why: "internal helpers sit below everything that uses them"},
	{pkg: "internal/jsonfile", forbid: join(readers, []string{"storage/..."}, doors, []string{"auth/...", "acl/..."}),
		why: "internal helpers sit below everything that uses them"},
}

// graph maps an import path to what its non-test files import.
type graph map[string][]string

// loadGraph lists every package the module's packages build from, with
// their imports (go list -deps: test files not included, as they may
// import what they test with).
func loadGraph(t *testing.T) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Imports", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	g := graph{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		g[p.ImportPath] = p.Imports
	}
	return g
}

// abs turns a rule's pattern into a full import path pattern.
func abs(pattern string) string {
	switch {
	case pattern == ".":
		return module
	case strings.HasPrefix(pattern, module), strings.Contains(strings.Split(pattern, "/")[0], "."):
		return pattern // a module path: github.com/…
	case isStd(pattern):
		return pattern
	}
	return module + "/" + pattern
}

// isStd says whether a pattern names the standard library rather than
// one of the module's packages: the trees the rules name.
func isStd(pattern string) bool {
	first := strings.Split(pattern, "/")[0]
	switch first {
	case "net", "crypto", "database", "os", "io", "encoding":
		return true
	}
	return false
}

func matches(pattern, path string) bool {
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == tree || strings.HasPrefix(path, tree+"/")
	}
	return path == pattern
}

func matchesAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if matches(abs(p), path) {
			return true
		}
	}
	return false
}

// violations returns, for each forbidden import reachable from the rule's
// package, the chain of imports that reaches it: "storage → batch → net".
func violations(g graph, r rule) ([]string, error) {
	from := abs(r.pkg)
	if _, ok := g[from]; !ok {
		return nil, fmt.Errorf("no package %s: a rule names a package that is gone (fix the rule)", from)
	}
	// Breadth first, so each chain is a shortest one.
	prev := map[string]string{from: ""}
	queue := []string{from}
	var bad []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range g[p] {
			if _, seen := prev[imp]; seen {
				continue
			}
			prev[imp] = p
			if matchesAny(r.forbid, imp) && !matchesAny(r.allow, imp) && !matchesAny(noIO, imp) {
				bad = append(bad, chain(prev, imp))
				continue // its own imports are its problem
			}
			queue = append(queue, imp)
		}
	}
	return bad, nil
}

func chain(prev map[string]string, to string) string {
	var c []string
	for p := to; p != ""; p = prev[p] {
		c = append(c, short(p))
	}
	slices.Reverse(c)
	return strings.Join(c, " → ")
}

func short(path string) string {
	if path == module {
		return "passbook (the root package)"
	}
	return strings.TrimPrefix(path, module+"/")
}

// TestImports_FollowTheArrows checks every rule on the module as it is.
func TestImports_FollowTheArrows(t *testing.T) {
	g := loadGraph(t)
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			bad, err := violations(g, r)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range bad {
				t.Errorf("bad import edge: %s\n\t(%s)", c, r.why)
			}
		})
	}
}

// TestImports_NamesTheBadEdge checks the checker on a made-up module
// where storage reaches the network and Kafka through batch.
func TestImports_NamesTheBadEdge(t *testing.T) {
	g := graph{
		module + "/storage":                 {"fmt", module + "/batch", module + "/vfs"},
		module + "/batch":                   {"net/http", "github.com/twmb/franz-go/pkg/kmsg"},
		module + "/vfs":                     {"os"},
		"net/http":                          {"net"},
		"github.com/twmb/franz-go/pkg/kmsg": nil,
		module + "/offsets":                 {"net/url", module + "/storage"},
	}
	bad, err := violations(g, rule{pkg: "storage", forbid: join(network, kafka)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"storage → batch → net/http", "storage → batch → github.com/twmb/franz-go/pkg/kmsg"}
	if !slices.Equal(bad, want) {
		t.Errorf("violations = %q, want %q", bad, want)
	}
	// net/url passes (it does no I/O); what offsets reaches through
	// storage does not.
	bad, _ = violations(g, rule{pkg: "offsets", forbid: network})
	if want := []string{"offsets → storage → batch → net/http"}; !slices.Equal(bad, want) {
		t.Errorf("violations = %q, want %q", bad, want)
	}
	if _, err := violations(g, rule{pkg: "gone"}); err == nil {
		t.Error("a rule for a package that does not exist passed")
	}
}
