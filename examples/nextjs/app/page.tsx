"use client";

// A minimal chat on @chirality/harness-client. It talks to the route handler
// (way 2, baseUrl "/proxy"), so no token is needed in the browser; with the
// rewrite (way 1) it would be baseUrl "" instead.

import { useEffect, useMemo, useRef, useState } from "react";
import { HarnessClient, HarnessError, type HarnessEvent, type SessionSummary } from "@chirality/harness-client";

export default function Page() {
  const client = useMemo(() => new HarnessClient({ baseUrl: "/proxy" }), []);
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const [sessionId, setSessionId] = useState<string | null>(null);
  const [root, setRoot] = useState("");
  const [message, setMessage] = useState("");
  const [answer, setAnswer] = useState("");
  const [log, setLog] = useState<string[]>([]);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const abort = useRef<AbortController | null>(null);

  const refresh = () =>
    client
      .listSessions()
      .then(setSessions)
      .catch((e: unknown) => setError(String(e)));
  useEffect(() => {
    void refresh();
    return () => abort.current?.abort();
  }, []);

  async function create() {
    setError(null);
    try {
      const s = await client.createSession({ projectRoot: root, persona: null, mode: "direct" });
      setSessionId(s.id);
      await refresh();
    } catch (e) {
      setError(e instanceof HarnessError ? `${e.status}: ${e.message}` : String(e));
    }
  }

  async function send() {
    if (!sessionId || !message.trim()) return;
    setError(null);
    setAnswer("");
    setLog([]);
    setRunning(true);
    abort.current = new AbortController();
    try {
      const stream = await client.startTurn(sessionId, message, { signal: abort.current.signal });
      setMessage("");
      for await (const ev of stream) show(ev);
    } catch (e) {
      if (!abort.current.signal.aborted) setError(e instanceof HarnessError ? `${e.status}: ${e.message}` : String(e));
    } finally {
      setRunning(false);
    }
  }

  function show(ev: HarnessEvent) {
    switch (ev.type) {
      case "chat:delta":
        setAnswer((a) => a + ev.text);
        break;
      case "tool:start":
        setLog((l) => [...l, `▶ ${ev.name} ${JSON.stringify(ev.input)}`]);
        break;
      case "tool:result":
        setLog((l) => [...l, `${ev.isError ? "✗" : "✓"} ${ev.content.split("\n").length} lines`]);
        break;
      case "session:complete":
        setLog((l) => [...l, `cost $${ev.costUsd.toFixed(4)}`]);
        break;
      case "session:error":
        setLog((l) => [...l, `error (${ev.kind}): ${ev.error}`]);
        break;
      default:
        break; // thinking, init, exit and unknown events are not shown here
    }
  }

  return (
    <main>
      <h1>harness from Next.js</h1>
      <section>
        <input value={root} onChange={(e) => setRoot(e.target.value)} placeholder="project root" />
        <button onClick={create} disabled={!root}>
          New session
        </button>
        <ul>
          {sessions.map((s) => (
            <li key={s.id}>
              <button onClick={() => setSessionId(s.id)} disabled={s.id === sessionId}>
                {s.persona ?? s.mode} — {s.projectRoot}
              </button>
            </li>
          ))}
        </ul>
      </section>
      {sessionId && (
        <section>
          <textarea value={message} onChange={(e) => setMessage(e.target.value)} rows={3} style={{ width: "100%" }} />
          <button onClick={send} disabled={running}>
            Send
          </button>
          <button onClick={() => void client.interrupt(sessionId)} disabled={!running}>
            Stop
          </button>
          <pre style={{ whiteSpace: "pre-wrap" }}>{answer}</pre>
          <pre style={{ color: "#666" }}>{log.join("\n")}</pre>
        </section>
      )}
      {error && <p style={{ color: "crimson" }}>{error}</p>}
    </main>
  );
}
