// The routing table: where each UI event of the gateway goes on the page.
// A pure function from (view, event) to the next view, so a live turn, a
// replayed history and a reload all draw the same thing.
//
//   event                  chat pane               terminal pane      status bar            other
//   user:message           the user's bubble       —                  "thinking", running   input disabled
//   chat:delta             appended to the answer  —                  "writing"
//   thinking:delta         —                       —                  "thinking"
//   tool:start             (next text: new bubble) "$ Bash ls -la"    "running Bash"
//   tool:result            —                       the result as text "thinking"
//   approval:requested     an approval card        —                  "waiting for approval"
//   approval:resolved      the card's outcome      —                  "thinking"
//   session:init           —                       —                  engine, model
//   session:complete       —                       —                  cost
//   session:error          "Interrupted" / error   —                  "interrupted"/"error" error toast (live, not an interrupt)
//   process:exit           —                       —                  "idle"                input re-enabled
//   anything else          —                       —                  —                     (ignored)

import type { HarnessEvent } from "@chirality/harness-client";

export type ChatItem =
  | { kind: "user"; text: string }
  | { kind: "assistant"; text: string }
  | {
      kind: "approval";
      requestId: string;
      toolName: string;
      input: Record<string, unknown>;
      outcome?: { decision: "allow" | "deny"; by: string };
    }
  | { kind: "mark"; tone: "interrupted" | "error"; text: string };

export interface TermEntry {
  toolUseId: string;
  name: string;
  input: string;
  result?: string;
  isError?: boolean;
}

export interface View {
  chat: ChatItem[];
  terminal: TermEntry[];
  /** A turn runs: the input stays disabled until its process:exit. */
  running: boolean;
  state: string;
  engine?: string;
  model?: string;
  costUsd?: number;
  /** The last error worth a toast (a turn's session:error). */
  toast?: { id: number; text: string };
  /** Whether the next chat:delta continues the last answer bubble. */
  open: boolean;
}

export const emptyView: View = { chat: [], terminal: [], running: false, state: "idle", open: false };

let toastIds = 0;

/** What a tool was asked to do, in one line: the command for a shell tool,
 * the path for a file tool, the input as JSON otherwise. */
export function describeInput(input: Record<string, unknown> | null): string {
  if (!input) return "";
  for (const k of ["command", "file_path", "path", "pattern", "url"]) {
    if (typeof input[k] === "string") return input[k] as string;
  }
  return JSON.stringify(input);
}

/** A tool result as text: the native engine's tools answer a JSON object
 * with one string field ({"entries": "total 24\n…"}), shown as that
 * field, lines and all; anything else as it is. */
export function resultText(content: string): string {
  if (!content.startsWith("{")) return content;
  try {
    const v: unknown = JSON.parse(content);
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const values = Object.values(v);
      if (values.length === 1 && typeof values[0] === "string") return values[0];
    }
  } catch {
    // not JSON after all
  }
  return content;
}

/** The next view after ev. live is false while a history is replayed: an
 * old error is marked in the chat but raises no toast. */
export function route(v: View, ev: HarnessEvent, live = true): View {
  switch (ev.type) {
    case "user:message":
      return { ...v, chat: [...v.chat, { kind: "user", text: ev.text }], running: true, state: "thinking", open: false };
    case "chat:delta": {
      const last = v.chat[v.chat.length - 1];
      if (v.open && last?.kind === "assistant") {
        return { ...v, chat: [...v.chat.slice(0, -1), { kind: "assistant", text: last.text + ev.text }], state: "writing" };
      }
      return { ...v, chat: [...v.chat, { kind: "assistant", text: ev.text }], state: "writing", open: true };
    }
    case "thinking:delta":
      return { ...v, state: "thinking" };
    case "tool:start":
      return {
        ...v,
        terminal: [...v.terminal, { toolUseId: ev.toolUseId, name: ev.name, input: describeInput(ev.input) }],
        state: `running ${ev.name}`,
        open: false,
      };
    case "tool:result":
      return {
        ...v,
        terminal: v.terminal.map((t) => (t.toolUseId === ev.toolUseId ? { ...t, result: resultText(ev.content), isError: ev.isError } : t)),
        state: "thinking",
      };
    case "approval:requested":
      return {
        ...v,
        chat: [...v.chat, { kind: "approval", requestId: ev.requestId, toolName: ev.toolName, input: ev.input }],
        state: "waiting for approval",
        open: false,
      };
    case "approval:resolved":
      return {
        ...v,
        chat: v.chat.map((c) =>
          c.kind === "approval" && c.requestId === ev.requestId ? { ...c, outcome: { decision: ev.decision, by: String(ev.by) } } : c,
        ),
        state: "thinking",
      };
    case "session:init": {
      const next: View = { ...v, model: ev.model };
      if (ev.engine) next.engine = ev.engine;
      return next;
    }
    case "session:complete":
      return { ...v, costUsd: (v.costUsd ?? 0) + ev.costUsd };
    case "session:error":
      if (ev.kind === "interrupted") {
        return { ...v, chat: [...v.chat, { kind: "mark", tone: "interrupted", text: "Interrupted" }], state: "interrupted", open: false };
      }
      return {
        ...v,
        chat: [...v.chat, { kind: "mark", tone: "error", text: `Error (${ev.kind}): ${ev.error}` }],
        state: "error",
        ...(live ? { toast: { id: ++toastIds, text: `${ev.kind}: ${ev.error}` } } : {}),
        open: false,
      };
    case "process:exit":
      return { ...v, running: false, state: v.state === "interrupted" || v.state === "error" ? v.state : "idle", open: false };
    default:
      return v; // chat:complete repeats the deltas; unknown types are not drawn
  }
}
