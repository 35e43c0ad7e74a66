package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/chirality/harness"
	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
	"github.com/chirality/harness/notify"
	"github.com/chirality/harness/session"
	"github.com/chirality/harness/trust"
	"github.com/chirality/harness/usage"
	"github.com/chirality/harness/worktree"
)

//go:generate go run ./internal/genapi

// route is one entry of routeTable.
type route struct {
	Method string
	Path   string // under APIPrefix, gorilla/mux form: /session/{id}
	Serve  func(*Gateway, http.ResponseWriter, *http.Request)
	Op     operation
}

// operation is what the document says of a route.
type operation struct {
	ID, Summary, Description string
	Params                   []param
	// Body is the request body's Go type (nil: none); BodyOptional when
	// the route takes none too.
	Body         reflect.Type
	BodyOptional bool
	// Replies are the answers with their own shape; Errors the statuses
	// answered with the {"error": "…"} body.
	Replies []reply
	Errors  []int
}

// param is a path, query or header parameter.
type param struct {
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Required    bool    `json:"required"`
	Description string  `json:"description,omitempty"`
	Schema      *schema `json:"schema"`
}

// reply is one answer of a route: a JSON Body (its Go type), an event
// Stream, nothing, or Ref, a shared response of the document.
type reply struct {
	Status      int
	Description string
	Body        reflect.Type
	Stream      bool
	Ref         string
}

var sessionIDParam = param{Name: "id", In: "path", Required: true, Description: "harness session ID (UUIDv4)",
	Schema: &schema{Type: "string", Format: "uuid"}}

const streamDescription = "text/event-stream: each event as `id: <seq>` and `data: <Event JSON>`; `: heartbeat` comments every 15 s. Only 004's UIEvent types unless ?events= asks for extension types."

var mcpReplies = []reply{
	{Status: 200, Description: "MCP response (application/json or text/event-stream)"},
	{Status: 400, Ref: "Error"}, {Status: 401, Ref: "Error"}, {Status: 403, Ref: "Error"}, {Status: 404, Ref: "Error"},
	{Status: 405, Ref: "Error"}, {Status: 408, Ref: "Error"}, {Status: 413, Ref: "Error"}, {Status: 415, Ref: "Error"},
}

func ptr[T any](v T) *T { return &v }

// component is a named schema of the document: a Go type, or (Enum) a
// string type with these values.
type component struct {
	Name string
	Type reflect.Type
	// Wire is the type Type's MarshalJSON writes, described in its stead;
	// Also are other Go types of the same shape, named the same.
	Wire        reflect.Type
	Also        []reflect.Type
	Enum        []string
	Description string
	Closed      bool // additionalProperties: false
	MinProps    int64
	Request     bool // read from clients: fields optional unless tagged required
}

