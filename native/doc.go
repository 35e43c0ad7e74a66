// Package native is the harness's own agent loop on the Anthropic Messages
// API (github.com/anthropics/anthropic-sdk-go), with no CLI in between.
//
//	h := native.NewHarness(native.Config{APIKey: key}, []native.Tool{…}, handler)
//	err := h.Prompt(ctx, "What is in this directory?")
//	// call the model (streaming) → OnText / OnToolCall per completed block
//	// → run the tools in order, fail-fast → OnToolResult each → send the
//	// results → … until a response asks for no tool, MaxTurns, an API
//	// error, or Cancel (context.Canceled).
//
// The history is append-only and carries across Prompt calls; one Prompt
// runs at a time. Tool errors reach the model as is_error results, never
// as Go errors. One deviation from the letter of the specification: when
// a tool fails, the tools after it in the same response are not run, but
// each still gets an is_error result (SkippedResult), because the Messages
// API rejects a tool_use without its tool_result.
//
// A failed request is retried by the SDK (Config.MaxRetries); a middleware
// sees every attempt and tells a RetryHandler of each retry before its
// back-off, which Engine emits as session:retry.
//
// Engine puts the loop behind the harness's engine seam (package engine):
// it emits the same UI events as the Claude Code driver, keeps each
// conversation's history in the session's state directory, and runs the
// tools of package tool, confined to the project. Request.Effort is
// ignored: the loop sends the Messages API no thinking parameter. It
// forks and cuts conversations (engine.Controller): session:complete's
// Checkpoint is the history's length after the turn; Request.ResumeAt
// keeps that many messages, and Request.Fork saves the result as a new
// conversation, leaving the original's file as it was.
package native
