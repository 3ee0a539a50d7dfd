package web

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			Properties map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T, e *env) (openAPIDoc, []byte) {
	t.Helper()
	r := e.get("/api/openapi.json")
	e.want(r, http.StatusOK, "")
	var doc openAPIDoc
	r.decode(t, &doc)
	return doc, r.body
}

// TestOpenAPI_MatchesRoutes checks that every route the server registers
// is in /api/openapi.json, and every operation there is a route.
func TestOpenAPI_MatchesRoutes(t *testing.T) {
	e := newEnv(t, nil)
	doc, _ := loadOpenAPI(t, e)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q, want 3.x", doc.OpenAPI)
	}
	var registered, described []string
	for _, r := range e.s.routes {
		registered = append(registered, r.method+" "+r.pattern)
	}
	methods := []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}
	for path, item := range doc.Paths {
		for key := range item {
			if slices.Contains(methods, key) {
				described = append(described, strings.ToUpper(key)+" "+path)
			} else if key != "parameters" && key != "summary" && key != "description" {
				t.Errorf("%s: unexpected key %q", path, key)
			}
		}
	}
	slices.Sort(registered)
	slices.Sort(described)
	for _, r := range registered {
		if !slices.Contains(described, r) {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for _, d := range described {
		if !slices.Contains(registered, d) {
			t.Errorf("openapi.json describes %s, which the server does not serve", d)
		}
	}
	if len(registered) < 20 {
		t.Errorf("only %d routes registered", len(registered))
	}
}

// TestOpenAPI_RefsResolve checks every $ref points at a component.
func TestOpenAPI_RefsResolve(t *testing.T) {
	e := newEnv(t, nil)
	_, body := loadOpenAPI(t, e)
	var doc map[string]any
	json.Unmarshal(body, &doc)
	var walk func(v any)
	n := 0
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				n++
				parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
				var cur any = doc
				for _, p := range parts {
					m, ok := cur.(map[string]any)
					if !ok || m[p] == nil {
						t.Errorf("$ref %s does not resolve", ref)
						return
					}
					cur = m[p]
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
	if n == 0 {
		t.Error("no $ref found")
	}
}

// TestOpenAPI_ErrorCodes checks the Error schema lists exactly the Code
// constants of errors.go.
func TestOpenAPI_ErrorCodes(t *testing.T) {
	e := newEnv(t, nil)
	doc, _ := loadOpenAPI(t, e)
	documented := doc.Components.Schemas["Error"].Properties["error"].Properties["code"].Enum
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && strings.HasPrefix(vs.Names[0].Name, "Code") {
			s, _ := strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
			codes = append(codes, s)
		}
		return true
	})
	slices.Sort(codes)
	slices.Sort(documented)
	if !slices.Equal(codes, documented) {
		t.Errorf("error codes in errors.go %v\nin openapi.json %v", codes, documented)
	}
}
