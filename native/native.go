package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/chirality/harness/engine"
)

// Config configures a Harness. NewHarness copies it and fills the
// defaults. APIKey is required: Validate, and Prompt before any request,
// return ErrNoAPIKey when it is empty.
type Config struct {
	APIKey string // required
	// Model is a model ID or an alias (see ResolveModel); "" =
	// DefaultModel.
	Model        string
	MaxTokens    int    // default 4096
	SystemPrompt string // optional
	MaxTurns     int    // default 10: model calls per Prompt

	// Extensions beyond the specified API, for tests and compatible
	// endpoints: BaseURL replaces https://api.anthropic.com; Options are
	// passed to every request (e.g. option.WithMaxRetries(0)).
	BaseURL string
	Options []option.RequestOption
	// MaxRetries is how often a failed request is sent again (the SDK's
	// retries: no answer, 408, 409, 429, 5xx): 0 = the SDK's default of 2,
	// negative = never. A RetryHandler sees each retry. An
	// option.WithMaxRetries in Options overrides the limit, but the
	// reported maximum stays this one.
	MaxRetries int
	// UpgradeRetired sends the current model of a retired ID's family
	// instead of it (Retired: claude-3-5-sonnet-20241022 →
	// claude-sonnet-5-5). Off, every ID is sent as given.
	UpgradeRetired bool

	// clientDefaults, when set, stand for the SDK's environment defaults
	// (anthropic.DefaultClientOptions, which read the environment and
	// look for profile files at every client): the engine reads them
	// once, every turn's Harness uses them.
	clientDefaults []option.RequestOption
}

// Tool is one tool the model can call. Execute's error becomes an
// is_error tool_result, never a Go error of the loop.
type Tool interface {
	Name() string
	Description() string
	InputSchema() json.RawMessage
	Execute(ctx context.Context, input json.RawMessage) (string, error)
}

// EventHandler receives the loop's events, on the goroutine that called
// Prompt, in order. OnText gets a text block once it is complete,
// OnToolCall a tool use once its input is complete, OnToolResult each
// tool's outcome (also for a tool skipped after an earlier one failed).
type EventHandler interface {
	OnText(text string)
	OnToolCall(id string, name string, input json.RawMessage)
	OnToolResult(id string, result string, isError bool)
}

// Optional interfaces an EventHandler may also implement.
type (
	// UserHandler sees each prompt as it enters the history (the "user"
	// event; never through OnText).
	UserHandler interface{ OnUser(content string) }
	// ReasoningHandler sees each complete thinking block.
	ReasoningHandler interface{ OnReasoning(text string) }
	// DeltaHandler sees text and thinking as they stream.
	DeltaHandler interface {
		OnTextDelta(text string)
		OnReasoningDelta(text string)
	}
	// UsageHandler sees the token usage of each model call.
	UsageHandler interface{ OnUsage(model string, u Usage) }
)

// Usage is the token count of one model call.
type Usage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
}

// Errors Prompt returns, for errors.Is (and a Prompt while one runs is
// engine.ErrBusy).
var (
	ErrNoAPIKey = errors.New("native: Config.APIKey is required")
	// ErrMaxTurns: the loop made MaxTurns model calls and the model still
	// wanted tools; the history holds everything up to there.
	ErrMaxTurns = errors.New("native: max turns reached")
)

// SkippedResult is the tool_result of a tool not run because an earlier
// tool of the same response failed. (The specification says the
// remaining tools are not executed; the Messages API rejects a tool_use
// without a tool_result, so each gets this is_error result.)
const SkippedResult = "not run: an earlier tool call in this response failed, so the remaining ones were skipped"

// Harness is one conversation with the model: an append-only history that
// carries across Prompt calls, and the tools. One Prompt runs at a time (a
// concurrent call fails with engine.ErrBusy); Cancel may be called from any
// goroutine.
type Harness struct {
	cfg     Config
	tools   []Tool
	byName  map[string]Tool
	handler EventHandler
	client  anthropic.Client
	params  []anthropic.ToolUnionParam

	mu      sync.Mutex
	running bool
	cancel  context.CancelFunc
	history []anthropic.MessageParam
	// steers are messages given to the running Prompt (Steer), sent
	// before its next model call; ending is set once it has decided to
	// return, so no steer is taken that no call would carry.
	steers []string
	ending bool
}

