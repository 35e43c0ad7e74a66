// Zod schemas and TypeScript types for everything the harness gateway sends
// and accepts at /api/harness/*.
//
// Objects are "loose": fields the gateway adds later pass through instead of
// failing validation, so a newer gateway does not break an older client.

// A namespace import, not `import { z }` (one object holding all of zod):
// bundlers then keep only what the schemas use, 33 kB gzipped for the whole
// client instead of 98 kB (npm run size).
import * as z from "zod";

// ---------------------------------------------------------------------------
// Sessions

export const SessionModeSchema = z.enum(["workbench", "pipeline", "direct"]);
export type SessionMode = z.infer<typeof SessionModeSchema>;

/** One MCP server's state at a turn's start, as its engine reported it. */
export const MCPServerStatusSchema = z.looseObject({
  name: z.string(),
  /** connected, failed or pending (or the agent's own word). */
  status: z.string(),
  error: z.string().optional(),
});
export type MCPServerStatus = z.infer<typeof MCPServerStatusSchema>;

export const SessionSchema = z.looseObject({
  id: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  projectRoot: z.string(),
  persona: z.string().nullable(),
  mode: SessionModeSchema,
  claudeSessionId: z.string().nullable(),
  schemaVersion: z.number().int(),
  /** The engine that runs the session (absent in files from before engines). */
  engine: z.string().optional(),
  engineSessionId: z.string().optional(),
  model: z.string().optional(),
  /** What a switch (updateSession) chose for the next turns; absent = the
   * server's and the persona's policy. */
  permissionMode: z.string().optional(),
  effort: z.string().optional(),
  /** A fork's or a rewind's cut, waiting for the session's next turn. */
  pending: z.looseObject({ resume: z.string().optional(), resumeAt: z.string().optional(), fork: z.boolean().optional() }).optional(),
  title: z.string().optional(),
  /** Tool rules a person chose to "always allow" in this session. */
  rules: z.array(z.string()).optional(),
  costUsd: z.number().optional(),
  /** What the last turn's session:init said of each MCP server. */
  mcpServers: z.array(MCPServerStatusSchema).optional(),
  /** "worktree" for a session in a git worktree of its own (absent: it
   * runs in the project root). */
  isolation: z.string().optional(),
  /** The absolute directory its turns run in (its worktree). */
  workdir: z.string().optional(),
  /** The branch checked out there, the ref it started from (as named) and
   * that ref's commit then. */
  branch: z.string().optional(),
  base: z.string().optional(),
  baseCommit: z.string().optional(),
  /** True when the session's agent runs in the kernel sandbox. */
  sandbox: z.boolean().optional(),
});
export type Session = z.infer<typeof SessionSchema>;

export const SessionSummarySchema = z.looseObject({
  id: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  projectRoot: z.string(),
  persona: z.string().nullable(),
  mode: SessionModeSchema,
  engine: z.string().optional(),
  model: z.string().optional(),
  title: z.string().optional(),
  costUsd: z.number().optional(),
  running: z.boolean().optional(),
  /** How many approval requests the session waits on. */
  pendingApprovals: z.number().int().optional(),
});
export type SessionSummary = z.infer<typeof SessionSummarySchema>;

export const SessionListSchema = z.array(SessionSummarySchema);

/** An open approval request (also the payload of approval:requested). */
export const ApprovalRequestSchema = z.looseObject({
  requestId: z.string(),
  toolUseId: z.string(),
  toolName: z.string(),
  input: z.record(z.string(), z.unknown()),
  suggestions: z.unknown().nullable(),
  rule: z.string().optional(),
  expiresAt: z.string(),
});
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;

/** The body `{session, pendingApprovals, permissionMode}` answered by
 * create, get, patch and fork. permissionMode is the mode the session's
 * turns run in (its own choice over the server's and the persona's). */
export const SessionEnvelopeSchema = z.looseObject({
  session: SessionSchema,
  pendingApprovals: z.array(ApprovalRequestSchema).optional(),
  permissionMode: z.string().optional(),
  /** The session's budget ({} when none). */
  budget: z.looseObject({ maxCostUsd: z.number().optional(), maxTokens: z.number().int().optional() }).optional(),
  /** What the session's turns used (GET /session/{id} only). */
  usage: z
    .looseObject({ costUsd: z.number(), inputTokens: z.number().int(), outputTokens: z.number().int(), turns: z.number().int() })
    .optional(),
});
export type SessionEnvelope = z.infer<typeof SessionEnvelopeSchema>;

