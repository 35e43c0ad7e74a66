// Approvals, engines, roots and titles through the client, against a real
// `harness serve --demo --permission-mode default`.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { HarnessClient } from "../src/index.js";
import { harnessServer, type TestServer } from "./harness-server.js";

let srv: TestServer;
let client: HarnessClient;

before(async () => {
  srv = await harnessServer(["--permission-mode", "default"]);
  // A client of a server that asks for approvals must ask for their events
  // (and this test reads the user message too).
  client = new HarnessClient({ baseUrl: srv.url, ...(srv.token ? { token: srv.token } : {}), events: ["approval", "user"] });
});
after(async () => {
  await srv?.stop();
});

test("an approval is answered once; the tool runs; the session remembers nothing it was not told", async () => {
  const engines = await client.engines();
  assert.deepEqual(engines.slice(0, 2).map((e) => e.name), ["claude-code", "anthropic"]);
  assert.ok(engines.every((e) => typeof e.available === "boolean"));
  const roots = await client.roots();
  assert.ok(roots.roots.includes(srv.root) && roots.demo === true);

  const s = await client.createSession({ projectRoot: srv.root, mode: "direct", engine: "claude-code", title: "approvals" });
  assert.equal(s.engine, "claude-code");
  const seen: string[] = [];
  let won: boolean | undefined;
  let again: boolean | undefined;
  for await (const ev of await client.startTurn(s.id, "please touch a file")) {
    seen.push(ev.type);
    if (ev.type === "approval:requested") {
      assert.equal(ev.toolName, "Bash");
      assert.equal(ev.input.command, "touch demo-marker.txt");
      const { pendingApprovals } = await client.getSessionWithApprovals(s.id);
      assert.equal(pendingApprovals[0]?.requestId, ev.requestId);
      won = await client.approve(s.id, ev.requestId, "allow");
      again = await client.approve(s.id, ev.requestId, "deny");
    }
    if (ev.type === "approval:resolved") {
      assert.equal(ev.decision, "allow");
      assert.equal(ev.by, "user");
    }
  }
  assert.equal(won, true, "the first answer decides");
  assert.equal(again, false, "a second answer is told it came too late (409)");
  assert.equal(seen[0], "user:message");
  assert.ok(existsSync(path.join(srv.root, "demo-marker.txt")), "the allowed tool ran");
  const renamed = await client.setTitle(s.id, "renamed");
  assert.equal(renamed.title, "renamed");
  await client.deleteSession(s.id);
});
