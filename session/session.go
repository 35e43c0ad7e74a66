package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/chirality/harness/engine"
	"github.com/chirality/harness/event"
)

// SchemaVersion is the version written in session files. Files with another
// version are reported as corrupt (ErrCorrupt) and skipped.
const SchemaVersion = 1

// Sentinel errors; test with errors.Is. They reach callers wrapped in an
// *Error.
var (
	ErrNotFound  = engine.NewError(engine.ErrNotFound, "not found")
	ErrInvalidID = engine.NewError(engine.ErrInvalid, "invalid id (want a UUIDv4 such as 0b8f3a2e-1c4d-4e5f-8a9b-0c1d2e3f4a5b)")
	ErrCorrupt   = errors.New("corrupt or foreign file")
	// ErrClosed is returned by an EventLog after Close (the store is
	// shutting down: it is engine.ErrClosed).
	ErrClosed = engine.NewError(engine.ErrClosed, "event log closed")
)

// Error is a failure concerning one session: its ID, the file involved
// (empty when none) and the cause, which may wrap a sentinel.
type Error struct {
	ID   string
	Path string
	Err  error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "session " + e.ID + ": " + e.Err.Error()
	}
	return "session " + e.ID + ": " + e.Path + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Session is the stored state of one harness session. Its JSON form is
//
//	{"schemaVersion":1,"id":"…","createdAt":"2025-01-02T03:04:05.123456789Z",
//	 "updatedAt":"…","projectRoot":"/abs/path","persona":null,
//	 "mode":"workbench","claudeSessionId":null,"engine":"claude-code",
//	 "title":"…","rules":["Bash(touch marker)"],"costUsd":0.0123}
//
// with times in RFC 3339 (UTC, nanoseconds) and persona and claudeSessionId
// null when empty (claudeSessionId is the engine's conversation id, for
// every engine: files written before there was one name have it as
// engineSessionId for engines other than Claude Code, and read the same);
// engine, model, permissionMode,
// effort, pending ({"resume":…,"resumeAt":…,"fork":true}), promptHash, title, rules,
// costUsd, isolation, workdir, branch, base, baseCommit and log are left out
// when empty (files from before they existed read the same).
type Session struct {
	ID          string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ProjectRoot string
	// Persona is the persona ID, "" for none.
	Persona string
	// Mode is workbench, pipeline or direct.
	Mode string
	// ConversationID is the engine's own id of the conversation a next
	// turn continues (Claude Code's session_id, a Codex thread, an ACP
	// session), "" until the first turn reported one.
	ConversationID string
	// Engine runs the session's turns ("" = claude-code, for files
	// written before engines existed).
	Engine string
	// Model is the model asked for at creation or by a switch ("" = the
	// persona's, else the engine's default).
	Model string
	// PermissionMode and Effort, when set, are what a switch chose for
	// the session's next turns ("" = the server's and persona's policy).
	PermissionMode string
	Effort         string
	// Pending is a conversation control waiting for the session's next
	// turn (a fork's or a rewind's cut), nil when none. The turn that
	// starts it clears it.
	Pending *Pending
	// PromptHash is a hash of the system prompt the session's
	// conversation was last given ("" = unknown): a turn whose prompt
	// differs (a persona switched) tells the engine (Request.PromptChanged).
	PromptHash string
	// Title names the session in lists: the first user message unless
	// someone set it.
	Title string
	// Rules are the tool rules a person chose to "always allow" in this
	// session (as Claude's permission rules: "Bash(touch marker)", "Edit").
	Rules []string
	// CostUSD is the total cost of the session's turns so far.
	CostUSD float64
	// MCPServers is what the last turn's session:init said of each MCP
	// server the session was given (nil: none, or no turn yet).
	MCPServers []event.MCPServerStatus
	// Isolation is "worktree" when the session runs in a git worktree of
	// its own ("" = in the project root). Workdir is then the absolute
	// directory its turns run in, Branch the branch checked out there,
	// Base the ref it started from (as named) and BaseCommit that ref's
	// commit then. The session's files stay under ProjectRoot.
	Isolation  string
	Workdir    string
	Branch     string
	Base       string
	BaseCommit string
	// Sandbox: every turn's agent runs in the kernel sandbox (package
	// sandbox), chosen at creation.
	Sandbox bool
	// Log is where the session's event log is: "" at
	// .chirality/sessions/<id>.events.jsonl, LogThread at
	// .harness/threads/<id>/events.jsonl (a thread of `harness rpc`,
	// specification 002's path), both in ProjectRoot. Chosen at creation.
	Log string
}

