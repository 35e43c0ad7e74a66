package claudecode_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/mcpconfig"
)

func TestArgs(t *testing.T) {
	base := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}
	tests := []struct {
		name string
		opts claudecode.TurnOpts
		want []string
	}{
		{"defaults", claudecode.TurnOpts{}, append(slices.Clone(base), "--include-partial-messages", "--max-turns=25")},
		{"no partial messages", claudecode.TurnOpts{NoPartialMessages: true, MaxTurns: 3}, append(slices.Clone(base), "--max-turns=3")},
		{"no tools at all", claudecode.TurnOpts{Tools: []string{}}, append(slices.Clone(base), "--include-partial-messages", "--max-turns=25", "--tools=")},
		{"exactly these MCP servers", claudecode.TurnOpts{MCP: &mcpconfig.Config{}}, append(slices.Clone(base), "--include-partial-messages", "--max-turns=25", "--strict-mcp-config")},
		{"everything", claudecode.TurnOpts{
			Resume: "0b7e4c8a-1111-4222-8333-944455556666", SessionID: "1b7e4c8a-1111-4222-8333-944455556666", Fork: true,
			AppendSystemPromptFile: "/p/sys.txt", Tools: []string{"default"}, DisallowedTools: []string{"Bash", "Write"},
			AllowedTools: []string{"Read", "Bash(git diff:*)"}, PermissionMode: "dontAsk", Model: "opus",
			AddDirs: []string{"/a", "/b"}, MaxTurns: 5, ExtraArgs: []string{"--max-budget-usd", "1"},
		}, append(slices.Clone(base), "--include-partial-messages", "--max-turns=5",
			"--resume=0b7e4c8a-1111-4222-8333-944455556666", "--session-id=1b7e4c8a-1111-4222-8333-944455556666", "--fork-session",
			"--append-system-prompt-file=/p/sys.txt", "--tools=default", "--disallowedTools=Bash,Write",
			"--allowedTools=Read,Bash(git diff:*)", "--permission-mode=dontAsk", "--model=opus",
			"--add-dir=/a", "--add-dir=/b", "--max-budget-usd", "1")},
	}
	tests = append(tests, struct {
		name string
		opts claudecode.TurnOpts
		want []string
	}{"cut", claudecode.TurnOpts{Resume: "0b7e4c8a-1111-4222-8333-944455556666", ResumeSessionAt: "2b7e4c8a-1111-4222-8333-944455556666", Fork: true},
		append(slices.Clone(base), "--include-partial-messages", "--max-turns=25", "--resume=0b7e4c8a-1111-4222-8333-944455556666",
			"--resume-session-at=2b7e4c8a-1111-4222-8333-944455556666", "--fork-session")})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := tt.opts.Args(); !slices.Equal(got, tt.want) {
				t.Errorf("Args:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A cut needs a conversation and a uuid; OptsFor always cuts a copy, and
// refuses a fork or cut without a conversation as unsupported.
func TestForkAndCutOptions(t *testing.T) {
	for _, o := range []claudecode.TurnOpts{
		{ResumeSessionAt: "2b7e4c8a-1111-4222-8333-944455556666"},
		{Resume: "0b7e4c8a-1111-4222-8333-944455556666", ResumeSessionAt: "--evil"},
	} {
		if err := o.Validate(); !errors.Is(err, claudecode.ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	opts, err := claudecode.OptsFor(engine.Request{Resume: "0b7e4c8a-1111-4222-8333-944455556666", ResumeAt: "2b7e4c8a-1111-4222-8333-944455556666"})
	if err != nil || !opts.Fork || opts.ResumeSessionAt != "2b7e4c8a-1111-4222-8333-944455556666" {
		t.Errorf("cut: %+v %v", opts, err)
	}
	if _, err := claudecode.OptsFor(engine.Request{Fork: true}); !errors.Is(err, engine.ErrUnsupported) {
		t.Errorf("fork without a conversation: %v", err)
	}
}

// The new system prompt travels in the message only on a resumed
// conversation whose prompt changed.
func TestMessageFor(t *testing.T) {
	req := engine.Request{Message: "go on", SystemPrompt: "You are NEW.", Resume: "c", PromptChanged: true}
	if m := claudecode.MessageFor(req); !strings.Contains(m, "You are NEW.") || !strings.HasSuffix(m, "\n\ngo on") {
		t.Errorf("changed: %q", m)
	}
	for _, r := range []engine.Request{
		{Message: "go on", SystemPrompt: "You are NEW.", Resume: "c"},
		{Message: "go on", SystemPrompt: "You are NEW.", PromptChanged: true},
	} {
		if m := claudecode.MessageFor(r); m != "go on" {
			t.Errorf("%+v: %q", r, m)
		}
	}
}

// An engine request without MCP servers still gets an empty, strict
// configuration (the CLI must not add servers of its own); with servers it
// gets them, the file going in the private runtime directory, not in the
// session's StateDir (inside the project).
func TestOptsForMCP(t *testing.T) {
	opts, err := claudecode.OptsFor(engine.Request{StateDir: "/state"})
	if err != nil || opts.MCP == nil || opts.MCP.Len() != 0 || opts.MCPDir != "" {
		t.Fatalf("no servers: MCP %v dir %q err %v, want an empty config in the runtime dir", opts.MCP, opts.MCPDir, err)
	}
	cfg := &mcpconfig.Config{Servers: []mcpconfig.Server{{Name: "a", Type: mcpconfig.Stdio, Command: "x"}}}
	if opts, _ = claudecode.OptsFor(engine.Request{MCP: cfg}); opts.MCP != cfg {
		t.Fatalf("servers not passed on: %v", opts.MCP)
	}
}
