// A session's prompt queue in the console (issue 32): the prompts a
// person sent while a turn ran, in the order the server runs them, each
// editable, movable and deletable until its turn starts. The queue lives
// in the server (GET/PATCH/DELETE /session/{id}/queue…); this panel shows
// it and reloads it on the session's prompt:queued and prompt:dequeued
// events. Prompt text reaches the page only through textContent.

import { STREAM_EVENTS } from "./api.js";

const MAX_FOLLOWS = 40; // re-follows without the queue moving, at most

export class QueuePanel {
  /**
   * @param {object} o
   * @param {import("./api.js").Api} o.api
   * @param {HTMLElement} o.root the panel (hidden when the queue is empty)
   * @param {(msg: string) => void} o.toast
   */
  constructor({ api, root, toast }) {
    this.api = api;
    this.root = root;
    this.toast = toast;
    this.id = null;
    this.prompts = [];
    this.editing = null; // promptId being edited
    this.loading = null;
    this.again = false;
    this.follows = 0;
  }

  path(id, promptId = "") {
    return `session/${encodeURIComponent(id)}/queue` + (promptId ? `/${encodeURIComponent(promptId)}` : "");
  }

  /** Shows session id's queue (null: none). */
  show(id) {
    this.id = id;
    this.prompts = [];
    this.editing = null;
    this.follows = 0;
    this.render();
    if (id) this.reload();
  }

  /** Reloads the list; a reload asked for while one runs runs after it. */
  async reload() {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    const id = this.id;
    this.loading = (async () => {
      try {
        const j = await this.api.json("GET", this.path(id));
        if (this.id !== id) return;
        const before = this.prompts.map((p) => p.promptId).join();
        this.prompts = Array.isArray(j?.prompts) ? j.prompts : [];
        if (this.prompts.map((p) => p.promptId).join() !== before) this.follows = 0;
        if (this.editing && !this.prompts.some((p) => p.promptId === this.editing)) this.editing = null; // it started
        this.render();
      } catch (e) {
        if (e?.status !== 404 && e?.status !== 401) this.toast(`Could not load the queue: ${e.message}`);
      }
    })();
    try {
      await this.loading;
    } finally {
      this.loading = null;
    }
    if (this.again) {
      this.again = false;
      return this.reload();
    }
  }

  /** Feeds one event of the session shown. */
  observe(ev, id) {
    if (id === this.id && (ev?.type === "prompt:queued" || ev?.type === "prompt:dequeued")) this.reload();
  }

  /** Whether the console should follow the session again once a turn's
   * stream ends: something queued will start a turn of its own. */
  shouldFollow(id) {
    return id === this.id && this.prompts.length > 0 && this.follows++ < MAX_FOLLOWS;
  }

  /** Queues text behind the running turn (POST /turn {queue: true}).
   * Resolves {queued: true} when queued, or {res} when the session was
   * idle after all and the turn started (its SSE response). */
  async add(id, text) {
    const res = await this.api.request("POST", `turn?${STREAM_EVENTS}`, {
      body: { sessionId: id, message: text, queue: true },
      headers: { Accept: "text/event-stream" },
    });
    if (res.status === 202) {
      await res.json().catch(() => null);
      if (id === this.id) await this.reload();
      return { queued: true };
    }
    return { res };
  }

  async edit(promptId, body) {
    const id = this.id;
    try {
      const j = await this.api.json("PATCH", this.path(id, promptId), body);
      if (this.id !== id) return;
      this.prompts = Array.isArray(j?.prompts) ? j.prompts : this.prompts;
      this.editing = null;
      this.render();
    } catch (e) {
      this.toast(e?.status === 404 ? "That prompt has started already or is gone." : `Could not change it: ${e.message}`);
      this.editing = null;
      this.reload();
    }
  }

  async remove(promptId) {
    const id = this.id;
    try {
      await this.api.request("DELETE", this.path(id, promptId), { ok: [404] });
    } catch (e) {
      this.toast(`Could not delete it: ${e.message}`);
    }
    if (this.id === id) this.reload();
  }

  render() {
    const root = this.root;
    root.replaceChildren();
    root.hidden = this.prompts.length === 0;
    if (root.hidden) return;
    const head = document.createElement("div");
    head.className = "queue-head";
    head.textContent = this.prompts.length === 1 ? "1 prompt queued: it runs when this turn ends" : `${this.prompts.length} prompts queued: they run in this order, one turn each`;
    const list = document.createElement("ol");
    list.className = "queue-list";
    this.prompts.forEach((p, i) => list.append(this.item(p, i)));
    root.append(head, list);
  }

  item(p, i) {
    const li = document.createElement("li");
    li.className = "queued";
    li.dataset.testid = "queued-prompt";
    li.dataset.promptId = p.promptId;
    const button = (text, testid, title, onclick, disabled = false) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "btn small";
      b.textContent = text;
      b.title = title;
      b.setAttribute("aria-label", title);
      b.dataset.testid = testid;
      b.disabled = disabled;
      b.addEventListener("click", onclick);
      return b;
    };
    if (this.editing === p.promptId) {
      const area = document.createElement("textarea");
      area.value = p.message;
      area.rows = 2;
      area.dataset.testid = "queued-edit-input";
      const save = () => {
        const text = area.value;
        if (!text.trim()) return this.toast("A queued prompt cannot be empty; delete it instead.");
        this.edit(p.promptId, { message: text });
      };
      area.addEventListener("keydown", (e) => {
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
          e.preventDefault();
          save();
        } else if (e.key === "Escape") {
          e.stopPropagation();
          this.editing = null;
          this.render();
        }
      });
      li.append(
        area,
        button("Save", "queued-save", "Save the prompt", save),
        button("Cancel", "queued-cancel", "Keep the prompt as it was", () => {
          this.editing = null;
          this.render();
        }),
      );
      queueMicrotask(() => area.focus());
      return li;
    }
    const text = document.createElement("span");
    text.className = "queued-text";
    text.dataset.testid = "queued-text";
    text.textContent = p.message;
    li.append(
      text,
      button("↑", "queued-up", "Run it earlier", () => this.edit(p.promptId, { position: i - 1 }), i === 0),
      button("↓", "queued-down", "Run it later", () => this.edit(p.promptId, { position: i + 1 }), i === this.prompts.length - 1),
      button("Edit", "queued-edit", "Edit the prompt", () => {
        this.editing = p.promptId;
        this.render();
      }),
      button("Delete", "queued-delete", "Delete the prompt", () => this.remove(p.promptId)),
    );
    return li;
  }
}