// NewHarness returns a Harness for config, tools and handler (nil =
// silent). Tools are offered in every request, with tool choice auto.
func NewHarness(config Config, tools []Tool, handler EventHandler) *Harness {
	c := config
	if c.MaxTokens <= 0 {
		c.MaxTokens = 4096
	}
	if c.MaxTurns <= 0 {
		c.MaxTurns = 10
	}
	c.Model = ResolveModel(c.Model)
	if c.UpgradeRetired {
		c.Model = UpgradeRetired(c.Model)
	}
	if handler == nil {
		handler = silent{}
	}
	h := &Harness{cfg: c, tools: append([]Tool(nil), tools...), byName: map[string]Tool{}, handler: handler}
	var opts []option.RequestOption
	if c.clientDefaults != nil { // in their place, first
		opts = append(append(opts, option.WithoutEnvironmentDefaults()), c.clientDefaults...)
	}
	opts = append(opts, option.WithAPIKey(c.APIKey), option.WithMaxRetries(c.maxRetries()))
	if c.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(c.BaseURL))
	}
	h.client = anthropic.NewClient(append(opts, c.Options...)...)
	for _, t := range h.tools {
		h.byName[t.Name()] = t
		schema := inputSchema(t.InputSchema())
		h.params = append(h.params, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: t.Name(), Description: anthropic.String(t.Description()), InputSchema: schema,
		}})
	}
	return h
}

// schemas holds tools' input schemas as the SDK's parameters, by their
// JSON: every turn of the engine makes a Harness with the same tools,
// and parsing their schemas was most of NewHarness's CPU (about 9 % of a
// short turn's). The parameters are only read (marshalled into each
// request), so Harnesses share them. At most maxSchemas are kept; a
// schema past them is parsed each time.
var (
	schemas  sync.Map // string(schema) → anthropic.ToolInputSchemaParam
	nSchemas atomic.Int64
)

const maxSchemas = 1024

// inputSchema is raw as the SDK's parameter (the zero parameter when raw
// is not JSON, as before the sharing).
func inputSchema(raw json.RawMessage) anthropic.ToolInputSchemaParam {
	if v, ok := schemas.Load(string(raw)); ok {
		return v.(anthropic.ToolInputSchemaParam)
	}
	var schema anthropic.ToolInputSchemaParam
	if err := json.Unmarshal(raw, &schema); err != nil {
		schema = anthropic.ToolInputSchemaParam{}
	}
	if nSchemas.Load() < maxSchemas {
		if _, loaded := schemas.LoadOrStore(string(raw), schema); !loaded {
			nSchemas.Add(1)
		}
	}
	return schema
}

// Validate reports a configuration Prompt cannot run with (ErrNoAPIKey).
func (h *Harness) Validate() error {
	if h.cfg.APIKey == "" {
		return ErrNoAPIKey
	}
	return nil
}

// Model is the model ID requests use.
func (h *Harness) Model() string { return h.cfg.Model }

