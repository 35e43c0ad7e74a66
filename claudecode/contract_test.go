package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
)

var record = flag.Bool("record", false, "re-record testdata/transcripts from the real CLI (then run with -update)")

// A scenario is a scripted conversation with the real CLI. The same
// scenarios record the transcripts in testdata/ and, live, check that the
// installed CLI still speaks the way the recordings say.
type scenario struct {
	name    string
	message string
	args    []string // extra CLI flags
	script  func(*claudetest.FakeAPI)
}

var scenarios = []scenario{
	{name: "text", message: "say hello", script: func(api *claudetest.FakeAPI) {
		api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("Hello **world** — ünïcode ✓ 日本語 🎉\n\n```go\nfmt.Println(\"hi\")\n```")}, ChunkSize: 8})
	}},
	{name: "tool", message: "run echo", args: []string{"--allowedTools=Bash"}, script: func(api *claudetest.FakeAPI) {
		api.Script(
			claudetest.Reply{Blocks: []claudetest.Block{claudetest.Text("Let me look."), claudetest.ToolUse("toolu_01", "Bash", map[string]any{"command": "echo hi-from-tool", "description": "say hi"})}},
			claudetest.TextReply("Done."),
		)
	}},
	{name: "tool-error", message: "read a missing file", args: []string{"--allowedTools=Read"}, script: func(api *claudetest.FakeAPI) {
		api.Script(
			claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse("toolu_02", "Read", map[string]any{"file_path": "/nonexistent/file.txt"})}},
			claudetest.TextReply("The file does not exist."),
		)
	}},
	{name: "think", message: "think first", script: func(api *claudetest.FakeAPI) {
		api.Script(claudetest.Reply{Blocks: []claudetest.Block{claudetest.Thinking("pondering deeply"), claudetest.Text("Answer.")}})
	}},
	{name: "apierr", message: "fail please", script: func(api *claudetest.FakeAPI) {
		api.SetResponder(func(*claudetest.Request) claudetest.Reply { return claudetest.ErrorReply(400, "bad things") })
	}},
	{name: "maxturns", message: "loop", args: []string{"--allowedTools=Bash", "--max-turns=2"}, script: func(api *claudetest.FakeAPI) {
		n := 0
		api.SetResponder(func(*claudetest.Request) claudetest.Reply {
			n++
			return claudetest.Reply{Blocks: []claudetest.Block{claudetest.ToolUse(fmt.Sprintf("toolu_loop%d", n), "Bash", map[string]any{"command": "echo loop"})}}
		})
	}},
	// retry: the first request is answered 529, so the CLI reports an
	// api_retry (about 0.6 s delay) and the second request succeeds.
	{name: "retry", message: "retry please", script: func(api *claudetest.FakeAPI) {
		api.Script(claudetest.Overloaded(), claudetest.TextReply("Recovered."))
	}},
	{name: "resume-missing", message: "hello again", args: []string{"--resume=0b7e4c8a-1111-4222-8333-944455556666"}, script: func(*claudetest.FakeAPI) {}},
}

// runScenario runs the real CLI the way the driver does and returns its
// raw stdout.
func runScenario(t *testing.T, sc scenario) []byte {
	t.Helper()
	bin := claudetest.FindCLI(t)
	api, err := claudetest.NewFakeAPI()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	sc.script(api)
	home, cwd := t.TempDir(), t.TempDir()
	opts := claudecode.TurnOpts{ExtraArgs: sc.args}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, opts.Args()...)
	cmd.Dir = cwd
	cmd.Env = append(claudetest.BaseEnv(home), api.Env()...)
	user, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": sc.message}, "parent_tool_use_id": nil, "session_id": ""})
	cmd.Stdin = bytes.NewReader(append(user, '\n'))
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	_ = cmd.Run() // error endings exit non-zero; the stream is what we want
	if stdout.Len() == 0 {
		t.Fatalf("%s: the CLI printed nothing", sc.name)
	}
	return stdout.Bytes()
}

// TestContractLiveMatchesRecording replays every scenario on the installed
// CLI and compares it with its recording: the frame kinds it printed and
// the UI events they map to, with volatile values (ids, costs, timings,
// paths) masked. It fails loudly when a new CLI version changes its
// stream: re-record, re-check the mapping, then bump TestedCLIVersion.
//
// With -record it writes the live transcripts to testdata/transcripts
// instead of comparing; then refresh the goldens:
//
//	go test ./claudecode -run TestContractLiveMatchesRecording -record
//	go test ./claudecode -run TestGoldenTranscripts -update
func TestContractLiveMatchesRecording(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			path := filepath.Join("testdata", "transcripts", sc.name+".ndjson")
			live := runScenario(t, sc)
			if *record {
				if err := os.WriteFile(path, live, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			recorded, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			wantFrames, wantEvents := shapeOf(t, recorded)
			gotFrames, gotEvents := shapeOf(t, live)
			if !slices.Equal(gotFrames, wantFrames) {
				t.Errorf("CLI %s prints other frames than the recording (made with %s):\n got: %v\nwant: %v",
					liveVersion(live), claudecode.TestedCLIVersion, gotFrames, wantFrames)
			}
			if gotEvents != wantEvents {
				t.Errorf("live UI events differ from the recording's:\n got:\n%s\nwant:\n%s", gotEvents, wantEvents)
			}
		})
	}
}

var volatile = regexp.MustCompile(`"(claudeSessionId|costUsd|usage|durationMs|cwd|tools|numTurns|delayMs|checkpoint)":("[^"]*"|[0-9.e-]+|\{[^{}]*(\{[^{}]*\}[^{}]*)*\}|\[[^\]]*\])`)

// tempDirs matches the t.TempDir() paths a scenario ran in.
var tempDirs = regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/Test[^/"]*/[0-9]+`)

// shapeOf returns the sorted set of frame kinds in a transcript and its
// UI events with volatile values masked.
func shapeOf(t *testing.T, transcript []byte) ([]string, string) {
	t.Helper()
	seen := map[string]bool{}
	d := claudecode.NewDecoder(bytes.NewReader(transcript), claudecode.DecoderOptions{
		SessionID: "contract",
		OnFrame: func(f claudecode.Frame) {
			kind := f.Type
			if f.Subtype != "" && f.Type != "stream_event" {
				kind += "/" + f.Subtype
			}
			seen[kind] = true
		},
		OnLineError: func(e *claudecode.LineError) { t.Errorf("unparsable line: %v", e) },
	})
	var events strings.Builder
	for d.Next() {
		line := volatile.ReplaceAllString(string(d.Event().AppendJSON(nil)), `"$1":"…"`)
		line = tempDirs.ReplaceAllString(line, "<tmpdir>")
		events.WriteString(line + "\n")
	}
	frames := make([]string, 0, len(seen))
	for k := range seen {
		frames = append(frames, k)
	}
	slices.Sort(frames)
	return frames, events.String()
}

func liveVersion(transcript []byte) string {
	var init struct {
		Version string `json:"claude_code_version"`
	}
	first, _, _ := bytes.Cut(transcript, []byte("\n"))
	_ = json.Unmarshal(first, &init)
	return init.Version
}