// components are the document's named schemas, in order; a field or body
// of one of these Go types refers to it by name. Event is made apart
// (eventSchema): its wire form is the flat union of its payloads.
var components = []component{
	{Name: "Error", Type: reflect.TypeFor[errorJSON]()},
	{Name: "Mode", Enum: []string{"workbench", "pipeline", "direct"}},
	{Name: "CreateSessionRequest", Type: reflect.TypeFor[createRequest](), Closed: true, Request: true},
	{Name: "TurnRequest", Type: reflect.TypeFor[turnRequest](), Closed: true, Request: true},
	{Name: "InterruptRequest", Type: reflect.TypeFor[interruptRequest](), Closed: true, Request: true},
	{Name: "MCPServerStatus", Type: reflect.TypeFor[event.MCPServerStatus]()},
	{Name: "Session", Type: reflect.TypeFor[session.Session](), Wire: reflect.TypeFor[session.Wire]()},
	{Name: "SessionEnvelope", Type: reflect.TypeFor[envelopeJSON]()},
	{Name: "SessionSummary", Type: reflect.TypeFor[harness.SessionSummary]()},
	{Name: "Persona", Type: reflect.TypeFor[harness.PersonaInfo]()},
	{Name: "Health", Type: reflect.TypeFor[harness.Health]()},
	{Name: "UsageReport", Type: reflect.TypeFor[usage.Report]()},
	{Name: "UsageTotals", Type: reflect.TypeFor[usage.Totals]()},
	{Name: "UsageGroup", Type: reflect.TypeFor[usage.Group]()},
	{Name: "Budget", Type: reflect.TypeFor[harness.Budget]()},
	{Name: "SteerRequest", Type: reflect.TypeFor[steerRequest](), Closed: true, Request: true, Description: "A message for the running turn"},
	{Name: "SteerAnswer", Type: reflect.TypeFor[steerAnswer]()},
	{Name: "PlanDecisionRequest", Type: reflect.TypeFor[planDecisionRequest](), Closed: true, Request: true, Description: "A person's decision on a plan"},
	{Name: "PlanDecisionAnswer", Type: reflect.TypeFor[planDecisionAnswer]()},
	{Name: "Notification", Type: reflect.TypeFor[notify.Notification](), Closed: true,
		Description: "What `harness serve --notify-webhook URL` POSTs (package notify) when a session needs a person or a turn ends: `Content-Type: application/json`, `X-Harness-Event: <type>`, and, when `HARNESS_NOTIFY_SECRET` is set in the server's environment, `X-Harness-Signature: sha256=<hex>`, the HMAC-SHA256 of the exact body bytes under that secret (recompute it over the bytes received and compare in constant time). Network errors, 408, 429 and 5xx are retried with exponential backoff (0.5 s doubling, at most 5 tries); any 2xx is delivered; other statuses are final. Each receiver has a bounded queue (256): when full, the oldest notification is dropped. Every field goes through the secrets scrubber. `--notify-ntfy URL` sends the same notifications to an ntfy topic as a text body (title and project) with `Title: harness: <type>`, `Click: <link>` and, when a person is needed, `Priority: high`."},
	{Name: "Event", Description: eventDescription},
	{Name: "KnownEvent", Description: "An event of a type this version knows, each type with its own fields (the per-type schemas below)."},
	{Name: "SessionErrorKind", Enum: errorKinds()},
	{Name: "ApprovalRequested", Type: reflect.TypeFor[event.ApprovalRequested]()},
	{Name: "ApprovalRequest", Type: reflect.TypeFor[approvalRequest](), Closed: true, Request: true},
	{Name: "PatchSessionRequest", Type: reflect.TypeFor[patchRequest](), Closed: true, Request: true, MinProps: 1,
		Description: "What the session's next turns run with; a field left out is kept. A change made while a turn runs applies from the next turn. Where an engine cannot take a change inside one conversation the harness does the nearest honest thing (see the README: a new persona's instructions on a resumed Claude Code conversation come with the next message)."},
	{Name: "EngineStatus", Type: reflect.TypeFor[engine.Status]()},
	{Name: "Roots", Type: reflect.TypeFor[rootsJSON]()},
	{Name: "ForkRequest", Type: reflect.TypeFor[forkRequest](), Closed: true, Request: true},
	{Name: "TurnInfo", Type: reflect.TypeFor[turnJSON]()},
	{Name: "FileChange", Type: reflect.TypeFor[changeJSON]()},
	{Name: "RewindPreview", Type: reflect.TypeFor[previewJSON]()},
	{Name: "RewindRequest", Type: reflect.TypeFor[rewindRequest](), Closed: true, Request: true},
	{Name: "RewindResult", Type: reflect.TypeFor[rewindJSON]()},
	{Name: "TrustChange", Type: reflect.TypeFor[event.TrustChange](), Also: []reflect.Type{reflect.TypeFor[trust.Change]()}},
	{Name: "TrustItem", Type: reflect.TypeFor[trust.Item]()},
	{Name: "TrustList", Type: reflect.TypeFor[trustListJSON]()},
	{Name: "TrustAccepted", Type: reflect.TypeFor[trustAcceptedJSON]()},
	{Name: "TrustRequest", Type: reflect.TypeFor[trustRequest](), Request: true},
	{Name: "WorktreeFileChange", Type: reflect.TypeFor[worktree.FileChange]()},
	{Name: "SessionDiff", Type: reflect.TypeFor[harness.Diff]()},
	{Name: "MergeRequest", Type: reflect.TypeFor[mergeRequest](), Closed: true, Request: true},
	{Name: "MergeResult", Type: reflect.TypeFor[harness.MergeResult]()},
	{Name: "MergeConflict", Type: reflect.TypeFor[mergeConflictJSON]()},
	{Name: "QueuedPrompt", Type: reflect.TypeFor[harness.QueuedPrompt](), Closed: true},
	{Name: "Queue", Type: reflect.TypeFor[queueList](), Closed: true, Description: "A session's queued prompts, in the order they run"},
	{Name: "QueuedAnswer", Type: reflect.TypeFor[queueAnswer](), Closed: true},
	{Name: "QueueEditRequest", Type: reflect.TypeFor[queueEditRequest](), Closed: true, Request: true},
}

