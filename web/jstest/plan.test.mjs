// The transcript's plan review and steering blocks (plan.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Transcript } from "../static/transcript.js";
import { planBlock } from "../static/plan.js";

test("plan:ready is a plan block of its turn; plan:resolved settles it", () => {
  const t = new Transcript();
  t.apply({ type: "user:message", text: "plan it", seq: 1 });
  t.apply({ type: "session:init", seq: 2 });
  t.apply({ type: "plan:ready", planId: "p1", plan: "# the plan", expiresAt: "2026-11-26T03:00:00Z", seq: 3 });
  const b = t.turns[0].blocks.find((x) => x.kind === "plan");
  assert.equal(b.plan, "# the plan");
  assert.equal(b.resolved, null);
  t.apply({ type: "plan:resolved", planId: "p1", decision: "revise", feedback: "smaller", by: "user", seq: 4 });
  assert.deepEqual(b.resolved, { decision: "revise", mode: "", feedback: "smaller", by: "user" });
  assert.equal(t.turns.length, 1);
});

test("a user:message inside a running turn is a steer block, not a new turn", () => {
  const t = new Transcript();
  t.apply({ type: "user:message", text: "start", seq: 1 });
  t.apply({ type: "session:init", seq: 2 });
  t.apply({ type: "user:message", text: "use tabs", seq: 3 });
  assert.equal(t.turns.length, 1);
  assert.equal(t.turns[0].user, "start");
  assert.deepEqual(t.turns[0].blocks.map((b) => [b.kind, b.text]), [["steer", "use tabs"]]);
  t.apply({ type: "process:exit", code: 0, seq: 4 });
  t.apply({ type: "user:message", text: "next", seq: 5 });
  assert.equal(t.turns.length, 2);
});

test("planBlock tolerates a malformed event", () => {
  assert.deepEqual(planBlock({}), { planId: "", plan: "", expiresAt: "", resolved: null });
});
