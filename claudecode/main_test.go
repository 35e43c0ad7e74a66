package claudecode_test

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/sandbox"
)

// The test binary doubles as a fake claude: run with CLAUDETEST_REPLAY it
// plays a transcript, with CLAUDECODE_TEST_CHILD it misbehaves in one of
// the ways a child can (see fakeChild).
func TestMain(m *testing.M) {
	sandbox.Main()
	claudetest.RunReplayerIfRequested()
	if mode := os.Getenv("CLAUDECODE_TEST_CHILD"); mode != "" {
		os.Exit(fakeChild(mode))
	}
	goleak.VerifyTestMain(m)
}

func fakeChild(mode string) int {
	for _, a := range os.Args[1:] {
		if a == "--version" {
			fmt.Println("2.1.329 (Claude Code)")
			return 0
		}
	}
	switch mode {
	case "die": // writes to stderr and exits without a result
		fmt.Fprintln(os.Stderr, "fatal: something broke inside the CLI")
		fmt.Println(`{"type":"system","subtype":"init","session_id":"11111111-1111-4111-8111-111111111111","model":"m","tools":[]}`)
		return 3
	case "hang": // reads nothing more, prints nothing more, never exits on its own
		fmt.Println(`{"type":"system","subtype":"init","session_id":"11111111-1111-4111-8111-111111111111","model":"m","tools":[]}`)
		time.Sleep(time.Hour)
		return 0
	case "burst-hang": // init and 300 text deltas in one write, then hangs
		var b strings.Builder
		b.WriteString(`{"type":"system","subtype":"init","session_id":"11111111-1111-4111-8111-111111111111","model":"m","tools":[]}` + "\n")
		for i := range 300 {
			fmt.Fprintf(&b, `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%d "}},"session_id":"x","parent_tool_use_id":null}`+"\n", i)
		}
		_, _ = os.Stdout.WriteString(b.String())
		time.Sleep(time.Hour)
		return 0
	case "ignore-term": // survives SIGINT and SIGTERM, only SIGKILL ends it
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		fmt.Println(`{"type":"system","subtype":"init","session_id":"11111111-1111-4111-8111-111111111111","model":"m","tools":[]}`)
		time.Sleep(time.Hour)
		return 0
	case "grandchild": // starts a long-lived process in its group, then hangs
		pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "300"}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_ = os.WriteFile(os.Getenv("CLAUDECODE_TEST_PIDFILE"), []byte(fmt.Sprint(pid)), 0o600)
		fmt.Println(`{"type":"system","subtype":"init","session_id":"11111111-1111-4111-8111-111111111111","model":"m","tools":[]}`)
		time.Sleep(time.Hour)
		return 0
	case "echo-env": // prints its environment as a tool result (and to CLAUDECODE_TEST_ENVFILE), then a result
		var b strings.Builder
		for _, kv := range os.Environ() {
			b.WriteString(kv + "\n")
		}
		if f := os.Getenv("CLAUDECODE_TEST_ENVFILE"); f != "" {
			_ = os.WriteFile(f, []byte(b.String()), 0o600) // what the child got, before the driver scrubs its events
		}
		fmt.Printf(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":%q}]}}`+"\n", b.String())
		fmt.Println(`{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0,"usage":{}}`)
		return 0
	case "echo-stdin": // prints the first stdin line back inside a result
		line, _ := bufio.NewReaderSize(os.Stdin, 1<<20).ReadString('\n')
		fmt.Printf(`{"type":"result","subtype":"success","is_error":false,"result":%q,"total_cost_usd":0,"usage":{}}`+"\n", strings.TrimSpace(line))
		return 0
	case "leak-stderr": // prints its credentials to stderr and dies
		fmt.Fprintln(os.Stderr, "auth failed with key "+os.Getenv("ANTHROPIC_API_KEY")+" and token "+os.Getenv("ANTHROPIC_AUTH_TOKEN"))
		return 1
	case "latency": // 2,000 text deltas 0.5 ms apart, each stamped with its write time
		for i := 0; i < 2000; i++ {
			fmt.Printf(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"%d"}},"session_id":"x","parent_tool_use_id":null}`+"\n", time.Now().UnixNano())
			time.Sleep(500 * time.Microsecond)
		}
		fmt.Println(`{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0,"usage":{}}`)
		return 0
	case "huge-line": // one line over the bound, then a normal ending
		w := bufio.NewWriterSize(os.Stdout, 1<<20)
		fmt.Fprint(w, `{"type":"assistant","message":{"content":[{"type":"text","text":"`)
		chunk := strings.Repeat("x", 1<<20)
		for i := 0; i < 70; i++ {
			w.WriteString(chunk)
		}
		fmt.Fprintln(w, `"}]}}`)
		fmt.Fprintln(w, `{"type":"result","subtype":"success","is_error":false,"result":"after the big line","total_cost_usd":0,"usage":{}}`)
		w.Flush()
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown CLAUDECODE_TEST_CHILD mode", mode)
	return 2
}

// fakeChildScript writes an executable that runs this test binary in the
// given fakeChild mode.
func fakeChildScript(t *testing.T, mode string, env ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\nexport CLAUDECODE_TEST_CHILD=" + mode + "\n"
	for _, kv := range env {
		script += "export " + kv + "\n"
	}
	script += "exec '" + exe + "' \"$@\"\n"
	path := filepath.Join(dir, "claude")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
