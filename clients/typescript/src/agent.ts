// Zod schemas for `harness agent serve`'s event stream (GET /events): one
// conversation with an agent, the contract `harness tui` talks to.
//
// Every event has `type` and `timestamp` (Unix ms). `text` and `reasoning`
// carry streamed chunks: consecutive chunks of one type belong to one part.

// A namespace import so bundlers keep only what is used (see schemas.ts).
import * as z from "zod";

const at = { timestamp: z.number().int() };

export const AgentUserEventSchema = z.looseObject({ type: z.literal("user"), ...at, content: z.string() });
export const AgentTextEventSchema = z.looseObject({ type: z.literal("text"), ...at, content: z.string() });
export const AgentReasoningEventSchema = z.looseObject({ type: z.literal("reasoning"), ...at, content: z.string() });
export const AgentToolCallEventSchema = z.looseObject({
  type: z.literal("tool_call"),
  ...at,
  id: z.string(),
  name: z.string(),
  input: z.record(z.string(), z.unknown()),
});
export const AgentToolResultEventSchema = z.looseObject({
  type: z.literal("tool_result"),
  ...at,
  id: z.string(),
  result: z.string(),
  isError: z.boolean(),
});
export const AgentStatusEventSchema = z.looseObject({
  type: z.literal("status"),
  ...at,
  state: z.enum(["thinking", "running_tool", "idle", "error"]),
  /** running_tool: the tool's name; error: what went wrong. */
  message: z.string().optional(),
});
/** A tool waits for a person: answer with POST /approval. */
export const AgentApprovalEventSchema = z.looseObject({
  type: z.literal("approval"),
  ...at,
  requestId: z.string(),
  toolUseId: z.string().optional(),
  tool: z.string(),
  input: z.unknown(),
  suggestions: z.unknown().optional(),
  expiresAt: z.string().optional(),
  /**
   * An extension, absent when false: once allowed, the use runs outside
   * the agent's sandbox; no rule allows it and "always" allows it once,
   * remembering nothing. Tell the person before they decide.
   */
  unsandboxed: z.boolean().optional(),
});
export const AgentApprovalResolvedEventSchema = z.looseObject({
  type: z.literal("approval_resolved"),
  ...at,
  requestId: z.string(),
  decision: z.enum(["allow", "deny"]),
  by: z.string(),
  message: z.string().optional(),
});

export const AgentEventSchema = z.discriminatedUnion("type", [
  AgentUserEventSchema,
  AgentTextEventSchema,
  AgentReasoningEventSchema,
  AgentToolCallEventSchema,
  AgentToolResultEventSchema,
  AgentStatusEventSchema,
  AgentApprovalEventSchema,
  AgentApprovalResolvedEventSchema,
]);
export type AgentEvent = z.infer<typeof AgentEventSchema>;

/** Parses one `data:` payload of GET /events; throws on a malformed event. */
export function parseAgentEvent(data: string): AgentEvent {
  return AgentEventSchema.parse(JSON.parse(data));
}
