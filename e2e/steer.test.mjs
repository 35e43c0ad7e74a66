// Steering from the console (issue 32), in headless Chromium against
// `harness serve --demo`: on the native engine ("anthropic", which
// steers at its next model call), a person asks for the demo model's
// long answer, then, while it streams, types a message and presses
// Steer. The message shows in the running turn (the log's user:message
// of that turn), the box is cleared, and the same turn goes on to answer
// it and end: one turn, not a queued second one.

import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { suite, api, watchErrors, artifacts } from "./serve.mjs";

const T = 60_000;
const S = suite();

test("a message steered into a running turn shows in it and the turn answers it", async () => {
  const engines = await api(S.server, "/engines", undefined, "GET");
  assert.equal(engines.json.find((e) => e.name === "anthropic")?.controls?.steer, true, "the native engine steers");
  const created = await api(S.server, "/session/create", { projectRoot: S.server.root, mode: "direct", engine: "anthropic" });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  const id = created.json.session.id;

  const ctx = await S.browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await ctx.newPage();
  watchErrors(page, S.errors);
  const nodesAnswer = page.waitForResponse((r) => r.url().endsWith("/api/harness/nodes"), { timeout: T });
  await page.goto(`${S.server.url}/#s=${encodeURIComponent(id)}`);
  assert.equal((await nodesAnswer).status(), 404, "not a cluster node");
  const input = page.getByTestId("message-input");
  await input.waitFor({ timeout: T });
  const steer = page.getByTestId("steer");
  assert.ok(await steer.isHidden(), "nothing runs: no Steer");
  assert.ok(await page.getByTestId("nodes").isHidden(), "GET /nodes was 404: no Nodes view");

  await input.fill("please give me a long answer");
  await input.press("Enter");
  // While the long answer streams, Steer shows beside Queue.
  await steer.waitFor({ state: "visible", timeout: T });
  assert.equal(await page.getByTestId("send").textContent(), "Queue");
  await page.waitForFunction(() => /A long answer/.test(document.querySelector("#messages")?.innerText || ""), null, { timeout: T });

  await input.fill("steered hello");
  await steer.click();
  await page.getByTestId("steer-note").waitFor({ timeout: T });
  assert.equal((await page.getByTestId("steer-note").textContent()).trim(), "Steered: steered hello");
  assert.equal(await input.inputValue(), "", "the box is cleared once steered");
  assert.ok(await page.getByTestId("queue-panel").isHidden(), "steered, not queued");
  await page.screenshot({ path: path.join(artifacts, "steer-note.png") });

  // The same turn answers the steered message (the demo model echoes
  // it), then ends: one turn, one cost badge.
  await page.waitForFunction(() => /You said: steered hello/.test(document.querySelector("#messages")?.innerText || ""), null, { timeout: 120_000 });
  await page.waitForFunction(() => document.querySelector('[data-testid="send"]')?.textContent === "Send", null, { timeout: 120_000 });
  assert.equal(await page.getByTestId("cost-badge").count(), 1);
  assert.equal(await page.getByTestId("user-message").count(), 1);
  assert.ok(await steer.isHidden(), "the turn ended: no Steer");

  // The log holds the steer as that turn's user:message: a reload shows
  // it in the same place.
  await page.reload();
  await page.getByTestId("steer-note").waitFor({ timeout: T });
  assert.equal(await page.getByTestId("user-message").count(), 1);
  assert.equal(await page.getByTestId("cost-badge").count(), 1);

  // Steering with no turn running: the server's 409, as it says.
  const idle = await api(S.server, `/session/${encodeURIComponent(id)}/steer`, { message: "too late" });
  assert.equal(idle.status, 409);
  assert.deepEqual(S.errors, []);
  await ctx.close();
});
