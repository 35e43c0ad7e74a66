package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/lazyre"
	"github.com/chirality/harness/irc"
)

// Agent kinds of agents.yaml's agents[].agent and supervisor.agent.
const (
	KindClaude    = "claude"    // Claude Code (engine claude-code)
	KindCodex     = "codex"     // OpenAI Codex (engine codex)
	KindCopilot   = "copilot"   // GitHub Copilot over ACP (copilot --acp --stdio)
	KindACP       = "acp"       // any ACP agent: acp_command
	KindAnthropic = "anthropic" // the native loop on the Messages API (engine anthropic)
	KindNative    = "native"    // the same as anthropic
)

// Kinds are the accepted agent kinds.
var Kinds = []string{KindClaude, KindCodex, KindCopilot, KindACP, KindAnthropic, KindNative}

// ThinkingLevels are the accepted thinking levels.
var ThinkingLevels = []string{"low", "medium", "high"}

// Defaults of agents.yaml (spec 003's where it gives one).
const (
	DefaultHost     = "127.0.0.1"
	DefaultPort     = 6667
	DefaultAgent    = KindClaude // agents[].agent left out
	DefaultThinking = "medium"   // agents[].thinking left out
)

// DefaultACPCommand is acp_command left out: ["opencode", "acp"].
func DefaultACPCommand() Command { return Command{"opencode", "acp"} }

// Command is an argv: acp_command. agents.yaml gives it as a list
// (["cline", "--acp"], spec 003's form); a string ("cline --acp", the
// form older files used) still reads, split on spaces.
type Command []string

// UnmarshalYAML takes a list of strings or one string.
func (c *Command) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*c = nil
			return nil
		}
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*c = strings.Fields(s)
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*c = l
		return nil
	}
	return fmt.Errorf("line %d: a command is a list of strings ([\"opencode\", \"acp\"]) or a string", n.Line)
}

// Config is agents.yaml.
//
//	server: {name: lab, host: 127.0.0.1, port: 6667}
//	supervisor: {agent: claude, model: …, thinking: low, window_size: 20,
//	             eval_interval: 5, escalation_threshold: 3, webhook: https://…}
//	agents:
//	  - {nick: alice, agent: claude, directory: ./alice, channels: ["#dev"]}
type Config struct {
	Server     ServerConfig      `yaml:"server"`
	Supervisor *SupervisorConfig `yaml:"supervisor"`
	Agents     []AgentConfig     `yaml:"agents"`
	// File is the path the configuration was read from ("" when parsed
	// from bytes); relative directories are resolved against its
	// directory.
	File string `yaml:"-"`
}

// ServerConfig is the IRC server. Name, when set, prefixes the agents'
// IRC nicks that do not start with "<name>-" already (see
// Config.IRCNick).
type ServerConfig struct {
	Name string `yaml:"name"`
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
	// Hosts are more servers of the same IRC network ("host:port"),
	// tried in order after host:port when a connection fails: the agent
	// reconnects to the next one with back-off, and rejoins its channels.
	Hosts []string `yaml:"hosts"`
}

// Addr is host:port.
func (s ServerConfig) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Addrs is host:port, then Hosts: the order the agents try them in.
func (s ServerConfig) Addrs() []string { return append([]string{s.Addr()}, s.Hosts...) }

// SupervisorConfig configures the supervisor of every agent; omit the
// section for none.
type SupervisorConfig struct {
	Agent               string `yaml:"agent"`
	Model               string `yaml:"model"`
	Thinking            string `yaml:"thinking"`
	WindowSize          int    `yaml:"window_size"`
	EvalInterval        int    `yaml:"eval_interval"`
	EscalationThreshold int    `yaml:"escalation_threshold"`
	// Webhook receives escalations as a JSON POST ("" = logged only).
	Webhook string `yaml:"webhook"`
	// ACPCommand is the ACP agent a supervisor with agent: acp runs
	// (nil = DefaultACPCommand).
	ACPCommand Command `yaml:"acp_command"`
}

