// Package lazyre holds a package-level regular expression that is
// compiled the first time it is used, not when the binary starts: every
// `var x = regexp.MustCompile(…)` runs the compiler (and allocates its
// program) in the process's initialisation, for every command, whether
// or not that command ever matches anything with it (issue 35).
//
// In a test binary the expression is compiled at New, so a pattern that
// does not compile still fails its package's tests at once.
package lazyre

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regexp.Regexp compiled on first use. It has the methods of
// regexp.Regexp the repository uses; Re gives the compiled one.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// inTest reports whether this is a `go test` binary.
var inTest = strings.HasSuffix(os.Args[0], ".test")

// New returns expr, to be compiled (with regexp.MustCompile, so a bad
// expression panics) on first use.
func New(expr string) *Regexp {
	r := newLazy(expr)
	if inTest {
		r.Re()
	}
	return r
}

func newLazy(expr string) *Regexp { return &Regexp{expr: expr} }

// Re returns the compiled expression, compiling it the first time.
func (r *Regexp) Re() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}

// String returns the source text.
func (r *Regexp) String() string { return r.expr }

// MatchString, FindString, FindStringIndex, FindStringSubmatch,
// FindStringSubmatchIndex, ReplaceAllString and ReplaceAllStringFunc are
// regexp.Regexp's, on the compiled expression.
func (r *Regexp) MatchString(s string) bool            { return r.Re().MatchString(s) }
func (r *Regexp) FindString(s string) string           { return r.Re().FindString(s) }
func (r *Regexp) FindStringIndex(s string) []int       { return r.Re().FindStringIndex(s) }
func (r *Regexp) FindStringSubmatch(s string) []string { return r.Re().FindStringSubmatch(s) }
func (r *Regexp) FindStringSubmatchIndex(s string) []int {
	return r.Re().FindStringSubmatchIndex(s)
}
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.Re().ReplaceAllString(src, repl)
}
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Re().ReplaceAllStringFunc(src, repl)
}
