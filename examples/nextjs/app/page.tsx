"use client";

// A small chat on @chirality/harness-client. It talks to the route handler
// (way 2, baseUrl "/proxy"), so the browser never holds the gateway's
// token; with the rewrite (way 1) it would be baseUrl "" and, if the
// gateway has one, the token in the browser.
//
// Where each event goes is the routing table in lib/view.ts.

import { useCallback, useEffect, useMemo, useReducer, useRef, useState } from "react";
import {
  HarnessClient,
  HarnessError,
  type ApprovalDecision,
  type HarnessEvent,
  type Persona,
  type SessionSummary,
} from "@chirality/harness-client";
import { emptyView, route, type View } from "./lib/view";
import { ChatPane } from "./components/ChatPane";
import { Composer } from "./components/Composer";
import { NewSession, type NewSessionChoice } from "./components/NewSession";
import { SessionList } from "./components/SessionList";
import { StatusBar } from "./components/StatusBar";
import { TerminalPane } from "./components/TerminalPane";
import { Toast } from "./components/Toast";

type Action = { type: "reset" } | { type: "event"; ev: HarnessEvent; live: boolean } | { type: "sending" };

function reduce(v: View, a: Action): View {
  switch (a.type) {
    case "reset":
      return emptyView;
    case "sending":
      return { ...v, running: true, state: "sending" };
    case "event":
      return route(v, a.ev, a.live);
  }
}

function message(e: unknown): string {
  if (e instanceof HarnessError) return `${e.status}: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

const hashSession = () => new URLSearchParams(window.location.hash.slice(1)).get("s");

export default function Page() {
  // events "all": this page shows approvals and the user's messages, which
  // are extension events the gateway sends only when asked (?events=).
  const client = useMemo(() => new HarnessClient({ baseUrl: "/proxy", events: "all" }), []);
  const [roots, setRoots] = useState<string[]>([]);
  const [personas, setPersonas] = useState<Persona[]>([]);
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const [sessionId, setSessionId] = useState<string | null>(null);
  const [view, dispatch] = useReducer(reduce, emptyView);
  const [toast, setToast] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  // The one stream this page reads (a turn, or a session's history and
  // running turn); opening another session stops reading it.
  const reader = useRef<AbortController | null>(null);

  const fail = useCallback((e: unknown) => setToast(message(e)), []);
  const closeToast = useCallback(() => setToast(null), []);
  useEffect(() => {
    if (view.toast) setToast(view.toast.text);
  }, [view.toast]);

  const refresh = useCallback(() => client.listSessions().then(setSessions, fail), [client, fail]);

  /** Shows a session: its whole history, then its running turn live. */
  const open = useCallback(
    async (id: string) => {
      reader.current?.abort();
      const ctl = new AbortController();
      reader.current = ctl;
      setSessionId(id);
      window.history.replaceState(null, "", `#s=${encodeURIComponent(id)}`);
      dispatch({ type: "reset" });
      setLoading(true);
      try {
        for await (const ev of client.sessionEvents(id, { signal: ctl.signal })) {
          dispatch({ type: "event", ev, live: false });
        }
      } catch (e) {
        if (!ctl.signal.aborted) fail(e);
      } finally {
        if (reader.current === ctl) setLoading(false);
      }
    },
    [client, fail],
  );

  useEffect(() => {
    client.roots().then((r) => setRoots(r.roots), fail);
    client.listPersonas().then(setPersonas, fail);
    void refresh();
    const id = hashSession();
    if (id) void open(id);
    return () => reader.current?.abort();
  }, [client, fail, refresh, open]);

  async function create(c: NewSessionChoice) {
    try {
      const s = await client.createSession(c);
      await refresh();
      void open(s.id);
    } catch (e) {
      fail(e);
    }
  }

  async function send(text: string) {
    if (!sessionId) return;
    reader.current?.abort();
    const ctl = new AbortController();
    reader.current = ctl;
    setLoading(false); // a history still being read is superseded by the turn
    dispatch({ type: "sending" });
    try {
      const stream = await client.startTurn(sessionId, text, { signal: ctl.signal });
      for await (const ev of stream) dispatch({ type: "event", ev, live: true });
    } catch (e) {
      if (!ctl.signal.aborted) {
        fail(e);
        // The turn was refused, or its stream is lost: the history says
        // what happened.
        void open(sessionId);
      }
    } finally {
      if (reader.current === ctl) void refresh();
    }
  }

  async function approve(requestId: string, decision: ApprovalDecision) {
    if (!sessionId) return;
    try {
      if (!(await client.approve(sessionId, requestId, decision))) setToast("That request was already answered.");
    } catch (e) {
      fail(e);
    }
  }

  async function stop() {
    if (!sessionId) return;
    try {
      await client.interrupt(sessionId);
    } catch (e) {
      fail(e);
    }
  }

  return (
    <div className="app">
      <aside className="side">
        <h1>harness from Next.js</h1>
        <NewSession roots={roots} personas={personas} disabled={false} onCreate={create} />
        <h2>Sessions</h2>
        <SessionList sessions={sessions} current={sessionId} onOpen={(id) => void open(id)} />
      </aside>
      <main className="main">
        {sessionId ? (
          <>
            <div className="panes">
              <ChatPane items={view.chat} running={view.running} onApprove={approve} />
              <TerminalPane entries={view.terminal} />
            </div>
            <Composer disabled={view.running || loading} running={view.running} onSend={send} onStop={stop} />
          </>
        ) : (
          <p className="muted pick">Create a session, or pick one on the left.</p>
        )}
        <StatusBar sessionId={sessionId} state={loading && !view.running ? "loading" : view.state} engine={view.engine} model={view.model} costUsd={view.costUsd} />
      </main>
      <Toast text={toast} onClose={closeToast} />
    </div>
  );
}
