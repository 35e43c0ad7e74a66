package engines

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseFile(t *testing.T) {
	good := `engines:
  - name: opencode
    binary: /opt/opencode
  - name: my-agent
    kind: acp
    command: [my-agent, --acp]
    env: [MY_MODE=fast]
    credentials: [MY_AGENT_API_KEY]
`
	cfgs, err := ParseFile("e.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 {
		t.Fatalf("%d entries", len(cfgs))
	}
	oc := cfgs[0]
	if strings.Join(oc.Command, " ") != "opencode acp" || oc.Binary != "/opt/opencode" || !strings.Contains(oc.Install, "opencode-ai@") {
		t.Errorf("built-in entry not kept: %+v", oc)
	}
	my := cfgs[1]
	if strings.Join(my.Command, " ") != "my-agent --acp" || my.ExtraEnv[0] != "MY_MODE=fast" || my.Credentials[0] != "MY_AGENT_API_KEY" {
		t.Errorf("entry = %+v", my)
	}

	bad := map[string]string{
		"engines:\n  - name: x\n    comand: [x]\n":                                 "e.yaml:3: unknown field \"comand\"",
		"engines:\n  - name: x\n":                                                  "e.yaml:2: engine \"x\" needs a command",
		"engines:\n  - command: [x]\n":                                             "e.yaml:2: an engine entry needs a name",
		"engines:\n  - name: x\n    kind: mcp\n    command: [x]\n":                 "e.yaml:2: engine \"x\": kind \"mcp\"",
		"engines:\n  - name: x\n    command: [x]\n  - name: x\n    command: [y]\n": "e.yaml:4: engine \"x\" is already defined on line 2",
		"engines:\n  - name: x\n    command: [x]\n    env: [NOEQUALS]\n":           "e.yaml:2: engine \"x\": env entry \"NOEQUALS\"",
		"engines:\n  - name: x\n    command: [x]\n    env: [MY_TOKEN=s3]\n":        "looks like a secret",
		"engines:\n  - name: codex\n    command: [x]\n":                            "is built in",
		"engines:\n  - name: native\n    command: [x]\n":                           "another name of the built-in anthropic",
		"engines:\n  - name: Bad Name\n    command: [x]\n":                         "e.yaml:2:",
		"agents: []\n":                    "e.yaml:1: unknown key \"agents\"",
		"engines: {}\n":                   "engines: must be a list",
		"engines:\n  - [a]\n":             "e.yaml:2: an engine entry must be a mapping",
		"engines:\n  - name: x\n   bad\n": "e.yaml",
		"- a\n":                           "want a mapping",
		"engines:\n  - name: [x]\n":       "e.yaml:2:",
	}
	for in, want := range bad {
		_, err := ParseFile("e.yaml", []byte(in))
		if !errors.Is(err, ErrEngineFile) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "engines.yaml")
	if err := os.WriteFile(p, []byte("engines:\n  - name: mine\n    command: [no-such-agent-xyz]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	engs, err := Load(p, Config{})
	if err != nil || len(engs) != 1 || engs[0].Name() != "mine" {
		t.Fatalf("%v %v", engs, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.yaml"), Config{}); !errors.Is(err, ErrEngineFile) {
		t.Errorf("missing file: %v", err)
	}
	if engs, err := Load("", Config{}); engs != nil || err != nil {
		t.Errorf("no file: %v %v", engs, err)
	}
}
