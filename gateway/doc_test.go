package gateway

import (
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engines"
)

// The package doc lists every route the router serves, and no other: a
// line "METHOD /api/harness/…" for each.
func TestDocListsEveryRoute(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil || f.Doc == nil {
		t.Fatalf("doc.go: %v", err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(GET|POST|PUT|PATCH|DELETE)\s+(/api/harness/\S+)`).FindAllStringSubmatch(f.Doc.Text(), -1) {
		documented[m[1]+" "+m[2]] = true
	}
	h, err := harness.New(harness.Config{Roots: []string{t.TempDir()}, StateDir: t.TempDir(), Engines: engines.Builtin(engines.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := New(Config{Harness: h})
	if err != nil {
		t.Fatal(err)
	}
	routed := map[string]bool{}
	_ = gw.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err1 := route.GetPathTemplate()
		methods, err2 := route.GetMethods()
		if err1 == nil && err2 == nil {
			for _, m := range methods {
				routed[m+" "+tpl] = true
			}
		}
		return nil
	})
	if len(routed) < 9 || len(documented) < 9 {
		t.Fatalf("%d routes, %d documented: the walk or the doc's form changed", len(routed), len(documented))
	}
	for r := range routed {
		if !documented[r] {
			t.Errorf("route %s is not in the package doc", r)
		}
	}
	for d := range documented {
		if !routed[d] {
			t.Errorf("the package doc lists %s, which is not routed", d)
		}
	}
	if !strings.Contains(f.Doc.Text(), "the web console") {
		t.Error("the package doc does not say what serves the paths outside /api/")
	}
}