export const ApprovalDecisionSchema = z.enum(["allow", "deny", "always"]);
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/** One entry of GET /engines. */
export const EngineStatusSchema = z.looseObject({
  name: z.string(),
  kind: z.string(),
  available: z.boolean(),
  reason: z.string().optional(),
  version: z.string().optional(),
  /** The conversation controls the engine supports: forkSession, and
   * rewind with conversation: true (files rewind on every engine). Absent
   * from gateways older than them. */
  controls: z.looseObject({ fork: z.boolean(), rewind: z.boolean() }).optional(),
});
export type EngineStatus = z.infer<typeof EngineStatusSchema>;
export const EngineListSchema = z.array(EngineStatusSchema);

/** GET /roots: the allowed project roots, the demo project first. */
export const RootsSchema = z.looseObject({ roots: z.array(z.string()), demo: z.boolean() });
export type Roots = z.infer<typeof RootsSchema>;

// ---------------------------------------------------------------------------
// Request bodies

export const CreateSessionRequestSchema = z.object({
  projectRoot: z.string().min(1),
  persona: z.string().min(1).nullable().optional(),
  mode: SessionModeSchema,
  /** claude-code (default), anthropic, codex, … (see engines()). */
  engine: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  title: z.string().optional(),
  /** "worktree": run the session in a git worktree of its own, on a new
   * branch (default harness/<short id>) from base (default: the project's
   * HEAD). 422 when the project is not in a git repository or the base is
   * no commit. */
  isolation: z.literal("worktree").optional(),
  base: z.string().min(1).optional(),
  branch: z.string().min(1).optional(),
  /** Run every turn's agent in the kernel sandbox (Landlock); a turn on a
   * kernel without it fails with 503. */
  sandbox: z.boolean().optional(),
  /** What the session's turns may spend (see BudgetSchema). */
  budget: z.lazy(() => BudgetSchema).optional(),
});
export type CreateSessionRequest = z.infer<typeof CreateSessionRequestSchema>;

export const TurnRequestSchema = z.object({
  sessionId: z.string().min(1),
  message: z.string().min(1),
  /** 004 TurnOpts, for this turn only; the overrides only narrow (403 otherwise). */
  systemPromptAppend: z.string().max(32768).optional(),
  toolsOverride: z.string().optional(),
  disallowedToolsOverride: z.array(z.string()).max(128).optional(),
  autoApproveToolsOverride: z.array(z.string()).max(128).optional(),
  /** Queue the message when the session is busy (202) instead of 409. */
  queue: z.boolean().optional(),
});
export type TurnRequest = z.infer<typeof TurnRequestSchema>;

/** POST /turn with queue on a busy session: where the message was queued
 * (position 0 = next to run). */
export const QueuedAnswerSchema = z.looseObject({
  queued: z.literal(true),
  promptId: z.string(),
  position: z.number().int().min(0),
});
export type QueuedAnswer = z.infer<typeof QueuedAnswerSchema>;

/** One prompt waiting in a session's queue. */
export const QueuedPromptSchema = z.looseObject({
  promptId: z.string(),
  message: z.string(),
  queuedAt: z.string(),
});
export type QueuedPrompt = z.infer<typeof QueuedPromptSchema>;

/** GET /session/{id}/queue: the queued prompts, in the order they run. */
export const QueueSchema = z.looseObject({
  prompts: z.array(QueuedPromptSchema),
});
export type Queue = z.infer<typeof QueueSchema>;

/** PATCH /session/{id}/queue/{promptId}: a new text and/or a new place
 * (0 = next; past the end = last). */
export const QueueEditRequestSchema = z.strictObject({
  message: z.string().min(1).optional(),
  position: z.number().int().min(0).optional(),
});
export type QueueEditRequest = z.infer<typeof QueueEditRequestSchema>;

/** PATCH /session/{id}: what the next turns run with; a field left out is
 * kept, "" clears the session's choice (back to the persona's / server's). */
export const UpdateSessionRequestSchema = z
  .object({
    title: z.string().optional(),
    persona: z.string().optional(),
    model: z.string().optional(),
    permissionMode: z.string().optional(),
    effort: z.string().optional(),
    /** Replaces the session's budget ({} removes it). */
    budget: z.lazy(() => BudgetSchema).optional(),
  })
  .refine((o) => Object.values(o).some((v) => v !== undefined), { message: "nothing to change" });
