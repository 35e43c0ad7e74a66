"use client";

import { useEffect, useRef } from "react";
import type { ApprovalDecision } from "@chirality/harness-client";
import { describeInput, type ChatItem } from "../lib/view";
import { Markdown } from "./Markdown";

/** The conversation: the user's messages, the streamed answers, approval
 * cards and the marks a turn ends with. */
export function ChatPane(props: { items: ChatItem[]; running: boolean; onApprove: (requestId: string, d: ApprovalDecision) => void }) {
  const pane = useRef<HTMLElement>(null);
  // Follow the stream: keep the newest text in view.
  useEffect(() => {
    pane.current?.scrollTo({ top: pane.current.scrollHeight });
  }, [props.items]);
  return (
    <section ref={pane} className="chat" data-testid="chat-pane" aria-label="Chat">
      {props.items.length === 0 && <p className="muted">Say something to the agent below.</p>}
      {props.items.map((item, i) => {
        switch (item.kind) {
          case "user":
            return (
              <div key={i} className="bubble user" data-testid="user-message">
                {item.text}
              </div>
            );
          case "assistant":
            return (
              <div key={i} className="bubble assistant md" data-testid="assistant-message">
                <Markdown text={item.text} />
              </div>
            );
          case "approval":
            return (
              <div key={i} className="approval" data-testid="approval-card">
                <div>
                  <b>{item.toolName}</b> wants to run: <code>{describeInput(item.input)}</code>
                </div>
                {item.outcome ? (
                  <div data-testid="approval-outcome" className={item.outcome.decision}>
                    {item.outcome.decision === "allow" ? "Allowed" : "Denied"} ({item.outcome.by})
                  </div>
                ) : (
                  <div>
                    <button data-testid="approval-allow" disabled={!props.running} onClick={() => props.onApprove(item.requestId, "allow")}>
                      Allow
                    </button>{" "}
                    <button data-testid="approval-deny" disabled={!props.running} onClick={() => props.onApprove(item.requestId, "deny")}>
                      Deny
                    </button>
                  </div>
                )}
              </div>
            );
          case "mark":
            return (
              <div key={i} className={`mark ${item.tone}`} data-testid={`mark-${item.tone}`}>
                {item.text}
              </div>
            );
        }
      })}
    </section>
  );
}
