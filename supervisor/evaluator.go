package supervisor

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/internal/atomicfile"
)

// PersonaID is the persona CoreEvaluator's sessions run with: no tools,
// one model call.
const PersonaID = "SUPERVISOR"

//go:embed AGENT_SUPERVISOR.md
var personaFile []byte

// ErrInvalidThinking is returned by a CoreEvaluator made with a thinking
// level other than "", low, medium or high (it is engine.ErrInvalidEffort).
var ErrInvalidThinking = engine.ErrInvalidEffort

// EvalDir is where CoreEvaluator's sessions live, under the agent's
// directory: a project root of their own (with the supervisor persona in
// its agents/), so the evaluations neither mix with the agent's sessions
// nor see its files.
func EvalDir(projectRoot string) string {
	return filepath.Join(projectRoot, ".chirality", "supervisor")
}

// CoreEvaluator runs each evaluation as one turn of the harness core on
// engine (model "" = the engine's default): a new session in
// EvalDir(projectRoot) with the SUPERVISOR persona, whose tools list is
// empty (the engine offers the model no tool) and max_turns 1; the
// answer is the turn's final text; the session is deleted afterwards.
// Cancelling ctx kills the turn.
//
// thinking ("" = the engine's default, low, medium, high) is checked
// here (ErrInvalidThinking from every call otherwise); it is the
// Harness's effort: build h with harness.Config.Effort = thinking (the
// daemon does), which reaches every turn as engine.Request.Effort and
// each engine maps (Claude Code's CLAUDE_CODE_EFFORT_LEVEL, Codex's
// reasoning effort; ignored by the native loop and the ACP agents).
func CoreEvaluator(h *harness.Harness, projectRoot, engineName, model, thinking string) Evaluator {
	if err := engine.CheckEffort(thinking); err != nil {
		return func(context.Context, string) (string, error) { return "", err }
	}
	return func(ctx context.Context, prompt string) (string, error) {
		root := EvalDir(projectRoot)
		if err := writePersona(root); err != nil {
			return "", fmt.Errorf("supervisor: %w", err)
		}
		s, err := h.NewSession(harness.SessionSpec{ProjectRoot: root, Persona: PersonaID, Mode: "direct",
			Engine: engineName, Model: model, Title: "supervisor evaluation"})
		if err != nil {
			return "", fmt.Errorf("supervisor: evaluation session: %w", err)
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = h.DeleteSession(dctx, s.ID)
		}()
		t, err := h.StartTurn(ctx, harness.TurnRequest{SessionID: s.ID, Message: prompt})
		if err != nil {
			return "", fmt.Errorf("supervisor: evaluation turn: %w", err)
		}
		// Cancelling ctx kills the turn (Wait's ctx would stop only the
		// waiting); Wait returns once it is over.
		stop := context.AfterFunc(ctx, func() { _ = t.Kill() })
		defer stop()
		res, err := t.Wait(context.Background(), nil)
		if cerr := ctx.Err(); cerr != nil {
			return "", cerr
		}
		var te *harness.TurnError
		switch {
		case errors.As(err, &te):
			return "", fmt.Errorf("supervisor: evaluation turn failed (%s): %s", te.Kind, te.Message)
		case err != nil:
			return "", fmt.Errorf("supervisor: evaluation turn: %w", err)
		}
		return res.Final, nil
	}
}

// writePersona puts the supervisor persona into root's agents/ (root made
// 0700 when missing), rewriting it only when its content differs.
func writePersona(root string) error {
	dir := filepath.Join(root, "agents")
	path := filepath.Join(dir, "AGENT_"+PersonaID+".md")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, personaFile) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, personaFile, nil)
}
