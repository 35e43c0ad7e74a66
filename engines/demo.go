package engines

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/codex/codextest"
)

// Demo is the demo set-up every command's --demo uses: the demo model on
// loopback, served as a Messages API (claudetest.FakeAPI with
// claudetest.DemoResponder) and as a Responses API (codextest.FakeAPI
// with codextest.DemoResponder), and the environment that points every
// built-in engine at it:
//
//	claude-code, claude-acp, anthropic  ANTHROPIC_BASE_URL and a fake key
//	codex      CODEX_HOME: a private config.toml whose provider is the demo Responses API
//	opencode   OPENCODE_CONFIG_CONTENT: a provider on the demo Messages API; no plugins, no project
//	           config, and its config directory marked as installed (no npm install at start)
//	copilot    COPILOT_OFFLINE=true and COPILOT_PROVIDER_* on the demo Messages API
//
// Every child also gets a scratch HOME and XDG directories (the user's own
// agent configuration is neither used nor touched), credentials of the
// real services blanked, and proxies off, so nothing in the demo opens a
// connection beyond loopback.
//
//	d, err := engines.StartDemo(engines.DemoOptions{Project: true})
//	defer d.Close()
//	cfg.ChildEnv = append(cfg.ChildEnv, d.Env...)
//	cfg.AllowedTools = append(cfg.AllowedTools, d.AllowedTools...)
//	all := engines.Builtin(engines.Config{ChildEnv: cfg.ChildEnv})
//
// Close stops both APIs and removes the scratch directory; it is safe to
// call more than once.
type Demo struct {
	// Env is what every child gets on top of its usual environment
	// (harness.Config.ChildEnv and Config.ChildEnv).
	Env []string
	// AllowedTools are the tool rules the demo model's tool use needs
	// (in dontAsk mode a tool no rule allows is denied).
	AllowedTools []string
	// Dir is the scratch directory (HOME, CODEX_HOME, the project, the
	// state), removed by Close.
	Dir string
	// Project is a scratch project to play in (DemoOptions.Project), ""
	// otherwise; State a scratch state directory.
	Project, State string
	// MessagesURL and ResponsesURL are the demo model's two APIs.
	MessagesURL, ResponsesURL string

	messages  *claudetest.FakeAPI
	responses *codextest.FakeAPI
}

// DemoOptions says what StartDemo makes besides the APIs.
type DemoOptions struct {
	// Project makes a small scratch project (Demo.Project).
	Project bool
	// Messages and Responses tune the demo model (zero = defaults).
	Messages  claudetest.DemoOptions
	Responses codextest.DemoOptions
}

// demoFiles are the scratch project's files.
var demoFiles = map[string]string{
	"README.md": "# Demo project\n\nA scratch project made by `harness --demo`. It is removed when the command ends.\n",
	"main.go":   "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from the demo project\") }\n",
	"notes.txt": "Ask the demo model anything; say \"long\" for a slow answer; send \"/demo error\" for an API error.\n",
}