export type UpdateSessionRequest = z.infer<typeof UpdateSessionRequestSchema>;

/** POST /session/{id}/fork: atSeq is the seq of any event of the last
 * turn to keep (0 or absent: the whole conversation). */
export const ForkRequestSchema = z.object({
  atSeq: z.number().int().min(0).optional(),
});
export type ForkRequest = z.infer<typeof ForkRequestSchema>;

/** POST /session/{id}/rewind: back to before the turn whose user:message
 * has seq toTurn; files, conversation or both. */
export const RewindRequestSchema = z
  .object({
    toTurn: z.number().int().min(1),
    files: z.boolean().optional(),
    conversation: z.boolean().optional(),
  })
  .refine((o) => o.files === true || o.conversation === true, { message: "nothing to rewind: set files, conversation or both" });
export type RewindRequest = z.infer<typeof RewindRequestSchema>;

export const InterruptRequestSchema = z.object({
  sessionId: z.string().min(1),
});
export type InterruptRequest = z.infer<typeof InterruptRequestSchema>;

// ---------------------------------------------------------------------------
// Other answers

/** One turn of GET /session/{id}/turns. */
export const TurnInfoSchema = z.looseObject({
  /** The seq of the turn's user:message: toTurn of a rewind. */
  seq: z.number().int(),
  text: z.string(),
  /** The engine reported a position after this turn: the conversation
   * can be cut right after it. */
  checkpoint: z.boolean(),
  /** A snapshot of the project's files from before this turn exists. */
  files: z.boolean(),
  /** A rewind undid this turn. */
  rewound: z.boolean(),
});
export type TurnInfo = z.infer<typeof TurnInfoSchema>;
export const TurnListSchema = z.array(TurnInfoSchema);

/** A file a rewind restores (or restored). op says what happened to it
 * since the snapshot; patch (previews only) is a unified diff. */
export const FileChangeSchema = z.looseObject({
  path: z.string(),
  op: z.union([z.enum(["added", "modified", "deleted"]), z.string()]),
  patch: z.string().optional(),
  truncated: z.boolean().optional(),
});
export type FileChange = z.infer<typeof FileChangeSchema>;

/** GET /session/{id}/rewind?toTurn=: what rewinding would change. */
export const RewindPreviewSchema = z.looseObject({
  toTurn: z.number().int(),
  turn: TurnInfoSchema.optional(),
  files: z.array(FileChangeSchema),
  /** Why the files cannot be rewound to this turn (then files is empty). */
  filesError: z.string().optional(),
});
export type RewindPreview = z.infer<typeof RewindPreviewSchema>;

/** POST /session/{id}/rewind: what changed. */
export const RewindResultSchema = z.looseObject({
  files: z.array(FileChangeSchema),
  conversation: z.boolean(),
});
export type RewindResult = z.infer<typeof RewindResultSchema>;

/** One file of a worktree session's diff. */
export const WorktreeFileChangeSchema = z.looseObject({
  /** Relative to the repository's top. */
  path: z.string(),
  status: z.union([z.enum(["added", "modified", "deleted", "typechange"]), z.string()]),
  additions: z.number().int(),
  deletions: z.number().int(),
  binary: z.boolean().optional(),
});
export type WorktreeFileChange = z.infer<typeof WorktreeFileChangeSchema>;

/** GET /session/{id}/diff: what a worktree session changed since its base
 * (committed, uncommitted and untracked). */
export const SessionDiffSchema = z.looseObject({
  base: z.string(),
  branch: z.string(),
  files: z.array(WorktreeFileChangeSchema),
  patch: z.string(),
  /** The patch was cut (4 MiB). */
  truncated: z.boolean().optional(),
});
export type SessionDiff = z.infer<typeof SessionDiffSchema>;

/** POST /session/{id}/merge. */
export const MergeRequestSchema = z.object({
  /** Default squash. */
  strategy: z.enum(["squash", "merge", "rebase"]).optional(),
  message: z.string().optional(),
  /** Target branch (default: the branch the project has checked out). */
  into: z.string().min(1).optional(),
});
export type MergeRequest = z.infer<typeof MergeRequestSchema>;

/** A merge's outcome: merged with the target's new tip, or not merged
 * because of conflicts (the target untouched). */