// sharedReplies are the document's components.responses.
var sharedReplies = map[string]string{
	"Error":       "An error",
	"Unsupported": "The session cannot do this: its engine does not support the control (GET /engines says which controls each engine has), or its project is too large for file checkpoints (more files or bytes than the server's limits; the message says which and how to raise them). A turn with no file snapshot is 404 (no such snapshot).",
}

// GenerateOpenAPI makes the OpenAPI document of the gateway from its route
// table and the Go types of its bodies: what go generate writes to
// openapi.json (and the gateway serves).
func GenerateOpenAPI() ([]byte, error) {
	rf := &reflector{names: map[reflect.Type]string{}}
	for _, c := range components {
		for _, t := range append([]reflect.Type{c.Type, c.Wire}, c.Also...) {
			if t != nil {
				rf.names[t] = c.Name
			}
		}
	}
	schemas := map[string]*schema{}
	for _, c := range components {
		s, err := componentSchema(rf, c)
		if err != nil {
			return nil, err
		}
		schemas[c.Name] = s
	}
	for _, p := range eventPayloads {
		s, err := typedEventSchema(rf, p.Type, p.Payload)
		if err != nil {
			return nil, fmt.Errorf("event %s: %w", p.Type, err)
		}
		schemas[eventName(p.Type)] = s
	}
	paths := map[string]map[string]any{}
	for _, rt := range routeTable {
		op, err := operationDoc(rf, rt.Op)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", rt.Method, rt.Path, err)
		}
		p := APIPrefix + rt.Path
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(rt.Method)] = op
	}
	responses := map[string]any{}
	for name, desc := range sharedReplies {
		responses[name] = map[string]any{"description": desc, "content": jsonContent(&schema{Ref: "#/components/schemas/Error"})}
	}
	doc := map[string]any{
		"openapi":  "3.1.0",
		"info":     map[string]any{"title": "harness gateway", "version": "1.0.0", "description": apiDescription},
		"servers":  []any{map[string]any{"url": "http://127.0.0.1:8787"}},
		"security": []any{map[string]any{}, map[string]any{"bearer": []string{}}},
		"paths":    paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
			"responses":       responses,
			"schemas":         schemas,
		},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func componentSchema(rf *reflector, c component) (*schema, error) {
	var s *schema
	var err error
	switch {
	case c.Name == "Event":
		s, err = eventSchema(rf)
	case c.Name == "KnownEvent":
		s = &schema{Discriminator: &discriminator{PropertyName: "type"}}
		for _, p := range eventPayloads {
			s.OneOf = append(s.OneOf, &schema{Ref: "#/components/schemas/" + eventName(p.Type)})
		}
	case c.Type == nil:
		s = &schema{Type: "string", Enum: c.Enum}
	case c.Wire != nil:
		s, err = rf.inline(c.Wire, c.Request)
	default:
		s, err = rf.inline(c.Type, c.Request)
	}
	if err != nil {
		return nil, fmt.Errorf("component %s: %w", c.Name, err)
	}
	if c.Description != "" {
		s.Description = c.Description
	}
	if c.Closed {
		s.AdditionalProperties = ptr(false)
	}
	if c.MinProps > 0 {
		s.MinProperties = ptr(c.MinProps)
	}
	return s, nil
}

func jsonContent(s *schema) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": s}}
}

