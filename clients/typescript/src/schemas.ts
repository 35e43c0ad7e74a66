// Zod schemas and TypeScript types for everything the harness gateway sends
// and accepts at /api/harness/*: the public names of this client, over the
// schemas generated from the gateway's Go types (./generated.ts, written
// by `go generate ./gateway` from gateway/openapi.json; never edit it).
//
// Objects the gateway sends are "loose": fields the gateway adds later pass
// through instead of failing validation, and an enum the document marks
// extensible takes new values, so a newer gateway does not break an older
// client.

// A namespace import, not `import { z }` (one object holding all of zod):
// bundlers then keep only what the schemas use, 33 kB gzipped for the whole
// client instead of 98 kB (npm run size).
import * as z from "zod";
import * as gen from "./generated.js";

// ---------------------------------------------------------------------------
// Sessions

export const SessionModeSchema = gen.ModeSchema;
export type SessionMode = gen.Mode;

/** One MCP server's state at a turn's start, as its engine reported it. */
export const MCPServerStatusSchema = gen.MCPServerStatusSchema;
export type MCPServerStatus = gen.MCPServerStatus;

export const SessionSchema = gen.SessionSchema;
export type Session = gen.Session;

export const SessionSummarySchema = gen.SessionSummarySchema;
export type SessionSummary = gen.SessionSummary;
export const SessionListSchema = z.array(SessionSummarySchema);

/** An open approval request (also the payload of approval:requested). */
export const ApprovalRequestSchema = gen.ApprovalRequestedSchema;
export type ApprovalRequest = gen.ApprovalRequested;

/** The body `{session, pendingApprovals, permissionMode}` answered by
 * create, get, patch and fork. */
export const SessionEnvelopeSchema = gen.SessionEnvelopeSchema;
export type SessionEnvelope = gen.SessionEnvelope;

export const ApprovalDecisionSchema = gen.ApprovalRequestSchema.shape.decision;
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/** One entry of GET /engines. */
export const EngineStatusSchema = gen.EngineStatusSchema;
export type EngineStatus = gen.EngineStatus;
export const EngineListSchema = z.array(EngineStatusSchema);

/** GET /roots: the allowed project roots, the demo project first. */
export const RootsSchema = gen.RootsSchema;
export type Roots = gen.Roots;

// ---------------------------------------------------------------------------
// Request bodies

export const CreateSessionRequestSchema = gen.CreateSessionRequestSchema;
export type CreateSessionRequest = gen.CreateSessionRequest;

export const TurnRequestSchema = gen.TurnRequestSchema;
export type TurnRequest = gen.TurnRequest;

/** POST /turn with queue on a busy session: where the message was queued. */
export const QueuedAnswerSchema = gen.QueuedAnswerSchema;
export type QueuedAnswer = gen.QueuedAnswer;

/** One prompt waiting in a session's queue. */
export const QueuedPromptSchema = gen.QueuedPromptSchema;
export type QueuedPrompt = gen.QueuedPrompt;

/** GET /session/{id}/queue: the queued prompts, in the order they run. */
export const QueueSchema = gen.QueueSchema;
export type Queue = gen.Queue;

/** PATCH /session/{id}/queue/{promptId}: a new text and/or a new place. */
export const QueueEditRequestSchema = gen.QueueEditRequestSchema;
export type QueueEditRequest = gen.QueueEditRequest;

/** PATCH /session/{id}: what the next turns run with; a field left out is
 * kept, "" clears the session's choice (at least one field: minProperties). */
export const UpdateSessionRequestSchema = gen.PatchSessionRequestSchema.refine(
  (o) => Object.values(o).some((v) => v !== undefined),
  { message: "nothing to change" },
);
export type UpdateSessionRequest = z.infer<typeof UpdateSessionRequestSchema>;

/** POST /session/{id}/fork. */
export const ForkRequestSchema = gen.ForkRequestSchema;
export type ForkRequest = gen.ForkRequest;

/** POST /session/{id}/rewind (files, conversation or both: the gateway
 * answers 400 to neither). */
export const RewindRequestSchema = gen.RewindRequestSchema.refine((o) => o.files === true || o.conversation === true, {
  message: "nothing to rewind: set files, conversation or both",
});
export type RewindRequest = z.infer<typeof RewindRequestSchema>;

export const InterruptRequestSchema = gen.InterruptRequestSchema;
export type InterruptRequest = gen.InterruptRequest;

// ---------------------------------------------------------------------------
// Other answers

export const TurnInfoSchema = gen.TurnInfoSchema;
export type TurnInfo = gen.TurnInfo;
export const TurnListSchema = z.array(TurnInfoSchema);

export const FileChangeSchema = gen.FileChangeSchema;
export type FileChange = gen.FileChange;

export const RewindPreviewSchema = gen.RewindPreviewSchema;
export type RewindPreview = gen.RewindPreview;

export const RewindResultSchema = gen.RewindResultSchema;
export type RewindResult = gen.RewindResult;

export const WorktreeFileChangeSchema = gen.WorktreeFileChangeSchema;
export type WorktreeFileChange = gen.WorktreeFileChange;

