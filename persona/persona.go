package persona

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/lazyre"
	"github.com/chirality/harness/mcpconfig"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNotFound: no persona file of that ID in the project and no
	// built-in one. The concrete error is a *NotFoundError.
	ErrNotFound = engine.NewError(engine.ErrNotFound, "persona not found")
	// ErrInvalidID: the ID does not match ^[A-Za-z0-9_-]+$ (a path, an
	// empty string...). It is rejected before the disk is touched.
	ErrInvalidID = engine.NewError(engine.ErrInvalid, "invalid persona id")
	// ErrInvalidPersona: the file's frontmatter is malformed or has a bad
	// value. The concrete error is a *ParseError naming the file and line.
	ErrInvalidPersona = engine.NewError(engine.ErrCannot, "invalid persona file")
	// ErrInvalidMode: the mode is not workbench, pipeline or direct.
	ErrInvalidMode = engine.NewError(engine.ErrInvalid, "invalid mode")
)

// NotFoundError reports a persona ID with neither a project file nor a
// built-in persona. It matches ErrNotFound.
type NotFoundError struct {
	ID string
}

func (e *NotFoundError) Error() string { return "persona " + e.ID + " not found" }

// Is reports whether target is ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return errors.Is(ErrNotFound, target) }

// ParseError reports a malformed persona file. Line is 1-based and counts
// lines of the whole file (frontmatter delimiter included); it is 0 when no
// line applies. It matches ErrInvalidPersona.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Is reports whether target is ErrInvalidPersona.
func (e *ParseError) Is(target error) bool { return errors.Is(ErrInvalidPersona, target) }

// Persona is one parsed persona file. Slices that are nil mean "not set":
// the driver passes no flag for them. Tools is never nil for a file without
// frontmatter: it is []string{"default"} (all built-in tools); an empty,
// non-nil Tools (tools: "" or tools: []) means no tools at all.
//
// A Persona returned by this package is the caller's own copy.
type Persona struct {
	// ID is the part of the file name between AGENT_ and .md.
	ID string `json:"id"`
	// SourceFile is the file's path, or "embedded:agents/AGENT_<ID>.md"
	// for a built-in persona.
	SourceFile string `json:"sourceFile"`
	// Tools is the --tools flag: the tools that exist for the model.
	Tools []string `json:"tools"`
	// DisallowedTools is the --disallowedTools flag.
	DisallowedTools []string `json:"disallowedTools"`
	// AutoApproveTools is the --allowedTools flag: tools that run without
	// asking. It does not restrict anything.
	AutoApproveTools []string `json:"autoApproveTools"`
	// MaxTurns is --max-turns; 0 means unset.
	MaxTurns int `json:"maxTurns"`
	// Model is --model; "" means unset.
	Model string `json:"model"`
	// PermissionMode is --permission-mode; "" means unset. When set it is
	// one of PermissionModes.
	PermissionMode string `json:"permissionMode"`
	// MaxCostUSD is max_cost_usd: what each session of this persona may
	// spend, in US dollars; 0 means no limit. It applies together with
	// the session's and the project's budgets (the tightest wins).
	MaxCostUSD float64 `json:"maxCostUsd,omitempty"`
	// MaxTokens is max_tokens: the tokens of every kind each session of
	// this persona may use; 0 means no limit.
	MaxTokens int64 `json:"maxTokens,omitempty"`
	// Engine names the engine a new session of this persona runs on
	// ("claude-code", "anthropic", …); "" means the server's default.
	Engine string `json:"engine,omitempty"`
	// Description is a one-line summary for listings.
	Description string `json:"description"`
	// MCP is the frontmatter's mcp_servers: nil when unset (the session
	// gets every server of the project's .mcp.json and --mcp-config).
	// Never in JSON: inline entries hold credentials.
	MCP *MCPServers `json:"-"`
	// Body is the Markdown after the frontmatter: the persona
	// instructions. Line endings are normalised to \n.
	Body string `json:"-"`
}

// clone returns a deep copy, so cached personas are never shared.
func (p *Persona) clone() *Persona {
	c := *p
	c.Tools = cloneList(p.Tools)
	c.DisallowedTools = cloneList(p.DisallowedTools)
	c.AutoApproveTools = cloneList(p.AutoApproveTools)
	if p.MCP != nil {
		m := MCPServers{Names: cloneList(p.MCP.Names)}
		for _, s := range p.MCP.Inline {
			m.Inline = append(m.Inline, mcpconfig.Merge(&mcpconfig.Config{Servers: []mcpconfig.Server{s}}).Servers[0])
		}
		c.MCP = &m
	}
	return &c
}

func cloneList(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string{}, s...)
}