// LogThread is Session.Log for a session whose event log is the
// events.jsonl of the `harness rpc` thread of the same id.
const LogThread = "thread"

// ThreadsDir holds `harness rpc`'s threads, relative to a project root.
const ThreadsDir = ".harness/threads"

// EventLogPath is where s's event log is (see Session.Log).
func (s *Session) EventLogPath() string {
	if s.Log == LogThread {
		return filepath.Join(s.ProjectRoot, ThreadsDir, s.ID, "events.jsonl")
	}
	return EventLogPath(s.ProjectRoot, s.ID)
}

// IsolationWorktree is Session.Isolation for a session in a git worktree.
const IsolationWorktree = "worktree"

// Dir is the directory s's turns run in: Workdir, else ProjectRoot.
func (s *Session) Dir() string {
	if s.Workdir != "" {
		return s.Workdir
	}
	return s.ProjectRoot
}

// Pending is how the next turn continues the conversation after a fork or
// a rewind: it resumes Resume (the engine's conversation id; "" = a fresh
// conversation), cut at ResumeAt (a session:complete checkpoint; "" = all
// of it), as a copy when Fork.
type Pending struct {
	Resume   string `json:"resume,omitempty"`
	ResumeAt string `json:"resumeAt,omitempty"`
	Fork     bool   `json:"fork,omitempty"`
}

// Wire is a Session's JSON form (its MarshalJSON writes one), for the
// API's schema: a field of Session that is sent is a field here.
type Wire = wireSession

