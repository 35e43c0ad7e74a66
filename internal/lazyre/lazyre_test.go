package lazyre

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestCompiledOnFirstUse(t *testing.T) {
	r := newLazy(`a(b+)`)
	if r.re != nil {
		t.Fatal("compiled before its first use")
	}
	if !r.MatchString("xabbx") {
		t.Fatal("no match")
	}
	if r.re == nil {
		t.Fatal("not kept after its first use")
	}
	first := r.re
	r.MatchString("ab")
	if r.re != first {
		t.Fatal("compiled twice")
	}
}

func TestBadExpressionPanicsOnFirstUse(t *testing.T) {
	r := newLazy(`(`)
	defer func() {
		if recover() == nil {
			t.Fatal("a bad expression did not panic on use")
		}
	}()
	r.MatchString("x")
}

func TestNewCompilesInTests(t *testing.T) {
	if !inTest {
		t.Fatal("a test binary is not seen as one")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("New of a bad expression did not panic in a test binary")
		}
	}()
	New(`(`)
}

func TestSameAsRegexp(t *testing.T) {
	const expr = `(\w+)@(\w+)`
	r, re := newLazy(expr), regexp.MustCompile(expr)
	s := "mail ann@home and bob@work"
	if r.String() != expr || r.Re().String() != re.String() {
		t.Fatal("String")
	}
	if r.MatchString(s) != re.MatchString(s) || r.FindString(s) != re.FindString(s) ||
		!slices.Equal(r.FindStringIndex(s), re.FindStringIndex(s)) ||
		!slices.Equal(r.FindStringSubmatch(s), re.FindStringSubmatch(s)) ||
		!slices.Equal(r.FindStringSubmatchIndex(s), re.FindStringSubmatchIndex(s)) ||
		r.ReplaceAllString(s, "$2") != re.ReplaceAllString(s, "$2") ||
		r.ReplaceAllStringFunc(s, strings.ToUpper) != re.ReplaceAllStringFunc(s, strings.ToUpper) {
		t.Fatal("a method differs from regexp.Regexp's")
	}
}