export const MergeResultSchema = z.looseObject({
  merged: z.boolean(),
  commit: z.string().optional(),
  into: z.string().optional(),
  conflicts: z.array(z.string()).optional(),
  error: z.string().optional(),
});
export type MergeResult = z.infer<typeof MergeResultSchema>;

export const ErrorBodySchema = z.looseObject({ error: z.string() });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

export const HealthSchema = z.looseObject({
  ok: z.boolean(),
  claudeVersion: z.string().optional(),
});
export type Health = z.infer<typeof HealthSchema>;

export const PersonaSchema = z.looseObject({
  id: z.string(),
  description: z.string().optional(),
});
export type Persona = z.infer<typeof PersonaSchema>;
export const PersonaListSchema = z.array(PersonaSchema);

/** GET /trust: one thing in a project that waits for a person's trust. */
export const TrustItemSchema = z.looseObject({
  kind: z.enum(["persona", "mcp"]),
  name: z.string(),
  path: z.string().optional(),
  hash: z.string(),
  changes: z.array(z.object({ field: z.string(), trusted: z.string(), now: z.string() })).optional(),
  definition: z.string().optional(),
  reason: z.string(),
});
export type TrustItem = z.infer<typeof TrustItemSchema>;
export const TrustListSchema = z.looseObject({
  items: z.array(TrustItemSchema),
  recordError: z.string().optional(),
});
export type TrustList = z.infer<typeof TrustListSchema>;

/** POST /trust: a person trusts a persona file (name: its ID, or path)
 * or a project MCP server (name) at the hash they were shown. */
export const TrustRequestSchema = z.object({
  projectRoot: z.string(),
  kind: z.enum(["persona", "mcp"]),
  name: z.string().optional(),
  path: z.string().optional(),
  hash: z.string(),
});
export type TrustRequest = z.infer<typeof TrustRequestSchema>;
export const TrustAcceptedSchema = z.looseObject({ trusted: TrustItemSchema });

// ---------------------------------------------------------------------------
// UI events

/** Fields every UI event carries. `seq` is present on events that come
 * through SSE or the event log; `parentToolUseId` on events of a subagent. */
const base = {
  sessionId: z.string(),
  parentToolUseId: z.string().optional(),
  seq: z.number().int().optional(),
  /** When the event happened (Unix ms), stamped once as it was stored. */
  timestamp: z.number().int().optional(),
};

/** The user's message: the first event of every harness turn. */
export const UserMessageEventSchema = z.looseObject({
  type: z.literal("user:message"),
  ...base,
  text: z.string(),
});

export const SessionInitEventSchema = z.looseObject({
  type: z.literal("session:init"),
  ...base,
  claudeSessionId: z.string(),
  model: z.string(),
  tools: z.array(z.string()),
  cliVersion: z.string().optional(),
  permissionMode: z.string().optional(),
  cwd: z.string().optional(),
  /** Set by engines other than Claude Code: their name and conversation id. */
  engine: z.string().optional(),
  engineSessionId: z.string().optional(),
  /** Each MCP server the turn was given (omitted when none). */
  mcpServers: z.array(MCPServerStatusSchema).optional(),
});

/** An agent asks whether a tool may run; answer with approve(). */
export const ApprovalRequestedEventSchema = z.looseObject({
  type: z.literal("approval:requested"),
  ...base,
  requestId: z.string(),
  toolUseId: z.string(),
  toolName: z.string(),
  input: z.record(z.string(), z.unknown()),
  /** The agent's own proposals for "always allow" (information only). */
  suggestions: z.unknown().nullable(),
  /** What an "always" answer remembers: this use exactly, e.g. Bash(npm test). */
  rule: z.string().optional(),
  /** When the request is denied by timeout (RFC 3339). */
  expiresAt: z.string(),
});

export const ApprovalResolvedEventSchema = z.looseObject({
  type: z.literal("approval:resolved"),
  ...base,
  requestId: z.string(),
  decision: z.enum(["allow", "deny"]),
  by: z.union([z.enum(["user", "rule", "timeout", "interrupt", "shutdown"]), z.string()]),
  message: z.string().optional(),
});

export const ChatDeltaEventSchema = z.looseObject({
  type: z.literal("chat:delta"),
  ...base,
  text: z.string(),
});