func operationDoc(rf *reflector, o operation) (map[string]any, error) {
	op := map[string]any{"operationId": o.ID, "summary": o.Summary}
	if o.Description != "" {
		op["description"] = o.Description
	}
	if len(o.Params) > 0 {
		op["parameters"] = o.Params
	}
	if o.Body != nil {
		s, err := rf.schemaOf(o.Body, true)
		if err != nil {
			return nil, err
		}
		op["requestBody"] = map[string]any{"required": !o.BodyOptional, "content": jsonContent(s)}
	}
	responses := map[string]any{}
	for _, r := range o.Replies {
		code := strconv.Itoa(r.Status)
		switch {
		case r.Ref != "":
			responses[code] = map[string]any{"$ref": "#/components/responses/" + r.Ref}
		case r.Stream:
			responses[code] = map[string]any{"description": r.Description,
				"content": map[string]any{"text/event-stream": map[string]any{"schema": &schema{Ref: "#/components/schemas/Event"}}}}
		case r.Body != nil:
			s, err := rf.schemaOf(r.Body, false)
			if err != nil {
				return nil, err
			}
			responses[code] = map[string]any{"description": r.Description, "content": jsonContent(s)}
		default:
			responses[code] = map[string]any{"description": r.Description}
		}
	}
	for _, st := range o.Errors {
		responses[strconv.Itoa(st)] = map[string]any{"$ref": "#/components/responses/Error"}
	}
	op["responses"] = responses
	return op, nil
}

// eventSchema is the flat wire form of event.Event (its MarshalJSON): the
// head every event has (eventHead), then the fields of each payload (the
// pointer fields of event.Event), merged; type takes the values of
// event.Types.
func eventSchema(rf *reflector) (*schema, error) {
	s, err := rf.inline(reflect.TypeFor[eventHead](), false)
	if err != nil {
		return nil, err
	}
	types := make([]string, 0, len(event.Types))
	for _, t := range event.Types {
		types = append(types, string(t))
	}
	s.Properties.m["type"].Enum = types
	et := reflect.TypeFor[event.Event]()
	for i := range et.NumField() {
		f := et.Field(i)
		if f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		p, err := rf.inline(f.Type.Elem(), false)
		if err != nil {
			return nil, err
		}
		merge(s, p)
	}
	return s, nil
}

// eventHead is what every event's wire form has besides its payload.
type eventHead struct {
	Seq             int64  `json:"seq" oa:"min=1"`
	Type            string `json:"type"`
	SessionID       string `json:"sessionId"`
	ParentToolUseID string `json:"parentToolUseId,omitempty"`
	Text            string `json:"text,omitempty" doc:"user:message, chat:delta, thinking:delta, chat:complete"`
	Time            int64  `json:"timestamp,omitempty" oa:"format=int64" doc:"when the event happened (Unix ms), stamped once as it is stored"`
}

// enumTypes are the Go string types whose values the document lists.
var enumTypes = map[reflect.Type]func() []string{
	reflect.TypeFor[event.ErrorKind](): errorKinds,
}

func errorKinds() []string {
	out := make([]string, 0, len(event.ErrorKinds))
	for _, k := range event.ErrorKinds {
		out = append(out, string(k))
	}
	return out
}

// eventDescription is the Event schema's description.
const eventDescription = "A UI event: the discriminated union on `type`. Every event has `seq` (its place in the session's event log, also the SSE id) and `sessionId` (the harness session). A turn ends with exactly one process:exit. A session:error of kind resume_not_found is followed by a fresh session:init in the same turn. Every turn starts with user:message, or, for a turn run from the session's queue, with prompt:dequeued (reason started) just before it. prompt:queued (promptId, position, message) says a prompt was queued behind the running turn; prompt:dequeued (promptId, reason: started, deleted, or failed with error) says it left the queue; neither ends anything. approval:requested asks a person whether a tool may run (answer with POST /approval); approval:resolved says how it was decided. session:retry says the engine is retrying the model API after a failed request (attempt of maxRetries, in delayMs, error; apiErrorStatus when the API answered); it may come any number of times and ends nothing. session:forked is the first event of a fork's own after the records copied from its source (from: the source session, atSeq: where it was cut, 0 = all of it); session:rewound says a rewind happened (toTurn, files: the paths restored, conversation: whether the conversation was cut); both stand outside any turn. session:complete may carry checkpoint, the engine's opaque position in its conversation. trust:required says what a turn does not honour until a person trusts it (after user:message, before session:init; it ends nothing): kind persona (path: the persona file, name: its ID, hash, changes: each widened grant with what was trusted and what the file says now; the turn runs with the trusted grants), mcp (name: a project .mcp.json server, hash: its definition's; not started, and session:init lists it with status untrusted) or session (path: the session file, rules and changes: what it says that no person gave the session; not honoured); message says it in a sentence. A person trusts with POST /trust. An event stream sends 004's UIEvent types (chat:delta, chat:complete, tool:start, tool:result, session:init, session:complete, session:error, process:exit) and the other types, extensions, only when the request asks for them with ?events=."

