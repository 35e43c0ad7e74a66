// The cluster's nodes in the console (issue 36), in headless Chromium
// against `harness serve --demo --node solo --cluster-listen
// 127.0.0.1:<free port>`: GET /nodes answers there, so the sidebar shows
// the Nodes view with the node up, the sessions it owns and when it was
// last seen, and each session in the list and on the board carries its
// node; a session whose node is down is marked and takes no message.
// (steer.test.mjs checks that a server without --node shows no
// Nodes view.)

import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import path from "node:path";
import { suite, newSession, api, watchErrors, artifacts } from "./serve.mjs";

const T = 60_000;

/** A port free now on loopback (the node's cluster listener). */
const freePort = () =>
  new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const S = suite(["--node", "solo", "--cluster-listen", `127.0.0.1:${await freePort()}`]);

test("a cluster node's console shows its nodes and each session's node", async () => {
  const id = await newSession(S.server);
  const listed = await api(S.server, "/session/list", undefined, "GET");
  assert.equal(listed.json.find((s) => s.id === id)?.node, "solo", "the session's summary names its node");

  const ctx = await S.browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await ctx.newPage();
  watchErrors(page, S.errors);
  await page.goto(`${S.server.url}/#s=${encodeURIComponent(id)}`);
  const row = page.locator('[data-testid="node-row"][data-node="solo"]');
  await row.waitFor({ timeout: T });
  assert.equal(await row.getByTestId("node-name").textContent(), "solo");
  assert.equal(await row.getByTestId("node-state").textContent(), "up");
  await page.waitForFunction(() => document.querySelector('[data-node="solo"] [data-testid="node-sessions"]')?.textContent === "1 session", null, { timeout: T });
  assert.match(await row.getByTestId("node-seen").textContent(), /^seen \d+ (s|min) ago$/);
  assert.equal(await page.getByTestId("nodes").locator("h2").textContent(), "Nodes (1/1 up)");

  // The session list marks the session's node, up: send is on.
  const badge = page.locator(`[data-testid="session-item"][data-session-id="${id}"] [data-testid="node-badge"]`);
  await badge.waitFor({ timeout: T });
  assert.equal(await badge.textContent(), "solo");
  assert.equal(await badge.getAttribute("data-node-state"), "up");
  const input = page.getByTestId("message-input");
  await input.fill("hello");
  assert.ok(await page.getByTestId("send").isEnabled());

  // The board's card too.
  await page.locator("#board-button").click();
  await page.locator('[data-testid="board-grid"] [data-testid="node-badge"]').first().waitFor({ timeout: T });
  assert.equal(await page.locator('[data-testid="board-grid"] [data-testid="node-badge"]').first().textContent(), "solo");
  await page.screenshot({ path: path.join(artifacts, "nodes.png") });

  // A node whose lease expired: one node cannot show it of itself (it is
  // the server), so the server's answers are changed on the way to the
  // page as a surviving node would give them: the node down, its session
  // marked, its send off with the reason, the Nodes view saying so.
  const down = async (route) => {
    const res = await route.fetch();
    const body = await res.json();
    for (const x of body) {
      if (x.id === id) x.nodeState = "down"; // a session's summary
      else if (x.node === "solo") x.state = "down"; // the node
    }
    await route.fulfill({ response: res, json: body });
  };
  await page.route("**/api/harness/nodes", down);
  await page.route("**/api/harness/session/list", down);
  await page.reload();
  await page.waitForFunction(() => document.querySelector('[data-testid="node-badge"]')?.dataset.nodeState === "down", null, { timeout: T });
  assert.equal(await badge.textContent(), "solo down");
  assert.equal(await row.getByTestId("node-state").textContent(), "down");
  assert.equal(await page.getByTestId("nodes").locator("h2").textContent(), "Nodes (0/1 up)");
  await input.fill("hello");
  await page.waitForFunction(() => document.querySelector('[data-testid="send"]')?.disabled, null, { timeout: T });
  assert.match(await page.getByTestId("send").getAttribute("title"), /node solo is down/);
  await input.press("Enter");
  await page.locator(".toast", { hasText: "node solo is down" }).waitFor({ timeout: T });
  assert.equal(await page.getByTestId("user-message").count(), 0, "nothing was sent");
  await page.screenshot({ path: path.join(artifacts, "nodes-down.png") });
  assert.deepEqual(S.errors, []);
  await ctx.close();
});
