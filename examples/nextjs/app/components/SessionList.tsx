import type { SessionSummary } from "@chirality/harness-client";

/** The sessions of the allowed roots, newest first; a click resumes one. */
export function SessionList(props: { sessions: SessionSummary[]; current: string | null; onOpen: (id: string) => void }) {
  if (props.sessions.length === 0) return <p className="muted">No sessions yet.</p>;
  return (
    <ul className="sessions" data-testid="session-list">
      {props.sessions.map((s) => (
        <li key={s.id}>
          <button
            data-testid="session-item"
            data-session-id={s.id}
            className={s.id === props.current ? "active" : ""}
            onClick={() => props.onOpen(s.id)}
          >
            <span className="title">{s.title || `${s.persona ?? "no persona"} · ${s.mode}`}</span>
            <span className="muted">
              {s.persona ?? "—"} · {s.mode} · {new Date(s.updatedAt).toLocaleTimeString()}
              {s.running ? " · running" : ""}
              {s.costUsd ? ` · $${s.costUsd.toFixed(4)}` : ""}
            </span>
          </button>
        </li>
      ))}
    </ul>
  );
}
