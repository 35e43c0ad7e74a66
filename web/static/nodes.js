// The cluster's nodes in the console (issue 36). A server started with
// --node answers GET /nodes with the cluster's nodes; any other answers
// 404 and the console shows nothing of this. The Nodes view lists each
// node (name, up/down, sessions it owns, last seen); each session's
// SessionSummary.node and nodeState mark it in the session list and on
// the board, and a session whose node is down cannot take a message
// (its owner is gone until the node comes back). Names reach the page
// only through textContent.

const POLL_MS = 10_000;

/** "12 s ago" from an ISO time; "" when it does not parse. */
export function ago(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (!isFinite(t) || t <= 0) return "";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  return `${Math.floor(s / 3600)} h ago`;
}

/** The rows the Nodes view shows, up nodes first, then by name. */
export function nodeRows(nodes, now = Date.now()) {
  if (!Array.isArray(nodes)) return [];
  return nodes
    .filter((n) => n && typeof n.node === "string")
    .map((n) => ({
      name: n.node,
      state: n.state === "up" ? "up" : "down",
      sessions: Number.isInteger(n.sessions) && n.sessions >= 0 ? n.sessions : 0,
      lastSeen: ago(n.lastSeen, now),
      addr: typeof n.clusterAddr === "string" ? n.clusterAddr : "",
    }))
    .sort((a, b) => (a.state === b.state ? a.name.localeCompare(b.name) : a.state === "up" ? -1 : 1));
}

/** Why a session cannot take a message because of its node ("" when it
 * can: no cluster, or its node is up). */
export function nodeBlocked(s) {
  if (!s || !s.node || s.nodeState !== "down") return "";
  return `The session's node ${s.node} is down: it takes no message until that node is back.`;
}

/** The session's node badge ({text, title, down}), null off a cluster. */
export function nodeNote(s) {
  if (!s || !s.node) return null;
  const down = s.nodeState === "down";
  return { text: down ? `${s.node} down` : s.node, title: down ? nodeBlocked(s) : `On node ${s.node}`, down };
}

/** The badge element for a session (el: the console's element helper),
 * null off a cluster. */
export function nodeBadge(el, s) {
  const n = nodeNote(s);
  if (!n) return null;
  return el("span", { class: n.down ? "node-badge down" : "node-badge", "data-testid": "node-badge", "data-node-state": n.down ? "down" : "up", title: n.title, text: n.text });
}

export class NodesView {
  /**
   * @param {object} o
   * @param {import("./api.js").Api} o.api
   * @param {(tag: string, attrs?: object, ...children: any[]) => HTMLElement} o.el
   * @param {HTMLElement} o.root the view (hidden off a cluster)
   * @param {() => void} [o.changed] called when the nodes' states changed
   */
  constructor({ api, el, root, changed }) {
    this.api = api;
    this.el = el;
    this.root = root;
    this.changed = changed || (() => {});
    this.nodes = null; // null: not a cluster node (or not loaded)
    this.timer = null;
  }

  /** Loads GET /nodes; on a server that is not a node it hides the view
   * and polls no more. */
  async load() {
    let list;
    try {
      list = await this.api.json("GET", "nodes");
    } catch (e) {
      if (e?.status === 404) {
        this.nodes = null;
        this.stop();
        this.render();
        return;
      }
      this.schedule(); // unreachable or refused for now: try again later
      return;
    }
    const before = JSON.stringify((this.nodes || []).map((n) => [n.node, n.state]));
    this.nodes = Array.isArray(list) ? list : [];
    this.render();
    if (JSON.stringify(this.nodes.map((n) => [n.node, n.state])) !== before) this.changed();
    this.schedule();
  }

  schedule() {
    this.stop();
    this.timer = setTimeout(() => this.load(), POLL_MS);
  }

  stop() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  render() {
    const root = this.root;
    root.hidden = this.nodes === null;
    if (root.hidden) return root.replaceChildren();
    const el = this.el;
    const rows = nodeRows(this.nodes);
    root.replaceChildren(
      el("h2", { class: "nodes-head", text: `Nodes (${rows.filter((r) => r.state === "up").length}/${rows.length} up)` }),
      el(
        "ul",
        { class: "nodes-list" },
        ...rows.map((r) =>
          el(
            "li",
            { class: `node-row ${r.state}`, "data-testid": "node-row", "data-node": r.name, title: r.addr ? `cluster address ${r.addr}` : "" },
            el("span", { class: "node-name", "data-testid": "node-name", text: r.name }),
            el("span", { class: `node-state ${r.state}`, "data-testid": "node-state", text: r.state }),
            el("span", { class: "node-sessions", "data-testid": "node-sessions", text: r.sessions === 1 ? "1 session" : `${r.sessions} sessions` }),
            el("span", { class: "node-seen", "data-testid": "node-seen", text: r.lastSeen ? `seen ${r.lastSeen}` : "" }),
          ),
        ),
      ),
    );
  }
}