// Prompt adds content to the history as a user message and runs the loop:
// call the model (streaming); run the tools it asked for, in order,
// stopping at the first that fails (the rest get SkippedResult); send the
// results back; until a response asks for no tool. It returns nil then,
// ErrMaxTurns after MaxTurns calls, the API's error, or context.Canceled
// when ctx is cancelled or Cancel is called. A concurrent Prompt fails at
// once with engine.ErrBusy.
func (h *Harness) Prompt(ctx context.Context, content string) error {
	if err := h.Validate(); err != nil {
		return err
	}
	h.mu.Lock()
	if h.running {
		h.mu.Unlock()
		return errPromptRunning
	}
	ctx, cancel := context.WithCancel(ctx)
	h.running, h.cancel, h.ending = true, cancel, false
	h.mu.Unlock()
	defer func() {
		cancel()
		h.mu.Lock()
		h.running, h.cancel, h.ending, h.steers = false, nil, true, nil
		h.mu.Unlock()
	}()

	h.appendUser(anthropic.NewTextBlock(content))
	if u, ok := h.handler.(UserHandler); ok {
		u.OnUser(content)
	}
	for turn := 0; ; turn++ {
		if turn >= h.cfg.MaxTurns {
			return fmt.Errorf("%w (%d model calls)", ErrMaxTurns, h.cfg.MaxTurns)
		}
		h.takeSteers()
		msg, err := h.call(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return context.Canceled
			}
			return err
		}
		h.appendMessage(msg.ToParam())
		var uses []anthropic.ContentBlockUnion
		for _, b := range msg.Content {
			if b.Type == "tool_use" {
				uses = append(uses, b)
			}
		}
		if len(uses) == 0 {
			if h.steered() {
				continue // the model answers what was steered in meanwhile
			}
			return nil
		}
		h.appendUser(h.runTools(ctx, uses)...)
		if ctx.Err() != nil {
			return context.Canceled
		}
	}
}

// errPromptRunning is what a Prompt (or SetHistory) meets while a
// Prompt runs.
var errPromptRunning = fmt.Errorf("native: a prompt is already running: %w", engine.ErrBusy)

// Steer gives the running Prompt content as more of the user's words:
// it goes to the model with the next call (after the results of the
// tools running now), and a Prompt whose model has just answered calls
// it again rather than returning. It fails with engine.ErrNotRunning when
// no Prompt runs or the running one is returning.
func (h *Harness) Steer(content string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running || h.ending {
		return fmt.Errorf("native: no prompt is running: %w", engine.ErrNotRunning)
	}
	h.steers = append(h.steers, content)
	return nil
}

// steered reports whether steers wait for the next call; when none do,
// the Prompt is ending from now on.
func (h *Harness) steered() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.steers) == 0 {
		h.ending = true
	}
	return len(h.steers) > 0
}

// takeSteers adds the waiting steers to the history as user text.
func (h *Harness) takeSteers() {
	h.mu.Lock()
	steers := h.steers
	h.steers = nil
	h.mu.Unlock()
	for _, s := range steers {
		h.appendUser(anthropic.NewTextBlock(s))
		if u, ok := h.handler.(UserHandler); ok {
			u.OnUser(s)
		}
	}
}

// Cancel stops the running Prompt (it returns context.Canceled). A no-op
// when idle. Safe from any goroutine.
func (h *Harness) Cancel() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		h.cancel()
	}
}

