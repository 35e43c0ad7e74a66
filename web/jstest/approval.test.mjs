// The approval card's question and its "Always allow" (approval.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Transcript } from "../static/transcript.js";
import { approvalQuestion, offersAlways } from "../static/approval.js";

function approval(extra) {
  const t = new Transcript();
  t.apply({ type: "user:message", text: "go", seq: 1 });
  t.apply({ type: "session:init", seq: 2 });
  t.apply({ type: "approval:requested", requestId: "r1", toolName: "shell", input: { command: "make install" }, expiresAt: "2026-11-26T03:00:00Z", seq: 3, ...extra });
  return t.turns[0].blocks.find((x) => x.kind === "approval");
}

test("a use marked unsandboxed says it may run outside the sandbox and offers no always", () => {
  const b = approval({ unsandboxed: true });
  assert.equal(b.unsandboxed, true);
  assert.match(approvalQuestion(b), /^shell wants to run \(maybe outside its sandbox\): make install$/);
  assert.equal(offersAlways(b), false);
});

test("an ordinary use is asked as before, with always", () => {
  const b = approval({});
  assert.equal(b.unsandboxed, false);
  assert.doesNotMatch(approvalQuestion(b), /sandbox/);
  assert.match(approvalQuestion(b), /^shell wants to run/);
  assert.equal(offersAlways(b), true);
});

test("a marked request names the host it would reach and the root it would write under", () => {
  const host = approval({ unsandboxed: true, input: { command: "curl x", host: "example.com" } });
  assert.equal(approvalQuestion(host), "shell wants to run (maybe outside its sandbox): curl x, reaching example.com");
  const root = approval({ unsandboxed: true, toolName: "apply_patch", input: { grantRoot: "/home/u" } });
  assert.match(approvalQuestion(root), /, and writes under \/home\/u for the session$/);
});
