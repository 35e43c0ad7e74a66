package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/notify"
)

// harness serve with --notify-webhook and a --notify-config file calls
// both receivers, signed with HARNESS_NOTIFY_SECRET, when a turn ends,
// linking to this server's console.
func TestServeNotifiesWebhooks(t *testing.T) {
	type got struct {
		no  notify.Notification
		sig string
		ok  bool
	}
	const secret = "serve-notify-secret-42"
	var mu sync.Mutex
	calls := map[string][]got{}
	receiver := func(name string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var g got
			_ = json.Unmarshal(body, &g.no)
			g.sig = r.Header.Get(notify.SignatureHeader)
			g.ok = notify.Verify([]byte(secret), body, g.sig)
			mu.Lock()
			calls[name] = append(calls[name], g)
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	flagged, filed := receiver("flag"), receiver("file")
	file := filepath.Join(t.TempDir(), "notify.yaml")
	if err := os.WriteFile(file, []byte("notify:\n  webhooks: ["+filed.URL+"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(notify.SecretEnv, secret)
	t.Setenv("HARNESS_CLAUDE_BIN", claudetest.FindCLI(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	url, stop, status, errOut := startServe(t, "--demo", "--addr", "127.0.0.1:0", "--notify-webhook", flagged.URL, "--notify-config", file)
	defer func() {
		stop <- os.Interrupt
		if code := <-status; code != 0 {
			t.Errorf("serve exit %d:\n%s", code, errOut.String())
		}
	}()
	id := demoSession(t, url, "claude-code")
	demoTurn(t, url, id, "hello")
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		done := len(calls["flag"]) > 0 && len(calls["file"]) > 0
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call on both receivers: %v", calls)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for name, gs := range calls {
		g := gs[0]
		if g.no.Type != notify.TypeTurnCompleted || g.no.SessionID != id || !g.ok || g.no.Link != url+"/#s="+id {
			t.Errorf("%s receiver: %+v (signature %q valid %v)", name, g.no, g.sig, g.ok)
		}
	}
	if strings.Contains(errOut.String(), secret) {
		t.Error("the secret is in the server's log")
	}
}

// A notify setting that cannot work stops the server before it serves.
func TestServeRefusesBadNotifyConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notify.yaml")
	if err := os.WriteFile(file, []byte("notify:\n  webhoks: [http://x/]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--notify-webhook", "ftp://x/"},
		{"--notify-idle", "-1s", "--notify-ntfy", "http://x/t"},
		{"--notify-config", file},
		{"--notify-irc", "irc://irc.example/"}, // no channel
	} {
		var out, errOut strings.Builder
		code := serve(append([]string{"--addr", "127.0.0.1:0", "--root", t.TempDir(), "--warm", "0"}, args...), &out, &errOut, nil)
		if code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "notify") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}