// call makes one streaming model call and reports its blocks as they
// complete.
func (h *Harness) call(ctx context.Context) (*anthropic.Message, error) {
	params := anthropic.MessageNewParams{
		Model:      h.cfg.Model,
		MaxTokens:  int64(h.cfg.MaxTokens),
		Messages:   h.History(),
		Tools:      h.params,
		ToolChoice: anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}},
	}
	if len(h.params) == 0 {
		params.ToolChoice = anthropic.ToolChoiceUnionParam{}
	}
	if h.cfg.SystemPrompt != "" {
		params.System = []anthropic.TextBlockParam{{Text: h.cfg.SystemPrompt}}
	}
	stream := h.client.Messages.NewStreaming(ctx, params, h.observeRetries())
	defer stream.Close()
	delta, _ := h.handler.(DeltaHandler)
	msg := &anthropic.Message{}
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, err
		}
		switch ev.Type {
		case "content_block_delta":
			if delta != nil {
				switch ev.Delta.Type {
				case "text_delta":
					delta.OnTextDelta(ev.Delta.Text)
				case "thinking_delta":
					delta.OnReasoningDelta(ev.Delta.Thinking)
				}
			}
		case "content_block_stop":
			if int(ev.Index) < len(msg.Content) {
				h.blockDone(msg.Content[ev.Index])
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if msg.ID == "" && len(msg.Content) == 0 {
		return nil, errors.New("native: the stream ended without a message")
	}
	if u, ok := h.handler.(UsageHandler); ok {
		u.OnUsage(string(msg.Model), Usage{InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens,
			CacheReadTokens: msg.Usage.CacheReadInputTokens, CacheWriteTokens: msg.Usage.CacheCreationInputTokens})
	}
	return msg, nil
}

// blockDone reports a complete content block.
func (h *Harness) blockDone(b anthropic.ContentBlockUnion) {
	switch b.Type {
	case "text":
		h.handler.OnText(b.Text)
	case "tool_use":
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		h.handler.OnToolCall(b.ID, b.Name, input)
	case "thinking":
		if r, ok := h.handler.(ReasoningHandler); ok {
			r.OnReasoning(b.Thinking)
		}
	}
}

// runTools executes uses in order, fail-fast, and returns their results.
// A cancelled context stops it too; the tools not run then get an
// is_error result, so the history stays valid for the next Prompt.
func (h *Harness) runTools(ctx context.Context, uses []anthropic.ContentBlockUnion) []anthropic.ContentBlockParamUnion {
	results := make([]anthropic.ContentBlockParamUnion, 0, len(uses))
	failed := false
	for _, u := range uses {
		var out string
		var isErr bool
		switch {
		case ctx.Err() != nil:
			out, isErr = "not run: the prompt was cancelled", true
		case failed:
			out, isErr = SkippedResult, true
		default:
			out, isErr = h.execute(ctx, u)
			failed = isErr
		}
		h.handler.OnToolResult(u.ID, out, isErr)
		results = append(results, anthropic.NewToolResultBlock(u.ID, out, isErr))
	}
	return results
}

func (h *Harness) execute(ctx context.Context, u anthropic.ContentBlockUnion) (out string, isErr bool) {
	t := h.byName[u.Name]
	if t == nil {
		return fmt.Sprintf("unknown tool %q", u.Name), true
	}
	defer func() {
		if r := recover(); r != nil {
			out, isErr = fmt.Sprintf("tool %s failed: %v", u.Name, r), true
		}
	}()
	input := u.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	res, err := t.Execute(context.WithValue(ctx, toolUseIDKey{}, u.ID), input)
	if err != nil {
		if res == "" {
			res = err.Error()
		}
		return res, true
	}
	return res, false
}

// appendUser adds a user message, or merges the blocks into the last one
// when it is a user message already (a prompt cancelled before the model
// answered leaves one), so roles keep alternating.
func (h *Harness) appendUser(blocks ...anthropic.ContentBlockParamUnion) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.history); n > 0 && h.history[n-1].Role == anthropic.MessageParamRoleUser {
		h.history[n-1].Content = append(h.history[n-1].Content, blocks...)
		return
	}
	h.history = append(h.history, anthropic.NewUserMessage(blocks...))
}

func (h *Harness) appendMessage(m anthropic.MessageParam) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.history = append(h.history, m)
}

// History returns a copy of the conversation so far.
func (h *Harness) History() []anthropic.MessageParam {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]anthropic.MessageParam(nil), h.history...)
}

// MarshalHistory is the history as the Messages API's JSON (what the
// native engine persists next to a session).
func (h *Harness) MarshalHistory() ([]byte, error) {
	return json.Marshal(h.History())
}

// LoadHistory replaces the history with data from MarshalHistory. It
// fails while a Prompt runs.
func (h *Harness) LoadHistory(data []byte) error {
	var hist []anthropic.MessageParam
	if err := json.Unmarshal(data, &hist); err != nil {
		return fmt.Errorf("native: history: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running {
		return errPromptRunning
	}
	h.history = hist
	return nil
}

type silent struct{}

func (silent) OnText(string)                              {}
func (silent) OnToolCall(string, string, json.RawMessage) {}
func (silent) OnToolResult(string, string, bool)          {}

// trimModel lower-cases and trims a model name.
func trimModel(m string) string { return strings.ToLower(strings.TrimSpace(m)) }
