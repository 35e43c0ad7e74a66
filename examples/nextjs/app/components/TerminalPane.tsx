import type { TermEntry } from "../lib/view";

/** The agent's tool calls and their results, as a terminal shows them. */
export function TerminalPane(props: { entries: TermEntry[] }) {
  return (
    <section className="terminal" data-testid="terminal-pane" aria-label="Tools">
      {props.entries.length === 0 && <div className="muted">No tool calls yet.</div>}
      {props.entries.map((t) => (
        <div key={t.toolUseId} className="tool" data-testid="tool-call">
          <div className="cmd">
            $ <span data-testid="tool-name">{t.name}</span> {t.input}
          </div>
          {t.result === undefined ? (
            <div className="muted">…</div>
          ) : (
            <pre data-testid="tool-result" className={t.isError ? "error" : ""}>
              {t.result}
            </pre>
          )}
        </div>
      ))}
    </section>
  );
}