// AgentConfig is one agent.
type AgentConfig struct {
	Nick      string   `yaml:"nick"`
	Agent     string   `yaml:"agent"`
	Directory string   `yaml:"directory"`
	Channels  []string `yaml:"channels"`
	Model     string   `yaml:"model"`
	Thinking  string   `yaml:"thinking"`
	Tags      []string `yaml:"tags"`
	// ACPCommand is the ACP agent's argv (agent: acp; default
	// DefaultACPCommand).
	ACPCommand Command `yaml:"acp_command"`
	// Isolation "worktree" runs the agent's sessions each in a git
	// worktree of its own, outside its directory, from Base ("" = the
	// directory's HEAD; a remote ref such as origin/main is fetched
	// first). Sandbox (sandbox: true) runs its engine in the kernel
	// sandbox; a sandbox that is not a boolean stays a backend-specific
	// field in Extra, as before. Extensions of spec 003 (issue 31).
	Isolation string `yaml:"isolation"`
	Base      string `yaml:"base"`
	Sandbox   bool   `yaml:"-"`
	// Extra holds the entry's other keys, as YAML decoded them: spec
	// 003's backend-specific fields, passed through to the runner (the
	// daemon's NewAgent gets the AgentConfig; CoreAgent uses none and
	// logs their names when the agent starts).
	Extra map[string]any `yaml:"-"`
	// Line is where the agent's entry starts in the file.
	Line  int            `yaml:"-"`
	lines map[string]int // key → line
}

// agentKeys are the fields of an agents[] entry the daemon knows.
var agentKeys = []string{"nick", "agent", "directory", "channels", "model", "thinking", "tags", "acp_command", "isolation", "base"}

// ConfigError is a problem in agents.yaml, with the line it is on.
type ConfigError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	f := e.File
	if f == "" {
		f = "agents.yaml"
	}
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", f, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", f, e.Line, e.Field, e.Msg)
}

// ErrConfig is wrapped by every configuration error (errors.Is).
var ErrConfig = errors.New("invalid agents configuration")

func (e *ConfigError) Unwrap() error { return ErrConfig }

// keyLines maps the keys of a mapping node to their lines.
func keyLines(n *yaml.Node) map[string]int {
	m := map[string]int{}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = n.Content[i].Line
		}
	}
	return m
}

// LoadConfig reads and validates path.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(b, abs)
}

// ParseConfig parses and validates agents.yaml's content; file names it
// in errors and anchors relative directories ("" = the current
// directory). Errors are *ConfigError (errors.Is ErrConfig) naming the
// line.
func ParseConfig(data []byte, file string) (*Config, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &ConfigError{File: file, Line: yamlErrLine(err), Msg: err.Error()}
	}
	if len(root.Content) == 0 {
		return nil, &ConfigError{File: file, Line: 1, Msg: "empty configuration: it needs server and agents"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, &ConfigError{File: file, Line: doc.Line, Msg: "the configuration must be a mapping (server, supervisor, agents)"}
	}
	c := &Config{File: file}
	v := validator{file: file}
	var serverNode, supNode, agentsNode *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, val := doc.Content[i], doc.Content[i+1]
		switch k.Value {
		case "server":
			serverNode = val
		case "supervisor":
			supNode = val
		case "agents":
			agentsNode = val
		default:
			v.add(k.Line, k.Value, "unknown key (want server, supervisor, agents)")
		}
	}
	if serverNode == nil {
		v.add(doc.Line, "server", "missing")
	} else if v.decode(serverNode, "server", &c.Server, []string{"name", "host", "port", "hosts"}) {
		v.server(&c.Server, serverNode)
	}
	if supNode != nil && !(supNode.Kind == yaml.ScalarNode && supNode.Tag == "!!null") {
		c.Supervisor = &SupervisorConfig{}
		if v.decode(supNode, "supervisor", c.Supervisor, []string{"agent", "model", "thinking", "window_size",
			"eval_interval", "escalation_threshold", "webhook", "acp_command"}) {
			v.supervisor(c.Supervisor, supNode)
		}
	}
	switch {
	case agentsNode == nil:
		v.add(doc.Line, "agents", "missing")
	case agentsNode.Kind != yaml.SequenceNode || len(agentsNode.Content) == 0:
		v.add(agentsNode.Line, "agents", "must be a list of at least one agent")
	default:
		seen := map[string]int{}
		for i, n := range agentsNode.Content {
			field := fmt.Sprintf("agents[%d]", i)
			var a AgentConfig
			if !v.decodePassing(n, field, &a, agentKeys, &a.Extra) {
				continue
			}
			a.Line, a.lines = n.Line, keyLines(n)
			v.agent(&a, field, c.Server.Name)
			if a.Nick != "" {
				// two spellings of one IRC nick (alice and lab-alice) collide too
				key := strings.ToLower(ircNick(c.Server.Name, a.Nick))
				if prev, dup := seen[key]; dup {
					v.add(a.line("nick"), field+".nick", fmt.Sprintf("%q is already the IRC nick of the agent on line %d", ircNick(c.Server.Name, a.Nick), prev))
				}
				seen[key] = a.Line
			}
			if a.Directory != "" && !filepath.IsAbs(a.Directory) {
				base := "."
				if file != "" {
					base = filepath.Dir(file)
				}
				if abs, err := filepath.Abs(filepath.Join(base, a.Directory)); err == nil {
					a.Directory = abs
				}
			}
			c.Agents = append(c.Agents, a)
		}
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	return c, nil
}