export const ThinkingDeltaEventSchema = z.looseObject({
  type: z.literal("thinking:delta"),
  ...base,
  text: z.string(),
});

export const ChatCompleteEventSchema = z.looseObject({
  type: z.literal("chat:complete"),
  ...base,
  text: z.string(),
});

export const ToolStartEventSchema = z.looseObject({
  type: z.literal("tool:start"),
  ...base,
  toolUseId: z.string(),
  name: z.string(),
  // The tool's complete input object (null only if the CLI sent none).
  input: z.record(z.string(), z.unknown()).nullable(),
});

export const ToolResultEventSchema = z.looseObject({
  type: z.literal("tool:result"),
  ...base,
  toolUseId: z.string(),
  content: z.string(),
  isError: z.boolean(),
});

export const SessionCompleteEventSchema = z.looseObject({
  type: z.literal("session:complete"),
  ...base,
  costUsd: z.number(),
  usage: z.record(z.string(), z.unknown()).nullable(),
  numTurns: z.number().int(),
  durationMs: z.number(),
  /** The engine's opaque position in its conversation after the turn. */
  checkpoint: z.string().optional(),
});

export const SessionErrorKindSchema = z.enum([
  "interrupted",
  "max_turns",
  "max_budget",
  "api_error",
  "not_logged_in",
  "resume_not_found",
  "execution",
  "process",
  "start",
  "budget_exceeded",
]);
export type SessionErrorKind = z.infer<typeof SessionErrorKindSchema>;

export const SessionErrorEventSchema = z.looseObject({
  type: z.literal("session:error"),
  ...base,
  error: z.string(),
  // A kind this client does not know yet is kept as a plain string.
  kind: z.union([SessionErrorKindSchema, z.string()]),
  subtype: z.string().optional(),
  apiErrorStatus: z.number().int().optional(),
  exitCode: z.number().int().optional(),
  stderrTail: z.string().optional(),
  costUsd: z.number().optional(),
  /** kind budget_exceeded: which budget, what was spent. */
  budget: z
    .looseObject({
      scope: z.string(),
      maxCostUsd: z.number().optional(),
      maxTokens: z.number().int().optional(),
      spentCostUsd: z.number(),
      spentTokens: z.number().int(),
    })
    .optional(),
});

/** Extension: what one model call used (a delta). costEstimated: the
 * harness priced the tokens from its dated table. Ends nothing. */
