// The console's own notifications (issue 32): while its tab is hidden, a
// browser notification when the session it shows needs a person (an
// approval, a trust decision, a plan to review) or a turn of it ends, and
// the number of such calls in the tab's title until the tab is seen again.
//
// Only events that happen after the session was opened call anyone: the
// history a session replays when it is opened is not news. The text of a
// notification is the console's own words and the session's title, never
// the model's text.

const TITLES = {
  "approval:requested": "Approval needed",
  "trust:required": "Trust needed",
  "plan:ready": "Plan ready for review",
  "turn:completed": "Turn completed",
  "turn:failed": "Turn failed",
  "turn:interrupted": "Turn interrupted",
  "budget:hit": "Budget hit",
};

/** What the end of a turn is called, from its session:error kind ("" =
 * it completed). */
function endType(kind) {
  if (kind === undefined) return "turn:failed";
  if (kind === "") return "turn:completed";
  if (kind === "interrupted" || kind === "killed") return "turn:interrupted";
  if (kind === "max_budget") return "budget:hit";
  return "turn:failed";
}

export class ConsoleNotifier {
  /**
   * @param {object} o
   * @param {Document} [o.doc]
   * @param {(id: string) => void} [o.open] shows a session (on a click)
   */
  constructor({ doc = document, open = () => {} } = {}) {
    this.doc = doc;
    this.open = open;
    this.count = 0;
    this.baseTitle = doc.title;
    this.since = Date.now(); // events before this are history
    this.ending = new Map(); // session → its turn's outcome so far: "" completed, a kind, undefined none
    doc.addEventListener("visibilitychange", () => {
      if (!doc.hidden) this.clear();
    });
  }

  /** The browser's permission, asked for on a person's gesture (sending a
   * message): a browser only asks then. */
  ask() {
    const N = globalThis.Notification;
    if (N && N.permission === "default") N.requestPermission().catch(() => {});
  }

  /** A session was opened: what it replays from now on is history. */
  opened() {
    this.since = Date.now();
  }

  /** Feeds one event of the session shown (title: its title). */
  observe(ev, sessionId, title = "") {
    if (!ev || typeof ev.type !== "string") return;
    switch (ev.type) {
      case "user:message":
        this.ending.delete(sessionId);
        return;
      case "session:complete":
        this.ending.set(sessionId, "");
        return;
      case "session:error":
        if (ev.kind !== "resume_not_found") this.ending.set(sessionId, ev.kind || "execution");
        return;
      case "process:exit": {
        const kind = this.ending.get(sessionId);
        this.ending.delete(sessionId);
        this.call(endType(kind), ev, sessionId, title);
        return;
      }
      case "approval:requested":
      case "trust:required":
      case "plan:ready":
        this.call(ev.type, ev, sessionId, title);
    }
  }

  call(type, ev, sessionId, title) {
    // history: an event stamped before the session was opened (the wire's
    // "timestamp", Unix ms, stamped once as it is stored)
    const at = typeof ev.timestamp === "number" ? ev.timestamp : ev.time;
    if (typeof at === "number" && at < this.since) return;
    if (!this.doc.hidden) return;
    this.count++;
    this.doc.title = `(${this.count}) ${this.baseTitle}`;
    const N = globalThis.Notification;
    if (!N || N.permission !== "granted") return;
    let what = TITLES[type] || type;
    if (type === "approval:requested" && ev.toolName) what += `: ${ev.toolName}`;
    try {
      const n = new N(what, { body: title || "harness session", tag: `${sessionId}:${type}`, data: { sessionId, type } });
      n.onclick = () => {
        globalThis.focus?.();
        this.open(sessionId);
        n.close();
      };
      this.last = { title: what, body: title, type, sessionId };
    } catch {
      // a browser that allows notifications only from a service worker
    }
  }

  /** The tab is seen: the count goes. */
  clear() {
    this.count = 0;
    this.doc.title = this.baseTitle;
  }
}