export const SessionDiffSchema = gen.SessionDiffSchema;
export type SessionDiff = gen.SessionDiff;

export const MergeRequestSchema = gen.MergeRequestSchema;
export type MergeRequest = gen.MergeRequest;

/** A merge's outcome: merged with the target's new tip (200), or not
 * merged because of conflicts (409, the target untouched). */
export const MergeResultSchema = gen.MergeResultSchema.partial({ commit: true, into: true }).extend({
  conflicts: gen.MergeConflictSchema.shape.conflicts,
  error: gen.MergeConflictSchema.shape.error.optional(),
});
export type MergeResult = z.infer<typeof MergeResultSchema>;

export const ErrorBodySchema = gen.ErrorSchema;
export type ErrorBody = gen.Error;

export const HealthSchema = gen.HealthSchema;
export type Health = gen.Health;

export const PersonaSchema = gen.PersonaSchema;
export type Persona = gen.Persona;
export const PersonaListSchema = z.array(PersonaSchema);

/** GET /trust: one thing in a project that waits for a person's trust. */
export const TrustItemSchema = gen.TrustItemSchema;
export type TrustItem = gen.TrustItem;
export const TrustListSchema = gen.TrustListSchema;
export type TrustList = gen.TrustList;

/** POST /trust: a person trusts a persona file (name: its ID, or path)
 * or a project MCP server (name) at the hash they were shown. */
export const TrustRequestSchema = gen.TrustRequestSchema;
export type TrustRequest = gen.TrustRequest;
export const TrustAcceptedSchema = gen.TrustAcceptedSchema;

/** One widened grant: the frontmatter key (or session field), what a
 * person trusted, what the file says now. */
export const TrustChangeSchema = gen.TrustChangeSchema;
export type TrustChange = gen.TrustChange;

// ---------------------------------------------------------------------------
// UI events (one schema per type, generated from the Go payload types)

export const UserMessageEventSchema = gen.UserMessageEventSchema;
export const SessionInitEventSchema = gen.SessionInitEventSchema;
export const ApprovalRequestedEventSchema = gen.ApprovalRequestedEventSchema;
export const ApprovalResolvedEventSchema = gen.ApprovalResolvedEventSchema;
export const ChatDeltaEventSchema = gen.ChatDeltaEventSchema;
export const ThinkingDeltaEventSchema = gen.ThinkingDeltaEventSchema;
export const ChatCompleteEventSchema = gen.ChatCompleteEventSchema;
export const ToolStartEventSchema = gen.ToolStartEventSchema;
export const ToolResultEventSchema = gen.ToolResultEventSchema;
export const SessionCompleteEventSchema = gen.SessionCompleteEventSchema;
export const SessionErrorKindSchema = gen.SessionErrorKindSchema;
export type SessionErrorKind = gen.SessionErrorKind;
export const SessionErrorEventSchema = gen.SessionErrorEventSchema;
export const SessionRetryEventSchema = gen.SessionRetryEventSchema;
export const ProcessExitEventSchema = gen.ProcessExitEventSchema;
export const SessionForkedEventSchema = gen.SessionForkedEventSchema;
export const SessionRewoundEventSchema = gen.SessionRewoundEventSchema;
export const TrustRequiredEventSchema = gen.TrustRequiredEventSchema;
export const PromptQueuedEventSchema = gen.PromptQueuedEventSchema;
export const PromptDequeuedEventSchema = gen.PromptDequeuedEventSchema;
export const KnownEventSchema = gen.KnownEventSchema;

export type UserMessageEvent = gen.UserMessageEvent;
export type SessionInitEvent = gen.SessionInitEvent;
export type ApprovalRequestedEvent = gen.ApprovalRequestedEvent;
export type ApprovalResolvedEvent = gen.ApprovalResolvedEvent;
export type ChatDeltaEvent = gen.ChatDeltaEvent;
export type ThinkingDeltaEvent = gen.ThinkingDeltaEvent;
export type ChatCompleteEvent = gen.ChatCompleteEvent;
export type ToolStartEvent = gen.ToolStartEvent;
export type ToolResultEvent = gen.ToolResultEvent;
export type SessionCompleteEvent = gen.SessionCompleteEvent;
export type SessionErrorEvent = gen.SessionErrorEvent;
export type SessionRetryEvent = gen.SessionRetryEvent;
export type ProcessExitEvent = gen.ProcessExitEvent;
export type SessionForkedEvent = gen.SessionForkedEvent;
export type SessionRewoundEvent = gen.SessionRewoundEvent;
export type TrustRequiredEvent = gen.TrustRequiredEvent;
export type PromptQueuedEvent = gen.PromptQueuedEvent;
export type PromptDequeuedEvent = gen.PromptDequeuedEvent;
export type KnownEvent = gen.KnownEvent;

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

export const KNOWN_EVENT_TYPES: ReadonlySet<string> = new Set<HarnessEventType>(
  KnownEventSchema.options.map((o) => o.shape.type.value),
);

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
