// The transcript and the queue's events: node --test web/jstest/
import { test } from "node:test";
import assert from "node:assert/strict";
import { Transcript } from "../static/transcript.js";

test("prompt:queued and prompt:dequeued start no turn; the queued prompt's user:message does", () => {
  const t = new Transcript();
  let seq = 0;
  const ev = (type, f = {}) => t.apply({ type, sessionId: "s", seq: ++seq, ...f });
  ev("user:message", { text: "first" });
  ev("session:init", { model: "m" });
  ev("prompt:queued", { promptId: "p1", position: 0, message: "second" });
  ev("session:complete", { result: "ok" });
  ev("process:exit", { code: 0 });
  assert.equal(t.turns.length, 1);
  assert.equal(t.running, false);
  // Queued after the turn ended, then deleted: still no turn runs.
  ev("prompt:queued", { promptId: "p2", position: 1, message: "third" });
  ev("prompt:dequeued", { promptId: "p2", reason: "deleted" });
  assert.equal(t.turns.length, 1);
  assert.equal(t.running, false);
  assert.equal(t.lastSeq, seq, "their seqs are taken, so a resumed stream does not replay them");
  // The queued prompt's turn: prompt:dequeued, then its user:message.
  ev("prompt:dequeued", { promptId: "p1", reason: "started" });
  ev("user:message", { text: "second" });
  ev("session:init", { model: "m" });
  assert.equal(t.turns.length, 2);
  assert.equal(t.turns[1].user, "second");
  assert.equal(t.running, true);
});
