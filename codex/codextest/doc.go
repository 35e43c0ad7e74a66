// Package codextest is a fake OpenAI Responses API for offline tests of
// Codex (and of anything else that streams /v1/responses).
//
//	fake, _ := codextest.NewFakeAPI(codextest.Reply{Text: "hi", Deltas: 2})
//	defer fake.Close()
//	fake.Script(codextest.Reply{Call: &codextest.Call{Command: "ls"}}, codextest.Reply{Text: "done"})
//	fake.WriteConfig(codexHome) // $CODEX_HOME/config.toml: a provider pointing at the fake
//	// run codex with CODEX_HOME=codexHome and HOME=a temp dir …
//	reqs := fake.Requests() // what the agent sent: input items, tools, function outputs
//
// Each POST /v1/responses takes the next scripted Reply, then the default.
// A Reply streams text (response.output_text.delta events, then the
// completed message), a function call (its tool name taken from the
// request's tools list for the shell), or an HTTP error; every stream ends
// with response.completed and its usage.
package codextest