func (a *AgentConfig) line(key string) int {
	if l, ok := a.lines[key]; ok {
		return l
	}
	return a.Line
}

var yamlLineRE = lazyre.New(`line (\d+)`)

func yamlErrLine(err error) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		var n int
		fmt.Sscan(m[1], &n)
		return n
	}
	return 1
}

// validator collects every problem, so one run reports them all.
type validator struct {
	file string
	errs []error
}

func (v *validator) add(line int, field, msg string) {
	v.errs = append(v.errs, &ConfigError{File: v.file, Line: line, Field: field, Msg: msg})
}

func (v *validator) err() error {
	switch len(v.errs) {
	case 0:
		return nil
	case 1:
		return v.errs[0]
	}
	return errors.Join(v.errs...)
}

// decode decodes a mapping node into out after checking its keys.
func (v *validator) decode(n *yaml.Node, field string, out any, known []string) bool {
	if n.Kind != yaml.MappingNode {
		v.add(n.Line, field, "must be a mapping")
		return false
	}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(known, k.Value) {
			v.add(k.Line, field+"."+k.Value, "unknown key (want one of "+strings.Join(known, ", ")+")")
			ok = false
		}
	}
	if err := n.Decode(out); err != nil {
		v.add(yamlErrLineOr(err, n.Line), field, strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
		return false
	}
	return ok
}

// decodePassing is decode for a mapping whose other keys are not errors:
// they are decoded into extra (spec 003: backend-specific fields are
// passed through to the runner).
func (v *validator) decodePassing(n *yaml.Node, field string, out any, known []string, extra *map[string]any) bool {
	if n.Kind != yaml.MappingNode {
		v.add(n.Line, field, "must be a mapping")
		return false
	}
	if err := n.Decode(out); err != nil {
		v.add(yamlErrLineOr(err, n.Line), field, strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if slices.Contains(known, k.Value) {
			continue
		}
		var x any
		if err := val.Decode(&x); err != nil {
			v.add(k.Line, field+"."+k.Value, err.Error())
			return false
		}
		if *extra == nil {
			*extra = map[string]any{}
		}
		(*extra)[k.Value] = x
	}
	return true
}

func yamlErrLineOr(err error, def int) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		return yamlErrLine(err)
	}
	return def
}

var serverNameRE = lazyre.New(`^[A-Za-z][A-Za-z0-9_]{0,15}$`)

