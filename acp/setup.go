package acp

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// The requests the client sends, as the spec (protocol version 1) names
// their fields: nothing else is ever sent.

type initializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities clientCapabilities `json:"clientCapabilities"`
	ClientInfo         implementation     `json:"clientInfo"`
}

// clientCapabilities: the client serves neither fs nor terminal requests.
type clientCapabilities struct {
	Fs       fsCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

type fsCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type newSessionParams struct {
	Cwd        string         `json:"cwd"`
	McpServers []any          `json:"mcpServers"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

type loadSessionParams struct {
	SessionID  string         `json:"sessionId"`
	Cwd        string         `json:"cwd"`
	McpServers []any          `json:"mcpServers"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// forkSessionParams is session/fork's (unstable in ACP: only sent to an
// agent whose initialize answer advertises sessionCapabilities.fork).
type forkSessionParams struct {
	SessionID  string         `json:"sessionId"`
	Cwd        string         `json:"cwd"`
	McpServers []any          `json:"mcpServers"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

type promptParams struct {
	SessionID string      `json:"sessionId"`
	Prompt    []textBlock `json:"prompt"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type cancelParams struct {
	SessionID string `json:"sessionId"`
}

type setModeParams struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

type setConfigParams struct {
	SessionID string `json:"sessionId"`
	ConfigID  string `json:"configId"`
	Value     string `json:"value"`
}

// initializeResult, sessionResult and promptResult are decoded leniently
// (only what the engine uses).
type initializeResult struct {
	ProtocolVersion   int `json:"protocolVersion"`
	AgentCapabilities struct {
		LoadSession         bool `json:"loadSession"`
		SessionCapabilities struct {
			// Fork is {} when the agent offers session/fork (null or
			// absent when not).
			Fork json.RawMessage `json:"fork"`
		} `json:"sessionCapabilities"`
		MCP sdk.McpCapabilities `json:"mcpCapabilities"`
	} `json:"agentCapabilities"`
	AgentInfo *implementation `json:"agentInfo"`
	// Meta.Steering.Supported: the agent takes _session/steering
	// (claude-agent-acp's steering extension).
	Meta struct {
		Steering struct {
			Supported bool `json:"supported"`
		} `json:"steering"`
	} `json:"_meta"`
}

// forks reports whether the answer advertises session/fork.
func (r *initializeResult) forks() bool {
	f := r.AgentCapabilities.SessionCapabilities.Fork
	return len(f) > 0 && string(f) != "null"
}

type sessionResult struct {
	SessionID string `json:"sessionId"`
	sessionSetup
}

// sessionSetup is what session/new and session/load tell about modes and
// configuration options.
type sessionSetup struct {
	Modes *struct {
		CurrentModeID  string `json:"currentModeId"`
		AvailableModes []struct {
			ID string `json:"id"`
		} `json:"availableModes"`
	} `json:"modes"`
	ConfigOptions []configOption `json:"configOptions"`
}

type configOption struct {
	ID           string          `json:"id"`
	Category     string          `json:"category"`
	Type         string          `json:"type"`
	CurrentValue json.RawMessage `json:"currentValue"`
	Options      json.RawMessage `json:"options"`
}

type promptResult struct {
	StopReason string          `json:"stopReason"`
	Usage      json.RawMessage `json:"usage"`
}

// call sends a request and decodes its result into out. It never cancels
// a request ($/cancel_request is not in protocol version 1): a call ends
// with its answer or with the connection.
func call(conn *sdk.Connection, method string, params, out any) error {
	res, err := sdk.SendRequest[json.RawMessage](conn, context.Background(), method, params)
	if err != nil {
		return err
	}
	if out != nil && len(res) > 0 {
		_ = json.Unmarshal(res, out)
	}
	return nil
}

// modeFor picks the agent's session mode for a permission mode: the mode
// of the same id (claude-agent-acp: default, acceptEdits, plan,
// bypassPermissions) or whose id ends in "#"+mode (Copilot's URL ids);
// dontAsk and "" pick "default" when offered, so that what the agent
// gates comes to the client and its rules. "" when none fits (the agent
// keeps its mode).
func (s *sessionSetup) modeFor(permissionMode string) string {
	if s.Modes == nil {
		return ""
	}
	want := permissionMode
	if want == "" || want == "dontAsk" {
		want = "default"
	}
	for _, m := range s.Modes.AvailableModes {
		if m.ID == want || strings.HasSuffix(m.ID, "#"+want) {
			return m.ID
		}
	}
	return ""
}

// modeOption is modeFor for agents that offer their modes as a
// configuration option of category "mode" only (OpenCode): the option's
// id and the value to set, "" when none fits or it is already current.
func (s *sessionSetup) modeOption(permissionMode string) (id, value string) {
	if s.Modes != nil {
		return "", ""
	}
	want := permissionMode
	if want == "" || want == "dontAsk" {
		want = "default"
	}
	for _, o := range s.ConfigOptions {
		if o.Category != "mode" || (o.Type != "" && o.Type != "select") {
			continue
		}
		var cur string
		_ = json.Unmarshal(o.CurrentValue, &cur)
		for v := range optionValues(o.Options) {
			if (v == want || strings.HasSuffix(v, "#"+want)) && v != cur {
				return o.ID, v
			}
		}
	}
	return "", ""
}

func (s *sessionSetup) currentMode() string {
	if s.Modes == nil {
		return ""
	}
	return s.Modes.CurrentModeID
}

// modelOption finds the select option of category "model" and whether
// it offers value.
func (s *sessionSetup) modelOption(value string) (id string, current string, offered bool) {
	for _, o := range s.ConfigOptions {
		if o.Category != "model" || (o.Type != "" && o.Type != "select") {
			continue
		}
		_ = json.Unmarshal(o.CurrentValue, &current)
		return o.ID, current, value != "" && optionValues(o.Options)[value]
	}
	return "", "", false
}

// setCurrent records value as option id's current value (once the agent
// took it).
func (s *sessionSetup) setCurrent(id, value string) {
	for i := range s.ConfigOptions {
		if s.ConfigOptions[i].ID == id {
			s.ConfigOptions[i].CurrentValue, _ = json.Marshal(value)
		}
	}
}

// optionValues collects the values of a select's options, flat or
// grouped.
func optionValues(raw json.RawMessage) map[string]bool {
	var items []struct {
		Value   string          `json:"value"`
		Options json.RawMessage `json:"options"`
	}
	out := map[string]bool{}
	if json.Unmarshal(raw, &items) != nil {
		return out
	}
	for _, it := range items {
		if it.Value != "" {
			out[it.Value] = true
		}
		if len(it.Options) > 0 {
			for v := range optionValues(it.Options) {
				out[v] = true
			}
		}
	}
	return out
}

// Preamble is how a persona prompt reaches an ACP agent, which has no
// system prompt field: the first text block of the session's first
// prompt, before the user's message (a block of its own).
func Preamble(systemPrompt string) string {
	return "Instructions for this whole session (the persona's system prompt, sent by the harness; follow them as you would a system prompt):\n\n" + systemPrompt
}

// SwitchPreamble is how a persona switched between turns reaches an ACP
// agent (Request.PromptChanged on a session that had a first prompt): a
// first text block of the next prompt that replaces the earlier
// instructions.
func SwitchPreamble(systemPrompt string) string {
	return "The instructions for this session have changed (the persona's new system prompt, sent by the harness). From now on, follow these instead of the earlier ones, as you would a system prompt:\n\n" + systemPrompt
}
