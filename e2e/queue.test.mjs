// The session's prompt queue in the console (issue 32), in headless
// Chromium against `harness serve --demo --permission-mode default`: while
// a turn waits on an approval, a person queues three prompts with the
// composer (Send reads Queue), edits one, moves one and deletes one; the
// server's queue says the same; once the turn is allowed and ends, the
// queued prompts run in their order, each as its own turn, the console
// following them, and the panel empties.

import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { suite, newSession, api, watchErrors, artifacts } from "./serve.mjs";

const T = 60_000;
const S = suite(["--permission-mode", "default"]);
const texts = (page) => page.getByTestId("queued-text").allInnerTexts();

test("prompts queued in the console run in the order a person left them", async () => {
  const ctx = await S.browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await ctx.newPage();
  watchErrors(page, S.errors);
  const id = await newSession(S.server);
  await page.goto(`${S.server.url}/#s=${encodeURIComponent(id)}`);
  const input = page.getByTestId("message-input");
  await input.waitFor({ timeout: T });

  // A turn that waits for a person: its tool asks.
  await input.fill("please touch a marker file");
  await input.press("Enter");
  await page.getByTestId("approval-card").first().waitFor({ timeout: T });
  await page.waitForFunction(() => document.querySelector('[data-testid="send"]')?.textContent === "Queue", null, { timeout: T });

  for (const msg of ["alpha prompt", "bravo prompt", "charlie prompt"]) {
    await input.fill(msg);
    await input.press("Enter");
    await page.waitForFunction((m) => [...document.querySelectorAll('[data-testid="queued-text"]')].some((e) => e.textContent === m), msg, { timeout: T });
  }
  assert.deepEqual(await texts(page), ["alpha prompt", "bravo prompt", "charlie prompt"]);
  assert.equal(await input.inputValue(), "", "the box is cleared once queued");
  // The first cannot move up, the last not down.
  const items = page.getByTestId("queued-prompt");
  assert.ok(await items.nth(0).getByTestId("queued-up").isDisabled());
  assert.ok(await items.nth(2).getByTestId("queued-down").isDisabled());

  // Move charlie up, before bravo.
  await items.nth(2).getByTestId("queued-up").click();
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="queued-text"]')].map((e) => e.textContent).join() === "alpha prompt,charlie prompt,bravo prompt", null, { timeout: T });
  // Edit alpha.
  await items.nth(0).getByTestId("queued-edit").click();
  const edit = page.getByTestId("queued-edit-input");
  await edit.fill("alpha edited");
  await page.getByTestId("queued-save").click();
  await page.waitForFunction(() => document.querySelector('[data-testid="queued-text"]')?.textContent === "alpha edited", null, { timeout: T });
  // Delete bravo.
  await items.nth(2).getByTestId("queued-delete").click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="queued-prompt"]').length === 2, null, { timeout: T });
  assert.deepEqual(await texts(page), ["alpha edited", "charlie prompt"]);
  await page.screenshot({ path: path.join(artifacts, "queue-panel.png") });

  // The server holds what the panel shows.
  const q = await api(S.server, `/session/${encodeURIComponent(id)}/queue`, undefined, "GET");
  assert.equal(q.status, 200);
  assert.deepEqual(q.json.prompts.map((p) => p.message), ["alpha edited", "charlie prompt"]);

  // Allow the tool: the turn ends, then the queued prompts run, in order.
  await page.getByTestId("approval-allow").first().click();
  await page.waitForFunction(
    () => [...document.querySelectorAll('[data-testid="user-message"]')].map((e) => e.innerText.trim()).join("|") === "please touch a marker file|alpha edited|charlie prompt",
    null,
    { timeout: 120_000 },
  );
  await page.getByTestId("queue-panel").waitFor({ state: "hidden", timeout: T });
  // Each ran as a turn of its own, to its end.
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="cost-badge"]').length === 3, null, { timeout: T });
  await page.waitForFunction(() => document.querySelector('[data-testid="send"]')?.textContent === "Send", null, { timeout: T });
  const after = await api(S.server, `/session/${encodeURIComponent(id)}/queue`, undefined, "GET");
  assert.deepEqual(after.json.prompts, []);

  // A reload shows the same three turns, no phantom one from the queue's events.
  await page.reload();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="cost-badge"]').length === 3, null, { timeout: T });
  assert.equal(await page.getByTestId("user-message").count(), 3);
  assert.ok(await page.getByTestId("interrupt").isHidden(), "nothing runs");
  assert.deepEqual(S.errors, []);
  await ctx.close();
});
