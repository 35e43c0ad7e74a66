package engines

import (
	"bytes"
	"errors"
	"fmt"
	"gopkg.in/yaml.v3"
	"os"
	"strings"

	"github.com/chirality/harness/acp"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/secrets"
)

// FileHelp describes an engines file, for a command's --engines flag.
const FileHelp = "YAML file of engine entries (engines: [{name, kind: acp, command: [...], env: [...], credentials: [...], binary}]); an entry named like a built-in one (opencode, claude-acp, copilot) changes it"

// ErrEngineFile is wrapped by every error of an engines file.
var ErrEngineFile = errors.New("engines file")

// engineEntry is one entry of an engines file:
//
//	engines:
//	  - name: my-agent          # required: [a-z0-9][a-z0-9._-]*
//	    kind: acp               # the only kind (default)
//	    command: [my-agent, --acp]   # argv; optional for a built-in name
//	    binary: /opt/bin/my-agent    # explicit path of command[0]
//	    env: [MY_MODE=fast]          # added to the child's environment
//	    credentials: [MY_API_KEY]    # secret variables the agent may get
//	    install: "npm install my-agent@1.2.3"
type engineEntry struct {
	Name        string   `yaml:"name"`
	Kind        string   `yaml:"kind"`
	Command     []string `yaml:"command"`
	Binary      string   `yaml:"binary"`
	Env         []string `yaml:"env"`
	Credentials []string `yaml:"credentials"`
	Install     string   `yaml:"install"`
}

var entryFields = map[string]bool{"name": true, "kind": true, "command": true, "binary": true, "env": true, "credentials": true, "install": true}

// ParseFile reads an engines file's entries as ACP engine
// configurations (Env, AllowEnv and Logger left to the caller). Errors
// wrap ErrEngineFile and name the file and line.
func ParseFile(path string, data []byte) ([]acp.Config, error) {
	errAt := func(line int, format string, a ...any) error {
		return fmt.Errorf("%w %s:%d: %s", ErrEngineFile, path, line, fmt.Sprintf(format, a...))
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrEngineFile, path, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errAt(doc.Line, "want a mapping with an engines: list")
	}
	top := doc.Content[0]
	var list *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		k := top.Content[i]
		if k.Value != "engines" {
			return nil, errAt(k.Line, "unknown key %q (want engines)", k.Value)
		}
		list = top.Content[i+1]
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, errAt(top.Line, "engines: must be a list")
	}
	var out []acp.Config
	seen := map[string]int{}
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, errAt(item.Line, "an engine entry must be a mapping")
		}
		for i := 0; i+1 < len(item.Content); i += 2 {
			if k := item.Content[i]; !entryFields[k.Value] {
				return nil, errAt(k.Line, "unknown field %q", k.Value)
			}
		}
		var e engineEntry
		if err := item.Decode(&e); err != nil {
			return nil, errAt(item.Line, "%v", err)
		}
		if e.Name == "" {
			return nil, errAt(item.Line, "an engine entry needs a name")
		}
		if prev, dup := seen[e.Name]; dup {
			return nil, errAt(item.Line, "engine %q is already defined on line %d", e.Name, prev)
		}
		seen[e.Name] = item.Line
		switch e.Name {
		case ClaudeCode, Anthropic, Codex:
			return nil, errAt(item.Line, "engine %q is built in and not an ACP agent; choose another name", e.Name)
		}
		if alias, ok := Aliases[strings.ToLower(e.Name)]; ok {
			return nil, errAt(item.Line, "engine %q is another name of the built-in %s; choose another name", e.Name, alias)
		}
		if e.Kind != "" && e.Kind != acp.Kind {
			return nil, errAt(item.Line, "engine %q: kind %q is not supported (only %q)", e.Name, e.Kind, acp.Kind)
		}
		cfg, builtin := acp.BuiltinConfig(e.Name) // a built-in name keeps what the entry does not say
		cfg.Name = e.Name
		if len(e.Command) > 0 {
			cfg.Command = e.Command
		}
		if len(cfg.Command) == 0 || cfg.Command[0] == "" {
			return nil, errAt(item.Line, "engine %q needs a command (its argv, e.g. [my-agent, --acp])", e.Name)
		}
		_ = builtin
		if e.Install != "" {
			cfg.Install = e.Install
		}
		cfg.Binary = e.Binary
		for _, kv := range e.Env {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" || strings.ContainsAny(k, " \t") {
				return nil, errAt(item.Line, "engine %q: env entry %q is not KEY=VALUE", e.Name, kv)
			}
			if secrets.IsSecretEnvName(k) {
				return nil, errAt(item.Line, "engine %q: env entry %s looks like a secret; keep secrets out of this file, export them and name them under credentials:", e.Name, k)
			}
		}
		cfg.ExtraEnv = e.Env
		cfg.Credentials = append(cfg.Credentials, e.Credentials...)
		if _, err := acp.NewEngine(cfg); err != nil {
			return nil, errAt(item.Line, "%v", err)
		}
		out = append(out, cfg)
	}
	return out, nil
}

// Load reads an engines file ("" = none) into engines whose children
// get c.Env filtered (c.AllowEnv: more secret names to pass) plus
// c.ChildEnv, logging to c.Logger. An entry named like a built-in ACP
// engine (opencode, claude-acp, copilot) replaces it when both are given
// to the core (the later one of a name wins).
func Load(path string, c Config) ([]engine.Engine, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEngineFile, err)
	}
	cfgs, err := ParseFile(path, data)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Engine, 0, len(cfgs))
	for _, ac := range cfgs {
		ac.Env, ac.AllowEnv, ac.Logger = c.Env, c.AllowEnv, c.Logger
		ac.ExtraEnv = append(append([]string(nil), ac.ExtraEnv...), c.ChildEnv...)
		e, err := acp.NewEngine(ac)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
