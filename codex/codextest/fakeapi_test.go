package codextest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/chirality/harness/codex/codextest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type sse struct{ event, data string }

func post(t *testing.T, url, body string) (int, []sse) {
	t.Helper()
	resp, err := http.Post(url+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []sse
	sc := bufio.NewScanner(resp.Body)
	var cur sse
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			cur.event = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			cur.data = strings.TrimPrefix(l, "data: ")
		case l == "":
			out = append(out, cur)
			cur = sse{}
		}
	}
	return resp.StatusCode, out
}

func TestFakeAPI(t *testing.T) {
	f, err := codextest.NewFakeAPI(codextest.Reply{Text: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Script(
		codextest.Reply{Text: "hello world", Deltas: 3},
		codextest.Reply{Call: &codextest.Call{Command: "ls -l"}},
		codextest.Reply{Status: 429, ErrorMessage: "slow down"},
	)
	body := `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"function_call_output","call_id":"c","output":"out!"}],"tools":[{"type":"function","name":"exec_command"}]}`

	t.Run("text", func(t *testing.T) {
		code, evs := post(t, f.URL, body)
		var types []string
		var deltas []string
		for _, e := range evs {
			types = append(types, e.event)
			if e.event == "response.output_text.delta" {
				if !strings.Contains(e.data, `"type":"response.output_text.delta"`) {
					t.Errorf("data lacks its type: %s", e.data)
				}
				deltas = append(deltas, e.data)
			}
		}
		want := "response.created response.output_item.added response.output_text.delta response.output_text.delta response.output_text.delta response.output_item.done response.completed"
		if code != 200 || strings.Join(types, " ") != want {
			t.Errorf("code %d, events %v", code, types)
		}
		if !strings.Contains(evs[len(evs)-1].data, `"input_tokens":10`) {
			t.Errorf("usage %s", evs[len(evs)-1].data)
		}
		// the three deltas are the text, in order
		var text strings.Builder
		for _, d := range deltas {
			var v struct {
				Delta string `json:"delta"`
			}
			if err := json.Unmarshal([]byte(d), &v); err != nil || v.Delta == "" {
				t.Errorf("delta %s: %v", d, err)
			}
			text.WriteString(v.Delta)
		}
		if len(deltas) != 3 || text.String() != "hello world" {
			t.Errorf("%d deltas say %q, want 3 saying %q", len(deltas), text.String(), "hello world")
		}
	})
	t.Run("function call", func(t *testing.T) {
		_, evs := post(t, f.URL, body)
		if len(evs) != 3 || evs[1].event != "response.output_item.done" ||
			!strings.Contains(evs[1].data, `"name":"exec_command"`) || !strings.Contains(evs[1].data, `\"cmd\":\"ls -l\"`) {
			t.Errorf("events %+v", evs)
		}
	})
	t.Run("error", func(t *testing.T) {
		code, _ := post(t, f.URL, body)
		if code != 429 {
			t.Errorf("code %d", code)
		}
	})
	t.Run("default", func(t *testing.T) {
		_, evs := post(t, f.URL, body)
		if !strings.Contains(evs[len(evs)-2].data, `"text":"default"`) {
			t.Errorf("events %+v", evs)
		}
	})
	reqs := f.Requests()
	if len(reqs) != 4 || reqs[0].Model != "m" || !reqs[0].Stream || reqs[0].Tools[0] != "exec_command" {
		t.Fatalf("requests %+v", reqs)
	}
	if got := reqs[0].Texts(); len(got) != 1 || got[0] != "hi" {
		t.Errorf("Texts %q", got)
	}
	if got := reqs[0].FunctionOutputs(); len(got) != 1 || got[0] != "out!" {
		t.Errorf("FunctionOutputs %q", got)
	}
}

func TestCallTool(t *testing.T) {
	f, err := codextest.NewFakeAPI(codextest.Reply{Call: &codextest.Call{Command: "pwd"}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct{ tools, want string }{
		{`[{"type":"function","name":"shell_command"}]`, `"arguments":"{\"command\":\"pwd\"}","call_id":"call_1","id":"fc_1","name":"shell_command"`},
		{`[{"type":"function","name":"shell"}]`, `"name":"shell"`},
		{`[]`, `"name":"exec_command"`},
	} {
		_, evs := post(t, f.URL, `{"stream":true,"input":[],"tools":`+tc.tools+`}`)
		if len(evs) < 2 || !strings.Contains(evs[1].data, tc.want) {
			t.Errorf("tools %s: %+v", tc.tools, evs)
		}
	}
}

func TestWriteConfig(t *testing.T) {
	f, err := codextest.NewFakeAPI(codextest.Reply{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := filepath.Join(t.TempDir(), "codex")
	p, err := f.WriteConfig(dir, `approval_policy = "never"`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	for _, want := range []string{`base_url = "` + f.URL + `"`, `model_provider = "mock_provider"`, "supports_websockets = false", `approval_policy = "never"`, "stream_max_retries = 0"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("config lacks %q:\n%s", want, b)
		}
	}
}

func Example() {
	fake, err := codextest.NewFakeAPI(codextest.Reply{Text: "hello", Deltas: 2})
	if err != nil {
		panic(err)
	}
	defer fake.Close()
	resp, err := http.Post(fake.URL+"/responses", "application/json", strings.NewReader(`{"stream":true,"input":[]}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "event: ") {
			fmt.Println(l)
		}
	}
	// Output:
	// event: response.created
	// event: response.output_item.added
	// event: response.output_text.delta
	// event: response.output_text.delta
	// event: response.output_item.done
	// event: response.completed
}
