package claudecode_test

import (
	"slices"
	"testing"

	"github.com/chirality/harness/claudecode"
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