export const UsageUpdateEventSchema = z.looseObject({
  type: z.literal("usage:update"),
  ...base,
  engine: z.string().optional(),
  model: z.string().optional(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  cacheReadTokens: z.number().int(),
  cacheWriteTokens: z.number().int(),
  costUsd: z.number(),
  costEstimated: z.boolean().optional(),
});

/** One account rate limit as its engine last reported it. */
export const RateLimitSchema = z.looseObject({
  engine: z.string().optional(),
  limit: z.string(),
  /** 0-100; -1 when unknown. */
  usedPercent: z.number(),
  status: z.string().optional(),
  /** Unix seconds. */
  resetsAt: z.number().int().optional(),
  windowMinutes: z.number().int().optional(),
});
export type RateLimit = z.infer<typeof RateLimitSchema>;

/** Extension: an account limit's state as the engine learned it. Ends nothing. */
export const RateLimitEventSchema = z.looseObject({
  type: z.literal("rate_limit"),
  ...base,
  ...RateLimitSchema.shape,
});

/** The engine is retrying the model API after a failed request; it may come
 * any number of times in a turn and ends nothing. apiErrorStatus is set when
 * the API answered; maxRetries is 0 when the engine does not say. */
export const SessionRetryEventSchema = z.looseObject({
  type: z.literal("session:retry"),
  ...base,
  attempt: z.number().int(),
  maxRetries: z.number().int(),
  delayMs: z.number().int(),
  error: z.string(),
  apiErrorStatus: z.number().int().optional(),
});

export const ProcessExitEventSchema = z.looseObject({
  type: z.literal("process:exit"),
  ...base,
  code: z.number().int(),
  /** The signal that ended the process; null when none (004). */
  signal: z.string().nullable().optional(),
});

/** This session is a fork of session `from`, cut at `atSeq` (0: all of
 * it). The first event of the fork's own, after the copied history;
 * outside any turn. */
export const SessionForkedEventSchema = z.looseObject({
  type: z.literal("session:forked"),
  ...base,
  from: z.string(),
  atSeq: z.number().int(),
});

/** A rewind went back to before the turn whose user:message has seq
 * toTurn: `files` were restored, the conversation cut when
 * `conversation`. Nothing is deleted from the log; outside any turn. */
export const SessionRewoundEventSchema = z.looseObject({
  type: z.literal("session:rewound"),
  ...base,
  toTurn: z.number().int(),
  files: z.array(z.string()).nullable(),
  conversation: z.boolean(),
});

/** One widened grant: the frontmatter key (or session field), what a
 * person trusted, what the file says now. */
export const TrustChangeSchema = z.looseObject({
  field: z.string(),
  trusted: z.string(),
  now: z.string(),
});
export type TrustChange = z.infer<typeof TrustChangeSchema>;

/** What a turn does not honour until a person trusts it (after
 * user:message, before session:init; it ends nothing): kind persona (a
 * persona file's widened grants: the turn runs with the trusted ones),
 * mcp (a project .mcp.json server: not started) or session (the session
 * file's rules, persona, mode or engine that no person gave). `hash` is
 * what acceptTrust names. */
export const TrustRequiredEventSchema = z.looseObject({
  type: z.literal("trust:required"),
  ...base,
  kind: z.string(),
  name: z.string().optional(),
  path: z.string().optional(),
  hash: z.string().optional(),
  changes: z.array(TrustChangeSchema).optional(),
  rules: z.array(z.string()).optional(),
  message: z.string(),
});

/** A prompt was queued behind the running turn (POST /turn with queue). */
export const PromptQueuedEventSchema = z.looseObject({
  type: z.literal("prompt:queued"),
  ...base,
  promptId: z.string(),
  position: z.number().int(),
  message: z.string(),
});

/** A prompt left the queue: started (the first event of its turn, before
 * its user:message), deleted by a person, or failed to start (error). */
export const PromptDequeuedEventSchema = z.looseObject({
  type: z.literal("prompt:dequeued"),
  ...base,
  promptId: z.string(),
  reason: z.string(),
  error: z.string().optional(),
});

export const KnownEventSchema = z.discriminatedUnion("type", [
  UserMessageEventSchema,
  SessionInitEventSchema,
  ChatDeltaEventSchema,
  ThinkingDeltaEventSchema,
  ChatCompleteEventSchema,
  ToolStartEventSchema,
  ToolResultEventSchema,
  SessionCompleteEventSchema,
  SessionErrorEventSchema,
  SessionRetryEventSchema,
  ProcessExitEventSchema,
  ApprovalRequestedEventSchema,
  ApprovalResolvedEventSchema,
  SessionForkedEventSchema,
  SessionRewoundEventSchema,
  TrustRequiredEventSchema,
  PromptQueuedEventSchema,
  PromptDequeuedEventSchema,
  UsageUpdateEventSchema,
  RateLimitEventSchema,
]);

export type UserMessageEvent = z.infer<typeof UserMessageEventSchema>;
export type SessionInitEvent = z.infer<typeof SessionInitEventSchema>;
export type ApprovalRequestedEvent = z.infer<typeof ApprovalRequestedEventSchema>;
export type ApprovalResolvedEvent = z.infer<typeof ApprovalResolvedEventSchema>;
export type ChatDeltaEvent = z.infer<typeof ChatDeltaEventSchema>;
export type ThinkingDeltaEvent = z.infer<typeof ThinkingDeltaEventSchema>;
export type ChatCompleteEvent = z.infer<typeof ChatCompleteEventSchema>;
export type ToolStartEvent = z.infer<typeof ToolStartEventSchema>;
export type ToolResultEvent = z.infer<typeof ToolResultEventSchema>;
export type SessionCompleteEvent = z.infer<typeof SessionCompleteEventSchema>;
export type SessionErrorEvent = z.infer<typeof SessionErrorEventSchema>;
export type SessionRetryEvent = z.infer<typeof SessionRetryEventSchema>;
export type ProcessExitEvent = z.infer<typeof ProcessExitEventSchema>;
export type SessionForkedEvent = z.infer<typeof SessionForkedEventSchema>;
export type SessionRewoundEvent = z.infer<typeof SessionRewoundEventSchema>;
export type TrustRequiredEvent = z.infer<typeof TrustRequiredEventSchema>;
export type PromptQueuedEvent = z.infer<typeof PromptQueuedEventSchema>;
export type PromptDequeuedEvent = z.infer<typeof PromptDequeuedEventSchema>;
export type KnownEvent = z.infer<typeof KnownEventSchema>;
export type UsageUpdateEvent = z.infer<typeof UsageUpdateEventSchema>;
export type RateLimitEvent = z.infer<typeof RateLimitEventSchema>;

// ---------------------------------------------------------------------------
// Usage and budgets (extensions)

/** What a session may spend: 0 or absent = no limit of that kind. */
export const BudgetSchema = z.looseObject({
  maxCostUsd: z.number().min(0).optional(),
  maxTokens: z.number().int().min(0).optional(),
});
export type Budget = z.infer<typeof BudgetSchema>;

export const UsageTotalsSchema = z.looseObject({
  costUsd: z.number(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  cacheReadTokens: z.number().int(),
  cacheWriteTokens: z.number().int(),
  turns: z.number().int(),
});
export type UsageTotals = z.infer<typeof UsageTotalsSchema>;

/** GET /usage: the totals, one group per key when grouped, the rate limits. */
export const UsageReportSchema = z.looseObject({
  total: UsageTotalsSchema,
  groups: z.array(UsageTotalsSchema.extend({ key: z.string() })),
  rateLimits: z.array(RateLimitSchema),
});
export type UsageReport = z.infer<typeof UsageReportSchema>;
export type UsageBy = "session" | "engine" | "model" | "day";

/** An event whose type this client does not know. It is kept, not dropped:
 * `originalType` is the type the gateway sent and `data` the whole object. */
export interface UnknownEvent {
  type: "unknown";
  originalType: string;
  sessionId?: string;
  seq?: number;
  data: Record<string, unknown>;
}

/** What the event iterators yield: a known UI event, or an unknown one. */
export type HarnessEvent = KnownEvent | UnknownEvent;
export type HarnessEventType = KnownEvent["type"];

export const KNOWN_EVENT_TYPES: ReadonlySet<string> = new Set<HarnessEventType>([
  "user:message",
  "session:init",
  "chat:delta",
  "thinking:delta",
  "chat:complete",
  "tool:start",
  "tool:result",
  "session:complete",
  "session:error",
  "session:retry",
  "process:exit",
  "approval:requested",
  "approval:resolved",
  "session:forked",
  "session:rewound",
  "trust:required",
  "prompt:queued",
  "prompt:dequeued",
]);

/** Thrown when a known event does not have the shape the contract gives it. */
export class EventShapeError extends Error {
  readonly raw: unknown;
  readonly issues: z.core.$ZodIssue[];
  constructor(raw: unknown, issues: z.core.$ZodIssue[]) {
    const type = typeof raw === "object" && raw !== null ? (raw as { type?: unknown }).type : undefined;
    super(`harness: malformed ${String(type)} event: ${issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
    this.name = "EventShapeError";
    this.raw = raw;
    this.issues = issues;
  }
}

/**
 * Validates one decoded UI event. A known type is checked against its schema
 * (throwing EventShapeError when it does not fit); any other object with a
 * string `type` becomes an UnknownEvent. `seq`, when given (from the SSE
 * `id:` line), fills in a missing `seq` field.
 */
export function parseEvent(raw: unknown, seq?: number): HarnessEvent {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new EventShapeError(raw, [
      { code: "custom", path: [], message: "event is not a JSON object", input: raw } as z.core.$ZodIssue,
    ]);
  }
  const obj = raw as Record<string, unknown>;
  const withSeq = obj.seq === undefined && seq !== undefined ? { ...obj, seq } : obj;
  const type = obj.type;
  if (typeof type === "string" && KNOWN_EVENT_TYPES.has(type)) {
    const r = KnownEventSchema.safeParse(withSeq);
    if (!r.success) throw new EventShapeError(raw, r.error.issues);
    return r.data;
  }
  const unknown: UnknownEvent = {
    type: "unknown",
    originalType: typeof type === "string" ? type : String(type),
    data: withSeq,
  };
  if (typeof obj.sessionId === "string") unknown.sessionId = obj.sessionId;
  const s = withSeq.seq;
  if (typeof s === "number") unknown.seq = s;
  return unknown;
}

/** True for the event that ends every turn. */
export function isTurnEnd(e: HarnessEvent): e is ProcessExitEvent {
  return e.type === "process:exit";
}