// PermissionModes lists the accepted values of permission_mode: the
// driver's, which are the CLI's.
var PermissionModes = engine.PermissionModes

var idPattern = lazyre.New(`^[A-Za-z0-9_-]+$`)

// ValidID reports whether id is an acceptable persona ID:
// ^[A-Za-z0-9_-]+$.
func ValidID(id string) bool { return idPattern.MatchString(id) }

func checkID(id string) error {
	if !ValidID(id) {
		return fmt.Errorf("%w %q: want letters, digits, '_' or '-'", ErrInvalidID, id)
	}
	return nil
}

// Parse reads and parses the persona file at path. The ID is taken from the
// file name, which must be AGENT_<ID>.md.
func Parse(path string) (*Persona, error) {
	id, ok := idFromFileName(path)
	if !ok {
		return nil, &ParseError{File: path, Msg: "file name is not AGENT_<ID>.md with ID matching ^[A-Za-z0-9_-]+$"}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseContent(id, path, data)
}

// idFromFileName extracts ID from a path ending in AGENT_<ID>.md.
func idFromFileName(path string) (string, bool) {
	base := path[strings.LastIndexAny(path, `/\`)+1:]
	id, ok := strings.CutPrefix(base, "AGENT_")
	if !ok {
		return "", false
	}
	id, ok = strings.CutSuffix(id, ".md")
	return id, ok && ValidID(id)
}

// ParseContent parses the content of a persona file. file names the source
// in errors and becomes SourceFile. A UTF-8 BOM and CRLF line endings are
// accepted. The frontmatter, if any, starts on the first line with "---"
// and ends with a line "---"; its keys are checked strictly: an unknown or
// repeated key, or a value of the wrong type, is a *ParseError with the
// file's line number.
func ParseContent(id, file string, data []byte) (*Persona, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")

	p := &Persona{ID: id, SourceFile: file}
	front, body, has, err := splitFrontmatter(file, text)
	if err != nil {
		return nil, err
	}
	p.Body = body
	if !has {
		p.Tools = []string{"default"}
		return p, nil
	}
	if err := decodeFrontmatter(file, front, p); err != nil {
		return nil, err
	}
	return p, nil
}

// splitFrontmatter separates "---\n<yaml>\n---\n<body>". Without an opening
// delimiter the whole text is the body.
func splitFrontmatter(file, text string) (front, body string, has bool, err error) {
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return "", text, false, nil
	}
	// Find the closing delimiter line.
	off := 0
	for {
		line, after, found := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t") == "---" {
			return rest[:off], after, true, nil
		}
		if !found {
			return "", "", false, &ParseError{File: file, Line: 1, Msg: "frontmatter opened with --- is never closed"}
		}
		off += len(line) + 1
	}
}

// frontmatterLineOffset converts a line of the YAML document to a line of
// the file: the opening "---" is line 1.
const frontmatterLineOffset = 1

var yamlLineRE = lazyre.New(`^yaml: line (\d+): (.*)$`)

func decodeFrontmatter(file, front string, p *Persona) error {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		msg := err.Error()
		line := 0
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			line += frontmatterLineOffset
			msg = m[2]
		}
		return &ParseError{File: file, Line: line, Msg: "frontmatter: " + strings.TrimPrefix(msg, "yaml: ")}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // empty frontmatter: nothing set
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return &ParseError{File: file, Line: root.Line + frontmatterLineOffset, Msg: "frontmatter must be a mapping of keys to values"}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		perr := func(format string, args ...any) error {
			return &ParseError{File: file, Line: v.Line + frontmatterLineOffset, Msg: fmt.Sprintf(format, args...)}
		}
		key := k.Value
		if seen[key] {
			return &ParseError{File: file, Line: k.Line + frontmatterLineOffset, Msg: fmt.Sprintf("duplicate key %q", key)}
		}
		seen[key] = true
		var err error
		switch key {
		case "tools":
			p.Tools, err = decodeToolList(v)
		case "disallowed_tools":
			p.DisallowedTools, err = decodeToolList(v)
		case "auto_approve_tools":
			p.AutoApproveTools, err = decodeToolList(v)
		case "max_turns":
			err = decodeScalar(v, "!!int", &p.MaxTurns)
			if err == nil && p.MaxTurns < 1 {
				err = fmt.Errorf("must be a positive integer, got %d", p.MaxTurns)
			}
		case "max_cost_usd":
			p.MaxCostUSD, err = decodeCost(v)
		case "max_tokens":
			err = decodeScalar(v, "!!int", &p.MaxTokens)
			if err == nil && p.MaxTokens < 1 {
				err = fmt.Errorf("must be a positive integer, got %d", p.MaxTokens)
			}
		case "model":
			err = decodeScalar(v, "!!str", &p.Model)
		case "permission_mode":
			err = decodeScalar(v, "!!str", &p.PermissionMode)
			if err == nil && !slices.Contains(PermissionModes, p.PermissionMode) {
				err = fmt.Errorf("%q is not one of %s", p.PermissionMode, strings.Join(PermissionModes, ", "))
			}
		case "description":
			err = decodeScalar(v, "!!str", &p.Description)
		case "mcp_servers":
			p.MCP, err = decodeMCPServers(file, v)
		case "engine":
			err = decodeScalar(v, "!!str", &p.Engine)
			if err == nil && !ValidID(p.Engine) {
				err = fmt.Errorf("%q is not an engine name (claude-code, anthropic, codex, opencode, …)", p.Engine)
			}
		default:
			return &ParseError{File: file, Line: k.Line + frontmatterLineOffset,
				Msg: fmt.Sprintf("unknown key %q (known: tools, disallowed_tools, auto_approve_tools, max_turns, max_cost_usd, max_tokens, model, permission_mode, description, engine, mcp_servers)", key)}
		}
		if err != nil {
			var le *lineError
			if errors.As(err, &le) {
				return &ParseError{File: file, Line: le.line + frontmatterLineOffset, Msg: fmt.Sprintf("%s: %v", key, le.err)}
			}
			return perr("%s: %v", key, err)
		}
	}
	return nil
}

// lineError carries the YAML line of a nested node (a list item).
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }

// decodeCost decodes max_cost_usd: a positive, finite number of US
// dollars (an integer such as 3 is one too).
func decodeCost(v *yaml.Node) (float64, error) {
	if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!float" && v.ShortTag() != "!!int") {
		return 0, fmt.Errorf("want a number of US dollars such as 2.5, got %s", describe(v))
	}
	var f float64
	if err := v.Decode(&f); err != nil {
		return 0, err
	}
	if !(f > 0) || math.IsInf(f, 0) || f > 1e12 {
		return 0, fmt.Errorf("must be a positive number of US dollars, got %s", v.Value)
	}
	return f, nil
}

// decodeScalar decodes a scalar of the given YAML tag into out.
func decodeScalar(v *yaml.Node, tag string, out any) error {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != tag {
		return fmt.Errorf("want %s, got %s", kindName(tag), describe(v))
	}
	return v.Decode(out)
}

func kindName(tag string) string {
	if tag == "!!int" {
		return "an integer"
	}
	return "a " + typeName(tag)
}

func typeName(tag string) string {
	switch tag {
	case "!!int":
		return "integer"
	case "!!str":
		return "string"
	case "!!bool":
		return "boolean"
	case "!!float":
		return "number"
	case "!!null":
		return "null"
	}
	return tag
}

func describe(v *yaml.Node) string {
	switch v.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q (%s)", v.Value, typeName(v.ShortTag()))
	}
	return "an alias"
}

// decodeToolList accepts "Read,Grep" or a list of strings. An empty string
// or an empty list yields an empty, non-nil slice (no tools).
func decodeToolList(v *yaml.Node) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.ShortTag() != "!!str" {
			if v.ShortTag() == "!!null" {
				return nil, errors.New(`want a string such as "Read,Grep" or a list; use "" for no tools`)
			}
			return nil, fmt.Errorf(`want a string such as "Read,Grep" or a list, got %s`, describe(v))
		}
		return splitTools(v.Value)
	case yaml.SequenceNode:
		out := make([]string, 0, len(v.Content))
		for _, item := range v.Content {
			if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!str" {
				return nil, &lineError{item.Line, fmt.Errorf("list item: want a tool name, got %s", describe(item))}
			}
			name := strings.TrimSpace(item.Value)
			if name == "" {
				return nil, &lineError{item.Line, errors.New("list item: empty tool name")}
			}
			out = append(out, name)
		}
		return out, nil
	}
	return nil, fmt.Errorf(`want a string such as "Read,Grep" or a list, got %s`, describe(v))
}

// splitTools splits on commas outside parentheses, so a rule such as
// "Bash(git diff:*, git log:*)" stays one item.
func splitTools(s string) ([]string, error) {
	out := []string{}
	depth, start := 0, 0
	flush := func(end int) error {
		name := strings.TrimSpace(s[start:end])
		if name == "" {
			if strings.TrimSpace(s) == "" {
				return nil
			}
			return fmt.Errorf("empty tool name in %q", s)
		}
		out = append(out, name)
		return nil
	}
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				if err := flush(i); err != nil {
					return nil, err
				}
				start = i + 1
			}
		}
	}
	if err := flush(len(s)); err != nil {
		return nil, err
	}
	return out, nil
}
