package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chirality/harness/event"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/usage"
)

// harness usage reads a project's event logs offline: a table by engine
// with the total, the same report as JSON, a bad --by refused.
func TestUsageCommand(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	state := t.TempDir()
	dir := filepath.Join(root, session.SessionsDir)
	os.MkdirAll(dir, 0o700)
	var b []byte
	for _, e := range []event.Event{
		{Type: event.TypeSessionInit, Init: &event.SessionInit{Engine: "codex", Model: "gpt-5"}, Time: 1_790_000_000_000},
		{Type: event.TypeUsageUpdate, Usage: &event.UsageUpdate{Engine: "codex", Model: "gpt-5", InputTokens: 1200, OutputTokens: 34, CostUSD: 0.5}, Time: 1_790_000_000_000},
		{Type: event.TypeSessionComplete, Complete: &event.SessionComplete{}, Time: 1_790_000_000_000},
		{Type: event.TypeRateLimit, RateLimit: &event.RateLimit{Engine: "codex", Limit: "primary", UsedPercent: 42, ResetsAt: 1_790_003_600}, Time: 1_790_000_000_000},
	} {
		b = append(e.AppendJSON(b), '\n')
	}
	os.WriteFile(filepath.Join(dir, "11111111-1111-4111-8111-111111111111.events.jsonl"), b, 0o600)

	cmd := func(want int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args = append(args, "--project-root", root, "--state-dir", state)
		if code := run(args, &out, &errOut); code != want {
			t.Fatalf("%v: exit %d, want %d: %s%s", args, code, want, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	text := cmd(0, "usage", "--by", "engine")
	if !strings.Contains(text, "codex") || !strings.Contains(text, "1200") || !strings.Contains(text, "0.5000") ||
		!strings.Contains(text, "rate limit codex primary: 42% used") {
		t.Errorf("table:\n%s", text)
	}
	var rep usage.Report
	if err := json.Unmarshal([]byte(cmd(0, "usage", "--json", "--by", "day")), &rep); err != nil || rep.Total.Turns != 1 ||
		rep.Total.InputTokens != 1200 || len(rep.Groups) != 1 || rep.Groups[0].Key != "2026-09-21" {
		t.Errorf("json: %+v %v", rep, err)
	}
	if _, err := os.Stat(usage.IndexFile(state)); err != nil {
		t.Errorf("the index was not kept in the state directory: %v", err)
	}
	if out := cmd(2, "usage", "--by", "week"); !strings.Contains(out, "--by must be") {
		t.Errorf("bad --by: %s", out)
	}
}
