// Package mcpconfig reads the one MCP (Model Context Protocol) server
// configuration the harness gives every engine, in Claude Code's
// `.mcp.json` format:
//
//	{"mcpServers": {
//	  "tracker":    {"command": "node", "args": ["tracker.js"], "env": {"TOKEN": "${TRACKER_TOKEN}"}},
//	  "everything": {"type": "http", "url": "http://127.0.0.1:3001/mcp", "headers": {"Authorization": "Bearer ${T}"}}
//	}}
//
// A Config is parsed once (Parse, Load, Project), layered (Merge) and
// handed to the engines, each of which passes it on its own way (Claude
// Code --mcp-config, Codex configuration overrides, ACP session/new
// mcpServers, the native loop as an MCP client).
//
// # Layers
//
// A session's servers are, from lowest to highest precedence: the
// project's `.mcp.json`, the server's `--mcp-config FILE`, then a
// persona's `mcp_servers:` (see Select). A server named in a higher layer
// replaces the lower one's whole entry; entries are never merged field by
// field.
//
// # Names
//
// A server's name is 1 to 64 characters of [A-Za-z0-9_-] without "__", so
// that a tool's name, ToolName(server, tool) = "mcp__<server>__<tool>",
// splits back unambiguously. That one naming is used in every engine's UI
// events and in permission rules.
//
// # Secrets
//
// Values in env and headers are credentials. `${VAR}` and
// `${VAR:-default}` in them (and in command, args and url) are expanded by
// Expand from the harness's environment, as Claude Code does, so every
// engine sees the same values; Secrets lists the expanded env and header
// values for the process's scrubber, and String/GoString of a Server never
// print them.
package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/chirality/harness/internal/lazyre"
)

// FileName is the project's configuration file, at the project root.
const FileName = ".mcp.json"

// Limits on a configuration: a file larger than MaxFileSize or with more
// than MaxServers servers is refused.
const (
	MaxFileSize = 1 << 20
	MaxServers  = 64
)

// Transport kinds of a Server.
const (
	Stdio = "stdio"
	HTTP  = "http"
	SSE   = "sse"
)

// ErrInvalid is matched (errors.Is) by every error about a malformed
// configuration; the concrete error is an *Error naming the source and
// the server.
var ErrInvalid = errors.New("mcpconfig: invalid MCP configuration")

// Error is a malformed configuration: Source is the file (or "persona
// X"), Server the entry's name when one is at fault.
type Error struct {
	Source, Server, Msg string
}

func (e *Error) Error() string {
	s := e.Source
	if s == "" {
		s = "MCP configuration"
	}
	if e.Server != "" {
		return fmt.Sprintf("%s: server %q: %s", s, e.Server, e.Msg)
	}
	return s + ": " + e.Msg
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Server is one MCP server: a command to spawn (stdio) or a URL (http,
// sse).
type Server struct {
	Name string `json:"-"`
	// Type is Stdio, HTTP or SSE; Parse fills it (Stdio when a command is
	// given and no type).
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// String names the server and its command or URL, never its env or
// headers.
func (s Server) String() string {
	if s.Type == Stdio {
		return fmt.Sprintf("%s (stdio: %s)", s.Name, s.Command)
	}
	return fmt.Sprintf("%s (%s: %s)", s.Name, s.Type, redactURL(s.URL))
}

// GoString is String, so %#v does not print secrets either.
func (s Server) GoString() string { return s.String() }

// redactURL drops a URL's user info and query, which may hold
// credentials.
func redactURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
			u = u[:i+3] + rest[at+1:]
		}
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return u
}

// Config is a set of servers, sorted by name. The zero value and nil are
// an empty configuration.
type Config struct {
	Servers []Server
}

var nameRE = lazyre.New(`^[A-Za-z0-9_-]{1,64}$`)

// ValidName reports whether name can name a server.
func ValidName(name string) bool {
	return nameRE.MatchString(name) && !strings.Contains(name, "__")
}

type wireFile struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
}

// Parse reads a configuration in `.mcp.json` form. source names it in
// errors. Unknown fields of an entry are refused (a typo would otherwise
// silently drop a setting); unknown top-level keys are ignored, as
// Claude Code does.
func Parse(data []byte, source string) (*Config, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{Source: source, Msg: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
	}
	var f wireFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, &Error{Source: source, Msg: "not JSON of the form {\"mcpServers\": {NAME: {...}}}: " + err.Error()}
	}
	if len(f.MCPServers) > MaxServers {
		return nil, &Error{Source: source, Msg: fmt.Sprintf("%d servers, more than %d", len(f.MCPServers), MaxServers)}
	}
	c := &Config{}
	for name, raw := range f.MCPServers {
		s, err := parseEntry(name, raw)
		if err != nil {
			err.Source = source
			return nil, err
		}
		c.Servers = append(c.Servers, s)
	}
	c.sort()
	return c, nil
}

// ParseEntry reads one server entry (the value under its name), as a
// persona's inline entry gives it.
func ParseEntry(name string, raw []byte, source string) (Server, error) {
	s, err := parseEntry(name, raw)
	if err != nil {
		err.Source = source
		return Server{}, err
	}
	return s, nil
}

