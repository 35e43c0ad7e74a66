// The console's own notifications (issue 32) in headless Chromium against
// `harness serve --demo`: the notification permission is granted through
// the DevTools protocol (Browser.grantPermissions); a turn that ends, and
// an approval that waits, while the tab is hidden show a real browser
// Notification (its "show" event fires) and a count in the tab's title,
// which goes when the tab is seen again; a visible tab is not called.
//
// Headless Chromium keeps every tab visible (switching or minimizing
// changes nothing), so the test hides the tab through the page's own
// document.hidden and visibilitychange, as the console reads them.

import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { suite, newSession, watchErrors, artifacts } from "./serve.mjs";

const T = 60_000;
const S = suite(["--permission-mode", "default"]);

test("a turn that ends in a hidden tab calls the person; a visible tab is not called", async () => {
  const ctx = await S.browser.newContext({ viewport: { width: 1200, height: 800 } });
  const page = await ctx.newPage();
  watchErrors(page, S.errors);
  await page.addInitScript(() => {
    // Every notification the page makes, and whether the browser showed it.
    window.__shown = [];
    const Real = window.Notification;
    window.Notification = class extends Real {
      constructor(title, opts) {
        super(title, opts);
        const rec = { title, body: opts?.body, shown: false };
        window.__shown.push(rec);
        this.addEventListener("show", () => (rec.shown = true));
      }
    };
    let hidden = false;
    Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (hidden ? "hidden" : "visible") });
    window.__setHidden = (h) => {
      hidden = h;
      document.dispatchEvent(new Event("visibilitychange"));
    };
  });
  const id = await newSession(S.server);
  const cdp = await ctx.newCDPSession(page);
  const { targetInfo } = await cdp.send("Target.getTargetInfo");
  await cdp.send("Browser.grantPermissions", {
    permissions: ["notifications"],
    origin: new URL(S.server.url).origin,
    browserContextId: targetInfo.browserContextId,
  });
  await page.goto(`${S.server.url}/#s=${encodeURIComponent(id)}`);
  assert.equal(await page.evaluate(() => Notification.permission), "granted");
  const input = page.getByTestId("message-input");
  await input.waitFor({ timeout: T });
  const base = await page.title();

  // Visible: a turn ends, nobody is called.
  await input.fill("hello");
  await input.press("Enter");
  await page.getByTestId("cost-badge").first().waitFor({ timeout: T });
  await page.getByTestId("interrupt").waitFor({ state: "hidden", timeout: T });
  assert.deepEqual(await page.evaluate(() => window.__shown), []);
  assert.equal(await page.title(), base);

  // Hidden: the demo's tool asks (approval:requested), then, once
  // allowed, the turn ends: two notifications, both shown, counted.
  await input.fill("please touch a marker file");
  await page.evaluate(() => window.__setHidden(true));
  await input.press("Enter");
  await page.waitForFunction(() => window.__shown.some((n) => n.shown && n.title.startsWith("Approval needed")), null, { timeout: T });
  assert.equal(await page.title(), `(1) ${base}`);
  await page.getByTestId("approval-allow").first().click();
  await page.waitForFunction(() => window.__shown.some((n) => n.shown && n.title === "Turn completed"), null, { timeout: T });
  const shown = await page.evaluate(() => window.__shown);
  assert.deepEqual(
    shown.map((n) => n.title),
    ["Approval needed: Bash", "Turn completed"],
  );
  assert.ok(shown.every((n) => n.body === "hello"), `the session's title in the body: ${JSON.stringify(shown)}`);
  assert.equal(await page.title(), `(2) ${base}`);
  await page.screenshot({ path: path.join(artifacts, "notify-hidden-count.png") });

  // Seen again: the count goes.
  await page.evaluate(() => window.__setHidden(false));
  assert.equal(await page.title(), base);

  // A reload replays the history: nobody is called for it.
  await page.evaluate(() => window.__setHidden(true));
  await page.reload();
  await page.evaluate(() => window.__setHidden(true));
  await page.getByTestId("cost-badge").nth(1).waitFor({ timeout: T });
  assert.deepEqual(await page.evaluate(() => window.__shown), []);
  assert.equal(await page.title(), base);
  assert.deepEqual(S.errors, []);
  await ctx.close();
});