// eventPayloads is each event type with its payload's Go type (the
// pointer field of event.Event it fills; nil for the events that carry
// text), in the order of event.Types. A new event type is one entry here.
var eventPayloads = []struct {
	Type    event.Type
	Payload reflect.Type
}{
	{event.TypeUserMessage, nil},
	{event.TypeSessionInit, reflect.TypeFor[event.SessionInit]()},
	{event.TypeChatDelta, nil},
	{event.TypeThinkingDelta, nil},
	{event.TypeChatComplete, nil},
	{event.TypeToolStart, reflect.TypeFor[event.ToolStart]()},
	{event.TypeToolResult, reflect.TypeFor[event.ToolResult]()},
	{event.TypeSessionComplete, reflect.TypeFor[event.SessionComplete]()},
	{event.TypeSessionError, reflect.TypeFor[event.SessionError]()},
	{event.TypeSessionRetry, reflect.TypeFor[event.SessionRetry]()},
	{event.TypeProcessExit, reflect.TypeFor[event.ProcessExit]()},
	{event.TypeApprovalRequested, reflect.TypeFor[event.ApprovalRequested]()},
	{event.TypeApprovalResolved, reflect.TypeFor[event.ApprovalResolved]()},
	{event.TypeSessionForked, reflect.TypeFor[event.SessionForked]()},
	{event.TypeSessionRewound, reflect.TypeFor[event.SessionRewound]()},
	{event.TypeTrustRequired, reflect.TypeFor[event.TrustRequired]()},
	{event.TypePromptQueued, reflect.TypeFor[event.PromptQueued]()},
	{event.TypePromptDequeued, reflect.TypeFor[event.PromptDequeued]()},
	{event.TypePlanReady, reflect.TypeFor[event.PlanReady]()},
	{event.TypePlanResolved, reflect.TypeFor[event.PlanResolved]()},
	{event.TypeUsageUpdate, reflect.TypeFor[event.UsageUpdate]()},
	{event.TypeRateLimit, reflect.TypeFor[event.RateLimit]()},
}

// eventName is the component name of events of type t: "chat:delta" →
// ChatDeltaEvent.
func eventName(t event.Type) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(string(t), func(r rune) bool { return r == ':' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "Event"
}

// typedEventSchema is the schema of one event type: the head (text
// required for the text events, absent for the others), type the one
// value, the payload's fields with their own required list.
func typedEventSchema(rf *reflector, t event.Type, payload reflect.Type) (*schema, error) {
	s, err := rf.inline(reflect.TypeFor[eventHead](), false)
	if err != nil {
		return nil, err
	}
	s.Properties.set("type", &schema{Type: "string", Enum: []string{string(t)}})
	s.Properties.m["seq"].Description = "its place in the session's event log (also the SSE id); absent on an event not yet stored"
	s.Required = []string{"type", "sessionId"}
	if payload == nil {
		s.Required = append(s.Required, "text")
		return s, nil
	}
	s.Properties.remove("text")
	p, err := rf.inline(payload, false)
	if err != nil {
		return nil, err
	}
	for _, name := range p.Properties.keys {
		s.Properties.set(name, p.Properties.m[name])
	}
	s.Required = append(s.Required, p.Required...)
	return s, nil
}
