"use client";

import { useState } from "react";

/** The message box: Enter sends, Shift+Enter adds a line. Disabled while a
 * turn runs; Stop interrupts it. */
export function Composer(props: { disabled: boolean; running: boolean; onSend: (text: string) => void; onStop: () => void }) {
  const [text, setText] = useState("");
  const send = () => {
    if (!text.trim() || props.disabled) return;
    props.onSend(text);
    setText("");
  };
  return (
    <div className="composer">
      <textarea
        data-testid="message-input"
        value={text}
        disabled={props.disabled}
        placeholder={props.disabled ? "" : "Message the agent (Enter sends)"}
        rows={2}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey) {
            e.preventDefault();
            send();
          }
        }}
      />
      {props.running ? (
        <button data-testid="interrupt" onClick={props.onStop}>
          Stop
        </button>
      ) : (
        <button data-testid="send" disabled={props.disabled || !text.trim()} onClick={send}>
          Send
        </button>
      )}
    </div>
  );
}
