package claudecode_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/chirality/harness/claudecode"
	"github.com/chirality/harness/claudecode/claudetest"
	"github.com/chirality/harness/engine"
)

// OptsFor maps Request.Effort onto the CLI's effort variable, without
// touching the caller's Env, and refuses a level the CLI does not know.
func TestOptsForEffort(t *testing.T) {
	env := make([]string, 1, 4)
	env[0] = "A=1"
	opts, err := claudecode.OptsFor(engine.Request{Cwd: "/p", Env: env, Effort: "high"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opts.Env, []string{"A=1", "CLAUDE_CODE_EFFORT_LEVEL=high"}) {
		t.Errorf("env %q", opts.Env)
	}
	if env[:2][1] != "" {
		t.Errorf("the request's Env backing array was written: %q", env[:2])
	}
	if opts, _ := claudecode.OptsFor(engine.Request{Cwd: "/p", Env: env}); !slices.Equal(opts.Env, env) {
		t.Errorf("no effort: env %q", opts.Env)
	}
	if _, err := claudecode.OptsFor(engine.Request{Cwd: "/p", Effort: "max"}); !errors.Is(err, claudecode.ErrInvalidOptions) || !errors.Is(err, engine.ErrInvalidEffort) {
		t.Errorf("effort max: %v", err)
	}
}

// The real CLI sends the effort a turn was started with as the model
// request's output_config.effort.
func TestRealCLIEffort(t *testing.T) {
	r := newRealCLI(t)
	effort := func(level string) string {
		t.Helper()
		opts, err := claudecode.OptsFor(engine.Request{Cwd: r.cwd, Effort: level})
		if err != nil {
			t.Fatal(err)
		}
		r.api.Script(claudetest.TextReply("ok"))
		if _, err := r.turn("s-"+level, "hi", opts); err != nil {
			t.Fatalf("turn: %v", err)
		}
		var body struct {
			OutputConfig struct {
				Effort string `json:"effort"`
			} `json:"output_config"`
		}
		reqs := r.api.Requests()
		for i := len(reqs) - 1; i >= 0; i-- { // the answer's request, not a title's
			if len(reqs[i].Tools) > 0 {
				if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
					t.Fatal(err)
				}
				return body.OutputConfig.Effort
			}
		}
		t.Fatal("no model request with tools")
		return ""
	}
	if got := effort("low"); got != "low" {
		t.Errorf("effort low: request has %q", got)
	}
	if got := effort("high"); got != "high" {
		t.Errorf("effort high: request has %q", got)
	}
}
