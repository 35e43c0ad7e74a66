/** One line at the bottom: the session, what the agent does, its cost. */
export function StatusBar(props: { sessionId: string | null; state: string; engine?: string | undefined; model?: string | undefined; costUsd?: number | undefined }) {
  return (
    <footer className="status" data-testid="status-bar">
      <span data-testid="status-state" className={`state ${props.state.split(" ")[0]}`}>
        {props.sessionId ? props.state : "no session"}
      </span>
      {props.engine && <span>{props.engine}</span>}
      {props.model && <span>{props.model}</span>}
      {props.costUsd !== undefined && <span data-testid="status-cost">${props.costUsd.toFixed(4)}</span>}
      {props.sessionId && <span className="muted">{props.sessionId.slice(0, 8)}</span>}
    </footer>
  );
}