// StartDemo starts the demo model and prepares its scratch directory.
func StartDemo(o DemoOptions) (d *Demo, err error) {
	d = &Demo{AllowedTools: append([]string(nil), claudetest.DemoAllowedTools...)}
	defer func() {
		if err != nil {
			d.Close()
			d = nil
		}
	}()
	if d.Dir, err = os.MkdirTemp("", "harness-demo-"); err != nil {
		return d, err
	}
	if d.messages, err = claudetest.NewFakeAPI(); err != nil {
		return d, err
	}
	d.messages.SetResponder(claudetest.DemoResponder(o.Messages))
	if d.responses, err = codextest.NewFakeAPI(codextest.Reply{Text: "Harness demo"}); err != nil {
		return d, err
	}
	if o.Responses.Error == nil {
		o.Responses.Error = isDemoError
	}
	d.responses.SetResponder(codextest.DemoResponder(o.Responses))
	d.MessagesURL, d.ResponsesURL = d.messages.URL, d.responses.URL

	home := filepath.Join(d.Dir, "home")
	codexHome := filepath.Join(d.Dir, "codex-home")
	for _, dir := range []string{home, codexHome, filepath.Join(home, ".config"), filepath.Join(home, ".local", "share"),
		filepath.Join(home, ".cache"), filepath.Join(home, ".local", "state")} {
		if err = os.MkdirAll(dir, 0o700); err != nil {
			return d, err
		}
	}
	if _, err = d.responses.WriteConfig(codexHome, `approval_policy = "never"`); err != nil {
		return d, err
	}
	if err = opencodeOffline(filepath.Join(home, ".config", "opencode")); err != nil {
		return d, err
	}
	opencode, err := json.Marshal(map[string]any{
		"model":      "demo/demo-model",
		"autoupdate": false,
		"share":      "disabled",
		"provider": map[string]any{"demo": map[string]any{
			"npm":     "@ai-sdk/anthropic",
			"options": map[string]any{"baseURL": d.messages.URL + "/v1", "apiKey": "demo"},
			"models":  map[string]any{"demo-model": map[string]any{"name": "Demo", "tool_call": true}},
		}},
	})
	if err != nil {
		return d, err
	}
	d.Env = append(d.messages.Env(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		// Codex: its own home, whose provider is the demo Responses API.
		"CODEX_HOME="+codexHome,
		"OPENAI_API_KEY=", "CODEX_API_KEY=", "OPENAI_BASE_URL=",
		// OpenCode: a provider on the demo Messages API, nothing fetched.
		"OPENCODE_CONFIG_CONTENT="+string(opencode),
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_PURE=1", "OPENCODE_DISABLE_PROJECT_CONFIG=1", "OPENCODE_DISABLE_SHARE=1",
		// Copilot: its own-provider (BYOK) mode, kept off GitHub.
		"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_TYPE=anthropic",
		"COPILOT_PROVIDER_BASE_URL="+d.messages.URL, "COPILOT_PROVIDER_API_KEY=demo",
		"COPILOT_MODEL=claude-sonnet-4.5",
		"COPILOT_GITHUB_TOKEN=", "GH_TOKEN=", "GITHUB_TOKEN=",
		// Claude: no other credential than the fake key.
		"ANTHROPIC_AUTH_TOKEN=", "CLAUDE_CODE_OAUTH_TOKEN=",
		// No proxy: the demo's only peers are on loopback.
		"HTTP_PROXY=", "HTTPS_PROXY=", "ALL_PROXY=", "http_proxy=", "https_proxy=", "all_proxy=",
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
	)
	d.State = filepath.Join(d.Dir, "state")
	if o.Project {
		d.Project = filepath.Join(d.Dir, "project")
		if err = os.MkdirAll(d.Project, 0o755); err != nil {
			return d, err
		}
		for name, content := range demoFiles {
			if err = os.WriteFile(filepath.Join(d.Project, name), []byte(content), 0o644); err != nil {
				return d, err
			}
		}
	}
	return d, nil
}

// opencodeOffline keeps OpenCode from installing its plugin package from
// npm. At start OpenCode runs npm (its bundled Arborist) in each of its
// config directories to add @opencode-ai/plugin (and its dependencies,
// 6.8 MB from registry.npmjs.org), unless that directory already has a
// node_modules and a package-lock.json whose root lists every
// dependency (opencode 1.18.33, Npm.install: checkNodeModules, then
// checkDirty). The demo's plugins are off (OPENCODE_PURE,
// OPENCODE_DISABLE_DEFAULT_PLUGINS), so the package is never needed:
// the global config directory (the scratch HOME's) is made to look
// installed; a project's .opencode directories are not read at all
// (OPENCODE_DISABLE_PROJECT_CONFIG).
func opencodeOffline(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o700); err != nil {
		return err
	}
	lock := `{"name":"opencode-config","lockfileVersion":3,"requires":true,` +
		`"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}` + "\n"
	return os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(lock), 0o600)
}

// isDemoError says whether prompt is claudetest.DemoCommandError (words
// may follow): the demo model's failure on both APIs.
func isDemoError(prompt string) bool {
	f, want := strings.Fields(prompt), strings.Fields(claudetest.DemoCommandError)
	return len(f) >= len(want) && strings.EqualFold(f[0], want[0]) && strings.EqualFold(f[1], want[1])
}

// Close stops the demo model and removes the scratch directory.
func (d *Demo) Close() error {
	if d == nil {
		return nil
	}
	var errs []error
	if d.messages != nil {
		d.messages.Close()
		d.messages = nil
	}
	if d.responses != nil {
		errs = append(errs, d.responses.Close())
		d.responses = nil
	}
	if d.Dir != "" {
		errs = append(errs, os.RemoveAll(d.Dir))
		d.Dir = ""
	}
	return errors.Join(errs...)
}