func (v *validator) server(s *ServerConfig, n *yaml.Node) {
	lines := keyLines(n)
	at := func(k string) int {
		if l, ok := lines[k]; ok {
			return l
		}
		return n.Line
	}
	if s.Name != "" && !serverNameRE.MatchString(s.Name) {
		v.add(at("name"), "server.name", fmt.Sprintf("%q must be a letter then up to 15 letters, digits or _ (it prefixes nicks: <name>-<nick>)", s.Name))
	}
	if s.Host == "" {
		s.Host = DefaultHost
	} else if strings.ContainsAny(s.Host, " /\t") {
		v.add(at("host"), "server.host", fmt.Sprintf("%q is not a host name or address", s.Host))
	}
	if s.Port == 0 {
		s.Port = DefaultPort
	} else if s.Port < 1 || s.Port > 65535 {
		v.add(at("port"), "server.port", fmt.Sprintf("%d is not a port (1-65535)", s.Port))
	}
	for _, h := range s.Hosts {
		host, port, err := net.SplitHostPort(h)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || strings.ContainsAny(host, " /\t") || perr != nil || n < 1 || n > 65535 {
			v.add(at("hosts"), "server.hosts", fmt.Sprintf("%q is not host:port (quote it: \"irc-b.example:6667\")", h))
		}
	}
}

func (v *validator) supervisor(s *SupervisorConfig, n *yaml.Node) {
	lines := keyLines(n)
	at := func(k string) int {
		if l, ok := lines[k]; ok {
			return l
		}
		return n.Line
	}
	if s.Agent == "" {
		s.Agent = KindClaude
	} else if !slices.Contains(Kinds, s.Agent) {
		v.add(at("agent"), "supervisor.agent", fmt.Sprintf("%q is not one of %s", s.Agent, strings.Join(Kinds, ", ")))
	}
	switch {
	case s.Agent == KindACP && len(s.ACPCommand) == 0:
		s.ACPCommand = DefaultACPCommand()
	case s.Agent != KindACP && s.ACPCommand != nil:
		v.add(at("acp_command"), "supervisor.acp_command", "only for agent: acp")
	}
	if s.Thinking != "" && !slices.Contains(ThinkingLevels, s.Thinking) {
		v.add(at("thinking"), "supervisor.thinking", fmt.Sprintf("%q is not one of low, medium, high", s.Thinking))
	}
	for k, val := range map[string]int{"window_size": s.WindowSize, "eval_interval": s.EvalInterval, "escalation_threshold": s.EscalationThreshold} {
		if val < 0 || val > 10000 {
			v.add(at(k), "supervisor."+k, fmt.Sprintf("%d must be between 0 (the default) and 10000", val))
		}
	}
	if s.Webhook != "" {
		u, err := url.Parse(s.Webhook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add(at("webhook"), "supervisor.webhook", "must be an http or https URL")
		}
	}
}

func (v *validator) agent(a *AgentConfig, field, server string) {
	switch {
	case a.Nick == "":
		v.add(a.Line, field+".nick", "missing")
	default:
		if err := irc.ValidateNick(a.Nick, 0); err != nil {
			v.add(a.line("nick"), field+".nick", err.Error())
		} else if err := irc.ValidateNick(ircNick(server, a.Nick), 30); err != nil {
			v.add(a.line("nick"), field+".nick", fmt.Sprintf("with the server name the IRC nick %q is too long (30 at most)", ircNick(server, a.Nick)))
		} else if strings.ContainsAny(a.Nick, "[]{}\\`^|") {
			v.add(a.line("nick"), field+".nick", fmt.Sprintf("%q: use letters, digits, - and _ (it names files)", a.Nick))
		}
	}
	if a.Agent == "" {
		a.Agent = DefaultAgent
	}
	if !slices.Contains(Kinds, a.Agent) {
		v.add(a.line("agent"), field+".agent", fmt.Sprintf("%q is not one of %s", a.Agent, strings.Join(Kinds, ", ")))
	}
	_, hasCommand := a.lines["acp_command"]
	switch {
	case a.Agent == KindACP && !hasCommand:
		a.ACPCommand = DefaultACPCommand()
	case a.Agent == KindACP && len(a.ACPCommand) == 0:
		v.add(a.line("acp_command"), field+".acp_command", "empty: the ACP agent's command, e.g. [\"opencode\", \"acp\"] (the default when left out)")
	case a.Agent != KindACP && hasCommand:
		v.add(a.line("acp_command"), field+".acp_command", "only for agent: acp")
	}
	if a.Directory == "" {
		v.add(a.Line, field+".directory", "missing")
	}
	if sb, ok := a.Extra["sandbox"].(bool); ok {
		a.Sandbox = sb
		delete(a.Extra, "sandbox")
		if len(a.Extra) == 0 {
			a.Extra = nil
		}
	}
	switch {
	case a.Isolation != "" && a.Isolation != "worktree":
		v.add(a.line("isolation"), field+".isolation", fmt.Sprintf("%q: want worktree (or leave it out)", a.Isolation))
	case a.Isolation == "" && a.Base != "":
		v.add(a.line("base"), field+".base", "only with isolation: worktree")
	}
	if len(a.Channels) == 0 {
		v.add(a.line("channels"), field+".channels", "at least one channel")
	}
	for _, ch := range a.Channels {
		if err := irc.ValidateChannel(ch); err != nil {
			v.add(a.line("channels"), field+".channels", fmt.Sprintf("%q: a channel starts with # or & and has no space or comma (quote it in YAML: \"#dev\")", ch))
		}
	}
	if a.Thinking == "" {
		a.Thinking = DefaultThinking
	} else if !slices.Contains(ThinkingLevels, a.Thinking) {
		v.add(a.line("thinking"), field+".thinking", fmt.Sprintf("%q is not one of low, medium, high", a.Thinking))
	}
	for _, t := range a.Tags {
		if strings.TrimSpace(t) == "" {
			v.add(a.line("tags"), field+".tags", "empty tag")
		}
	}
}

