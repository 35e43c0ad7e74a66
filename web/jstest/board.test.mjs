// Unit tests of the board's state model: node --test web/jstest/
import { test } from "node:test";
import assert from "node:assert/strict";
import { applyEvent, boardState, diffSize } from "../static/board.js";

const card = (summary = {}) => ({ summary: { running: false, pendingApprovals: 0, ...summary }, seq: 0, turnOpen: false, pending: new Set(), last: "" });

test("a card follows a turn: running, waiting for a person, running, done", () => {
  const c = card();
  assert.equal(boardState(c), "idle");
  assert.equal(applyEvent(c, { type: "user:message", seq: 1 }), false);
  assert.equal(boardState(c), "running");
  applyEvent(c, { type: "approval:requested", seq: 2, requestId: "r1" });
  assert.equal(boardState(c), "waiting");
  applyEvent(c, { type: "approval:resolved", seq: 3, requestId: "r1" });
  assert.equal(boardState(c), "running");
  assert.equal(applyEvent(c, { type: "session:complete", seq: 4 }), true);
  assert.equal(boardState(c), "done");
  assert.equal(c.seq, 4);
});

test("a failed turn is failed, an interrupted one stopped; the next turn runs again", () => {
  const c = card();
  applyEvent(c, { type: "user:message", seq: 1 });
  applyEvent(c, { type: "session:error", seq: 2, kind: "api_error" });
  assert.equal(boardState(c), "failed");
  applyEvent(c, { type: "user:message", seq: 3 });
  assert.equal(boardState(c), "running");
  applyEvent(c, { type: "session:error", seq: 4, kind: "interrupted" });
  assert.equal(boardState(c), "stopped");
});

test("the list's running and pending approvals count before any event", () => {
  assert.equal(boardState(card({ running: true })), "running");
  assert.equal(boardState(card({ running: true, pendingApprovals: 1 })), "waiting");
});

test("an event older than the card's position does not move it back", () => {
  const c = card();
  applyEvent(c, { type: "user:message", seq: 9 });
  applyEvent(c, { type: "chat:delta", seq: 5 });
  assert.equal(c.seq, 9);
});

test("diffSize adds the files' lines", () => {
  assert.deepEqual(diffSize({ files: [{ additions: 2, deletions: 1 }, { additions: 3, deletions: 0, binary: false }] }), { files: 2, add: 5, del: 1 });
  assert.deepEqual(diffSize({ files: [] }), { files: 0, add: 0, del: 0 });
  assert.deepEqual(diffSize(null), { files: 0, add: 0, del: 0 });
});