func parseEntry(name string, raw []byte) (Server, *Error) {
	bad := func(msg string) (Server, *Error) { return Server{}, &Error{Server: name, Msg: msg} }
	if !ValidName(name) {
		return bad("a server name is 1 to 64 letters, digits, _ or - (and no \"__\")")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s Server
	if err := dec.Decode(&s); err != nil {
		return bad("bad entry: " + err.Error())
	}
	s.Name = name
	if s.Type == "" && s.Command != "" {
		s.Type = Stdio
	}
	switch s.Type {
	case Stdio:
		if strings.TrimSpace(s.Command) == "" {
			return bad("a stdio server needs a command")
		}
		if s.URL != "" || len(s.Headers) > 0 {
			return bad("a stdio server takes no url or headers")
		}
	case HTTP, SSE:
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			return bad("an " + s.Type + " server needs an http:// or https:// url")
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			return bad("an " + s.Type + " server takes no command, args or env")
		}
	case "":
		return bad("needs a command (stdio) or a type and url (http, sse)")
	default:
		return bad(fmt.Sprintf("unknown type %q (stdio, http or sse)", s.Type))
	}
	return s, nil
}

// Load reads the configuration file at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mcpconfig: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("mcpconfig: %s: %w", path, err)
	}
	return Parse(data, path)
}

// Project reads root's `.mcp.json`; a project without one has an empty
// configuration (nil, nil).
func Project(root string) (*Config, error) {
	c, err := Load(filepath.Join(root, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return c, err
}

func (c *Config) sort() {
	sort.Slice(c.Servers, func(i, j int) bool { return c.Servers[i].Name < c.Servers[j].Name })
}

// Len is the number of servers (0 for nil).
func (c *Config) Len() int {
	if c == nil {
		return 0
	}
	return len(c.Servers)
}

// Get returns the server named name.
func (c *Config) Get(name string) (Server, bool) {
	if c == nil {
		return Server{}, false
	}
	for _, s := range c.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return Server{}, false
}

// Names returns the servers' names, sorted.
func (c *Config) Names() []string {
	var out []string
	if c != nil {
		for _, s := range c.Servers {
			out = append(out, s.Name)
		}
	}
	return out
}

// Merge layers configurations, lowest precedence first: a server in a
// later layer replaces a same-named one whole. Nil layers are skipped;
// the result is a new Config sharing no slices or maps with its layers.
func Merge(layers ...*Config) *Config {
	byName := map[string]Server{}
	for _, l := range layers {
		if l == nil {
			continue
		}
		for _, s := range l.Servers {
			byName[s.Name] = s.clone()
		}
	}
	out := &Config{}
	for _, s := range byName {
		out.Servers = append(out.Servers, s)
	}
	out.sort()
	return out
}

func (s Server) clone() Server {
	s.Args = slices.Clone(s.Args)
	s.Env = cloneMap(s.Env)
	s.Headers = cloneMap(s.Headers)
	return s
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Select is how a persona's `mcp_servers:` applies: the servers of base
// named in names (each must exist, else an *Error naming it), plus the
// inline entries (which win over a same-named base server). A persona
// without `mcp_servers:` does not call Select and gets base whole.
func Select(base *Config, names []string, inline []Server, source string) (*Config, error) {
	sel := &Config{}
	for _, n := range names {
		s, ok := base.Get(n)
		if !ok {
			return nil, &Error{Source: source, Server: n, Msg: "not in the project's " + FileName + " or --mcp-config"}
		}
		sel.Servers = append(sel.Servers, s)
	}
	return Merge(sel, &Config{Servers: inline}), nil
}

var varRE = lazyre.New(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Expand returns a copy of c with `${VAR}` and `${VAR:-default}` replaced
// in command, args, env and header values and url, looking variables up
// with lookup (os.LookupEnv when nil). An unset variable without a default
// is an *Error naming it (never its value).
func (c *Config) Expand(lookup func(string) (string, bool)) (*Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	out := Merge(c)
	for i := range out.Servers {
		s := &out.Servers[i]
		var missing string
		exp := func(v string) string {
			return varRE.ReplaceAllStringFunc(v, func(m string) string {
				sub := varRE.FindStringSubmatch(m)
				if val, ok := lookup(sub[1]); ok {
					return val
				}
				if sub[2] != "" {
					return sub[3]
				}
				if missing == "" {
					missing = sub[1]
				}
				return ""
			})
		}
		s.Command, s.URL = exp(s.Command), exp(s.URL)
		for j := range s.Args {
			s.Args[j] = exp(s.Args[j])
		}
		for k, v := range s.Env {
			s.Env[k] = exp(v)
		}
		for k, v := range s.Headers {
			s.Headers[k] = exp(v)
		}
		if missing != "" {
			return nil, &Error{Server: s.Name, Msg: "${" + missing + "} is not set"}
		}
	}
	return out, nil
}

// Secrets returns the values of every server's env and headers (the
// process's scrubber registers them), sorted, without duplicates.
func (c *Config) Secrets() []string {
	var out []string
	if c != nil {
		for _, s := range c.Servers {
			for _, v := range s.Env {
				out = append(out, v)
			}
			for _, v := range s.Headers {
				out = append(out, v)
				// "Bearer X": X alone is the secret too.
				if _, tok, ok := strings.Cut(v, " "); ok {
					out = append(out, tok)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// JSON renders c in `.mcp.json` form (what Claude Code's --mcp-config
// reads). It holds the secrets: write it only to a private file.
func (c *Config) JSON() ([]byte, error) {
	m := map[string]Server{}
	if c != nil {
		for _, s := range c.Servers {
			m[s.Name] = s
		}
	}
	return json.Marshal(map[string]any{"mcpServers": m})
}

// ToolPrefix is how every MCP tool's name starts.
const ToolPrefix = "mcp__"

// ToolName is the one name of server's tool in events and rules:
// "mcp__<server>__<tool>".
func ToolName(server, tool string) string { return ToolPrefix + server + "__" + tool }

// SplitToolName is ToolName's inverse; ok is false for a name that is not
// an MCP tool's.
func SplitToolName(name string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(name, ToolPrefix)
	if !found {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	if !ok || !ValidName(server) || tool == "" {
		return "", "", false
	}
	return server, tool, true
}