type wireSession struct {
	SchemaVersion  int                     `json:"schemaVersion"`
	ID             string                  `json:"id" oa:"format=uuid"`
	CreatedAt      time.Time               `json:"createdAt"`
	UpdatedAt      time.Time               `json:"updatedAt"`
	ProjectRoot    string                  `json:"projectRoot"`
	Persona        *string                 `json:"persona"`
	Mode           string                  `json:"mode" oa:"ref=Mode"`
	ConversationID *string                 `json:"claudeSessionId" doc:"the engine's own conversation id, which the next turn continues (Claude Code's session_id, a Codex thread, an ACP session): the one name for every engine, engine says whose"`
	Engine         string                  `json:"engine,omitempty"`
	Model          string                  `json:"model,omitempty"`
	PermissionMode string                  `json:"permissionMode,omitempty" doc:"the permission mode a switch chose for the next turns (absent: the server's and the persona's policy)"`
	Effort         string                  `json:"effort,omitempty" doc:"the reasoning effort a switch chose for the next turns (absent: the engine's default)"`
	Pending        *Pending                `json:"pending,omitempty" doc:"a fork's or a rewind's cut, waiting for the session's next turn"`
	PromptHash     string                  `json:"promptHash,omitempty"`
	Title          string                  `json:"title,omitempty"`
	Rules          []string                `json:"rules,omitempty" doc:"tool rules chosen with \"always allow\" in this session"`
	CostUSD        float64                 `json:"costUsd,omitempty"`
	MCPServers     []event.MCPServerStatus `json:"mcpServers,omitempty" doc:"each MCP server the session's last turn was given, as that turn's session:init reported it"`
	Isolation      string                  `json:"isolation,omitempty" oa:"enum=worktree" doc:"present for a session in a git worktree of its own"`
	Workdir        string                  `json:"workdir,omitempty" doc:"absolute directory the session's turns run in (its worktree)"`
	Branch         string                  `json:"branch,omitempty" doc:"the branch checked out in the worktree"`
	Base           string                  `json:"base,omitempty" doc:"the ref the branch started from, as named (the project's branch when none was)"`
	BaseCommit     string                  `json:"baseCommit,omitempty" doc:"the commit base named at creation"`
	Sandbox        bool                    `json:"sandbox,omitempty" doc:"present (true) when the session's agent runs in the kernel sandbox"`
	Log            string                  `json:"log,omitempty" oa:"enum=thread" doc:"thread: the session's event log is its RPC thread's (.harness/threads/<id>/events.jsonl)"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON writes the documented JSON form.
func (s Session) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireSession{
		SchemaVersion:  SchemaVersion,
		ID:             s.ID,
		CreatedAt:      s.CreatedAt.UTC(),
		UpdatedAt:      s.UpdatedAt.UTC(),
		ProjectRoot:    s.ProjectRoot,
		Persona:        nullable(s.Persona),
		Mode:           s.Mode,
		ConversationID: nullable(s.ConversationID),
		Engine:         s.Engine,
		Model:          s.Model,
		PermissionMode: s.PermissionMode,
		Effort:         s.Effort,
		Pending:        s.Pending,
		PromptHash:     s.PromptHash,
		Title:          s.Title,
		Rules:          s.Rules,
		CostUSD:        s.CostUSD,
		MCPServers:     s.MCPServers,
		Isolation:      s.Isolation,
		Workdir:        s.Workdir,
		Branch:         s.Branch,
		Base:           s.Base,
		BaseCommit:     s.BaseCommit,
		Sandbox:        s.Sandbox,
		Log:            s.Log,
	})
}

// UnmarshalJSON reads the documented JSON form, and the old one whose
// engineSessionId held the conversation of an engine other than Claude
// Code. It rejects a missing or unsupported schemaVersion.
func (s *Session) UnmarshalJSON(data []byte) error {
	var old struct {
		wireSession
		ConversationID string `json:"engineSessionId"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return err
	}
	w := old.wireSession
	switch {
	case w.SchemaVersion == 0:
		return errors.New("no schemaVersion: not a harness session file")
	case w.SchemaVersion != SchemaVersion:
		return fmt.Errorf("schemaVersion %d is not supported (want %d)", w.SchemaVersion, SchemaVersion)
	}
	*s = Session{ID: w.ID, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt, ProjectRoot: w.ProjectRoot, Mode: w.Mode,
		Engine: w.Engine, Model: w.Model, PermissionMode: w.PermissionMode, Effort: w.Effort,
		Pending: w.Pending, PromptHash: w.PromptHash, Title: w.Title, Rules: w.Rules, CostUSD: w.CostUSD, MCPServers: w.MCPServers,
		Isolation: w.Isolation, Workdir: w.Workdir, Branch: w.Branch, Base: w.Base, BaseCommit: w.BaseCommit, Sandbox: w.Sandbox,
		Log: w.Log}
	if w.Persona != nil {
		s.Persona = *w.Persona
	}
	if w.ConversationID != nil {
		s.ConversationID = *w.ConversationID
	}
	if s.ConversationID == "" {
		s.ConversationID = old.ConversationID
	}
	return nil
}

// ValidID reports whether id is a UUIDv4 in canonical lowercase form, the
// only form used in file names.
func ValidID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.Version() == 4 && u.Variant() == uuid.RFC4122 && u.String() == id
}

func checkID(id string) error {
	if !ValidID(id) {
		return &Error{ID: fmt.Sprintf("%q", id), Err: ErrInvalidID}
	}
	return nil
}

// Paths of a session's files relative to its project root.
const (
	SessionsDir = ".chirality/sessions"
)

// FilePath returns <projectRoot>/.chirality/sessions/<id>.json.
func FilePath(projectRoot, id string) string {
	return filepath.Join(projectRoot, SessionsDir, id+".json")
}

// StateDir returns <projectRoot>/.chirality/sessions/<id>.d, where an
// engine keeps the session's own state (the native loop's history). It is
// removed with the session.
func StateDir(projectRoot, id string) string {
	return filepath.Join(projectRoot, SessionsDir, id+".d")
}

// EventLogPath returns <projectRoot>/.chirality/sessions/<id>.events.jsonl.
func EventLogPath(projectRoot, id string) string {
	return filepath.Join(projectRoot, SessionsDir, id+".events.jsonl")
}
