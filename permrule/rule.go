package permrule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is wrapped by Parse's errors.
var ErrSyntax = errors.New("permrule: bad rule")

// Rule is one parsed permission rule: Tool, or Tool(Content).
type Rule struct {
	// Tool is the tool's name as written.
	Tool string
	// Content is what is between the parentheses, as written ("" when
	// the rule has none: it allows every use of Tool).
	Content string

	pat pattern
}

// pattern is a rule's content, compiled: literal segments between
// wildcards, with prefix set for a trailing ":*" (then segs holds the
// one literal prefix).
type pattern struct {
	segs   []string
	prefix bool
}

// literal reports whether the pattern has no wildcard: it is segs[0].
func (p pattern) literal() bool { return !p.prefix && len(p.segs) == 1 }

// Parse reads one rule. The tool name is letters, digits, _ - . and :
// (mcp__server__tool included); content, if any, is non-empty and closed
// by the rule's last character. Errors wrap ErrSyntax.
func Parse(s string) (Rule, error) {
	name, content, has := strings.Cut(s, "(")
	if name == "" {
		return Rule{}, fmt.Errorf("%w %q: no tool name", ErrSyntax, s)
	}
	for _, c := range name {
		if !(c == '_' || c == '-' || c == '.' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return Rule{}, fmt.Errorf("%w %q: tool name holds %q", ErrSyntax, s, c)
		}
	}
	if !has {
		return Rule{Tool: name}, nil
	}
	content, ok := strings.CutSuffix(content, ")")
	if !ok {
		return Rule{}, fmt.Errorf("%w %q: no closing parenthesis", ErrSyntax, s)
	}
	if content == "" {
		return Rule{}, fmt.Errorf("%w %q: empty content (write %s for every use)", ErrSyntax, s, name)
	}
	return Rule{Tool: name, Content: content, pat: compile(content)}, nil
}

// String is the rule as Parse reads it.
func (r Rule) String() string {
	if r.Content == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Content + ")"
}

// compile splits content at its unescaped "*" ("\*" is a literal star;
// any other backslash is itself).
func compile(content string) pattern {
	var p pattern
	var cur strings.Builder
	for i := 0; i < len(content); i++ {
		c := content[i]
		switch {
		case c == '\\' && i+1 < len(content) && content[i+1] == '*':
			cur.WriteByte('*')
			i++
		case c == ':' && i+2 == len(content) && content[i+1] == '*':
			p.segs, p.prefix = []string{cur.String()}, true
			return p
		case c == '*':
			p.segs = append(p.segs, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	p.segs = append(p.segs, cur.String())
	return p
}

// match applies the pattern to s. For a shell (words) a prefix must end
// at a word boundary, and "x *" also matches the bare "x".
func (p pattern) match(s string, words bool) bool {
	if p.prefix {
		rest, ok := strings.CutPrefix(s, p.segs[0])
		return ok && (!words || rest == "" || rest[0] == ' ' || rest[0] == '\t' || strings.HasSuffix(p.segs[0], " "))
	}
	if p.literal() {
		return s == p.segs[0]
	}
	if n := len(p.segs); n == 2 && p.segs[1] == "" && s+" " == p.segs[0] {
		return true // "x *" allows the bare "x"
	}
	if !strings.HasPrefix(s, p.segs[0]) {
		return false
	}
	s = s[len(p.segs[0]):]
	last := len(p.segs) - 1
	for _, seg := range p.segs[1:last] {
		k := strings.Index(s, seg)
		if k < 0 {
			return false
		}
		s = s[k+len(seg):]
	}
	return strings.HasSuffix(s, p.segs[last])
}

// IsShell reports whether tool is an agent's shell: Claude Code's Bash,
// OpenCode's bash, the ACP kind execute, Codex's shell (any case).
func IsShell(tool string) bool {
	return strings.EqualFold(tool, "bash") || strings.EqualFold(tool, "execute") || strings.EqualFold(tool, "shell")
}

// sameTool reports whether a rule's tool name covers tool: the same name
// in any case (the ACP kinds are lower case: a persona's Read rule
// answers an ACP agent's read), or both the shell. An MCP tool's name
// (mcp__server__tool, the one name every engine uses) is a plain name
// compared exactly, as the server spells it; a rule naming only the
// server (mcp__server, Claude Code's form) covers each of its tools.
func sameTool(ruleTool, tool string) bool {
	if strings.HasPrefix(tool, mcpPrefix) || strings.HasPrefix(ruleTool, mcpPrefix) {
		server, _, found := strings.Cut(strings.TrimPrefix(tool, mcpPrefix), "__")
		return ruleTool == tool || found && server != "" && ruleTool == mcpPrefix+server
	}
	return strings.EqualFold(ruleTool, tool) || IsShell(ruleTool) && IsShell(tool)
}

// mcpPrefix starts every MCP tool's name (mcpconfig.ToolPrefix).
const mcpPrefix = "mcp__"

// subjectKeys are the input fields that hold a use's subject, in order.
var subjectKeys = []string{"command", "cmd", "file_path", "filePath", "path", "notebook_path", "url"}

// Subject is what a rule's content is matched with: the first string
// field of input among command, cmd, file_path, filePath, path,
// notebook_path and url, else input's compact JSON.
func Subject(input json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) == nil {
		for _, k := range subjectKeys {
			var s string
			if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil {
				return s
			}
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, input); err != nil {
		return string(input)
	}
	return buf.String()
}

// Exact is the narrowest rule that allows the use: Tool(subject), with
// every "*" of the subject escaped, so it allows that subject only (and,
// for a shell, the same simple commands again). An empty subject gives
// Tool(""), which Parse refuses: such a use is never remembered.
func Exact(tool string, input json.RawMessage) string {
	return tool + "(" + strings.ReplaceAll(Subject(input), "*", `\*`) + ")"
}

// Allowed reports whether rules allow a use of tool with input. Rules
// that do not parse allow nothing. For a shell tool see the package doc:
// every simple command of the command line must be allowed by some rule.
func Allowed(rules []string, tool string, input json.RawMessage) bool {
	var mine []Rule
	for _, s := range rules {
		r, err := Parse(s)
		if err != nil || !sameTool(r.Tool, tool) {
			continue
		}
		if r.Content == "" {
			return true
		}
		mine = append(mine, r)
	}
	if len(mine) == 0 {
		return false
	}
	subject := Subject(input)
	if !IsShell(tool) {
		for _, r := range mine {
			if r.pat.match(subject, false) {
				return true
			}
		}
		return false
	}
	for _, r := range mine {
		if r.pat.literal() && subject == r.pat.segs[0] {
			return true // the very command a person allowed
		}
	}
	cmds, ok := SimpleCommands(subject)
	if !ok || len(cmds) == 0 {
		return false
	}
	for _, c := range cmds {
		if !anyMatch(mine, c) {
			return false
		}
	}
	return true
}

func anyMatch(rules []Rule, cmd string) bool {
	for _, r := range rules {
		if r.pat.match(cmd, true) {
			return true
		}
	}
	return false
}