// Effort is the thinking level the agent's Harness runs at
// (harness.Config.Effort). Spec 003: thinking is Claude's, "medium" when
// left out; codex, copilot, acp and anthropic agents ignore it. A
// thinking written in the file for one of them is the opt-in extension:
// each engine maps it (engine.EffortLevels), e.g. Codex's reasoning
// effort.
func (a AgentConfig) Effort() string {
	if a.Agent == KindClaude {
		return a.Thinking
	}
	if _, set := a.lines["thinking"]; set {
		return a.Thinking
	}
	return ""
}

// Engine is the harness engine name of an agent kind: claude →
// claude-code, codex → codex, anthropic/native → anthropic, copilot →
// "copilot" (an ACP engine the daemon adds), acp → "acp-<nick>" (an ACP
// engine built from acp_command).
func (a AgentConfig) Engine() string {
	return engineName(a.Agent, a.Nick)
}

func engineName(kind, nick string) string {
	switch kind {
	case KindClaude:
		return engine.ClaudeCode
	case KindCodex:
		return "codex"
	case KindAnthropic, KindNative:
		return "anthropic"
	case KindCopilot:
		return "copilot"
	case KindACP:
		return "acp-" + nick
	}
	return kind
}

// IRCNick is the agent's nick on IRC. The one rule: a nick that starts
// with "<server.name>-" is the whole IRC nick, used as written (the
// seed's form: server spark, nick spark-culture → spark-culture); any
// other nick is the short form and gets the prefix (nick culture →
// spark-culture). With no server.name the nick is used as written. The
// agent's socket, PID file and HARNESS_NICK use the nick as configured.
func (c *Config) IRCNick(a AgentConfig) string { return ircNick(c.Server.Name, a.Nick) }

func ircNick(server, nick string) string {
	if server == "" || hasServerPrefix(server, nick) {
		return nick
	}
	return irc.PrefixNick(server, nick)
}

// hasServerPrefix: nick starts with "<server>-" (IRC folds case).
func hasServerPrefix(server, nick string) bool {
	return len(nick) > len(server)+1 && strings.EqualFold(nick[:len(server)+1], server+"-")
}

// Select returns the agents named by nicks (all when none), in the
// file's order, or an error naming the unknown ones.
func (c *Config) Select(nicks []string) ([]AgentConfig, error) {
	if len(nicks) == 0 {
		return slices.Clone(c.Agents), nil
	}
	var out []AgentConfig
	var unknown []string
	for _, n := range nicks {
		i := slices.IndexFunc(c.Agents, func(a AgentConfig) bool {
			return strings.EqualFold(a.Nick, n) || strings.EqualFold(c.IRCNick(a), n)
		})
		if i < 0 {
			unknown = append(unknown, n)
			continue
		}
		out = append(out, c.Agents[i])
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("no agent %s in %s", strings.Join(unknown, ", "), c.File)
	}
	return out, nil
}
