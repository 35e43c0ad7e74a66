// The example as its README runs it, driven in headless Chromium: a real
// `harness serve --demo` (with a token) and `next start` of the built app.
//
//   - through the route handler (the page's way): pick a persona and mode,
//     create a session, a streamed answer with its tool call and result,
//     an approval answered, an interrupt, an error toast, a reload that
//     shows the session again, resuming a session from the list;
//   - through the rewrite: a turn's SSE read with `curl -N` (its approval
//     request arrives while the turn waits on it, so nothing buffers the
//     stream), and Last-Event-ID passed on by both ways.
//
// The app must have been built with HARNESS_URL=http://127.0.0.1:$HARNESS_GATEWAY_PORT
// (rewrites are fixed at build time); run.sh does both.
//
//   HARNESS_BIN            the harness binary (default ../../bin/harness)
//   HARNESS_GATEWAY_PORT   the gateway's port the app was built for
//   CHROMIUM               the browser (default /usr/bin/chromium)

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const appDir = path.resolve(here, "..");
const artifacts = path.join(appDir, "test-artifacts");
const T = 30_000;

const procs = [];
let gw; // {url, token, root}
let app; // the Next.js origin, http://127.0.0.1:PORT
let browser;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts a child whose output is kept for the failure message; resolves
 * once `ready(stdout)` is true. */
function start(name, cmd, args, opts, ready) {
  const child = spawn(cmd, args, { ...opts, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const p = { name, child, out: "" };
  procs.push(p);
  child.stdout.on("data", (b) => (p.out += b));
  child.stderr.on("data", (b) => (p.out += b));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} not ready in 90 s:\n${p.out}`)), 90_000);
    const check = () => {
      if (ready(p.out)) {
        clearTimeout(timer);
        child.stdout.off("data", check);
        resolve(p);
      }
    };
    child.stdout.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before it was ready:\n${p.out}`));
    });
  });
}

async function stopAll() {
  for (const p of procs.reverse()) {
    const c = p.child;
    if (c.exitCode !== null || c.signalCode !== null) continue;
    const gone = new Promise((r) => c.once("exit", r));
    try {
      process.kill(-c.pid, "SIGTERM"); // its group: next start has workers
    } catch {}
    const k = setTimeout(() => {
      try {
        process.kill(-c.pid, "SIGKILL");
      } catch {}
    }, 5000);
    await gone;
    clearTimeout(k);
  }
}

before(async () => {
  fs.mkdirSync(artifacts, { recursive: true });
  const gport = Number(process.env.HARNESS_GATEWAY_PORT);
  assert.ok(gport > 0, "set HARNESS_GATEWAY_PORT to the gateway port the app was built for (run.sh does)");
  const bin = path.resolve(appDir, process.env.HARNESS_BIN || "../../bin/harness");
  assert.ok(fs.existsSync(bin), `harness binary not found at ${bin}`);
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "harness-nextjs-")));
  fs.writeFileSync(path.join(root, "README.md"), "# demo project\n");
  const token = `nextjs-${process.pid}-${Date.now()}`;
  const aport = await freePort();
  app = `http://127.0.0.1:${aport}`;
  // --allow-origin: the rewrite passes the browser's Origin on.
  await start(
    "harness serve",
    bin,
    ["serve", "--demo", "--addr", `127.0.0.1:${gport}`, "--root", root, "--allow-origin", app],
    { env: { ...process.env, HARNESS_TOKEN: token } },
    (out) => /listening on http/.test(out),
  );
  gw = { url: `http://127.0.0.1:${gport}`, token, root };
  await start(
    "next start",
    path.join(appDir, "node_modules", ".bin", "next"),
    ["start", "-H", "127.0.0.1", "-p", String(aport)],
    { cwd: appDir, env: { ...process.env, HARNESS_URL: gw.url, HARNESS_TOKEN: token, NEXT_TELEMETRY_DISABLED: "1" } },
    (out) => /Ready in|✓ Ready/.test(out),
  );
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  await stopAll();
  if (gw) fs.rmSync(gw.root, { recursive: true, force: true });
});

const byId = (page, id) => page.getByTestId(id);
const shot = (page, name) => page.screenshot({ path: path.join(artifacts, `${name}.png`) });

test("the page chats through the route handler: stream, tool, approval, interrupt, toast, reload, resume", async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const requests = [];
  page.on("request", (r) => requests.push({ url: r.url(), auth: r.headers()["authorization"] }));
  await page.goto(app + "/");

  // --- pick a persona and a mode; the allowed root is offered
  await page.waitForFunction((root) => document.querySelector('[data-testid="root-input"]')?.value === root, gw.root, { timeout: T });
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="persona-select"] option')].some((o) => o.value === "REVIEWER"), null, { timeout: T });
  await byId(page, "persona-select").selectOption("REVIEWER");
  await byId(page, "mode-select").selectOption("workbench");
  await byId(page, "create-session").click();
  const item = byId(page, "session-item");
  await item.first().waitFor({ timeout: T });
  assert.equal(await item.count(), 1);
  const sessionId = await item.first().getAttribute("data-session-id");
  assert.match(await item.first().innerText(), /REVIEWER · workbench/);
  assert.match(await item.first().getAttribute("class"), /active/);
  assert.equal(new URL(page.url()).hash, `#s=${sessionId}`);

  // --- a streamed answer, token by token, with its tool call and result
  const input = byId(page, "message-input");
  await input.fill("What is in this project?");
  // Count how often the answer's text changes while it streams.
  await page.evaluate(() => {
    window.__textChanges = 0;
    new MutationObserver(() => window.__textChanges++).observe(document.querySelector('[data-testid="chat-pane"]'), {
      subtree: true,
      characterData: true,
      childList: true,
    });
  });
  await input.press("Enter");
  // Looked at in the frame where the user's message first shows.
  const atFirstUser = await page.waitForFunction(
    () => {
      const u = document.querySelector('[data-testid="user-message"]');
      return u ? { text: u.innerText, disabled: document.querySelector('[data-testid="message-input"]').disabled } : null;
    },
    null,
    { timeout: T, polling: "raf" },
  );
  assert.deepEqual(await atFirstUser.jsonValue(), { text: "What is in this project?", disabled: true }, "the input is disabled while the turn runs");
  const answer = byId(page, "assistant-message").first();
  // The first text is on screen while the turn still runs (looked at in the
  // frame where it first shows): the stream is not buffered until the end.
  const runningAtFirstText = await page.waitForFunction(
    () => (document.querySelector('[data-testid="assistant-message"]') ? { running: !!document.querySelector('[data-testid="interrupt"]') } : null),
    null,
    { timeout: 60_000, polling: "raf" },
  );
  assert.deepEqual(await runningAtFirstText.jsonValue(), { running: true }, "text arrived before the turn ended");
  const tool = byId(page, "tool-call").first();
  await tool.getByTestId("tool-result").waitFor({ timeout: 60_000 });
  assert.equal(await tool.getByTestId("tool-name").innerText(), "Bash");
  assert.match(await tool.innerText(), /ls -la/);
  // The result is text, lines and all (not JSON with \n in it).
  assert.match(await tool.getByTestId("tool-result").innerText(), /README\.md/);
  assert.ok((await tool.getByTestId("tool-result").innerText()).split("\n").length > 2);
  await page.waitForFunction(() => !document.querySelector('[data-testid="message-input"]').disabled, null, { timeout: 60_000 });
  assert.ok((await page.evaluate(() => window.__textChanges)) > 10, "the answer grew in many steps");
  assert.match(await answer.innerText(), /Demo answer/);
  // Issue 34.6: the answer's markdown is rendered, not shown raw.
  assert.equal(await answer.locator("h4").first().innerText(), "Demo answer");
  assert.match(await answer.locator("pre code").first().innerText(), /fmt\.Println/);
  assert.ok((await answer.locator("li").count()) >= 3, "the list is a list");
  assert.equal(await answer.locator("strong").first().innerText(), "demo");
  assert.doesNotMatch(await answer.innerText(), /\*\*|```|^## /m, "no markdown syntax left on screen");
  await page.waitForFunction(() => document.querySelector('[data-testid="status-state"]')?.innerText === "idle", null, { timeout: T });
  assert.match(await byId(page, "status-cost").innerText(), /^\$\d/);
  await shot(page, "01-answer-with-tool");

  // --- an approval, answered in the page
  await input.fill("please touch a marker file");
  await input.press("Enter");
  const card = byId(page, "approval-card").first();
  await card.waitFor({ timeout: 60_000 });
  assert.match(await card.innerText(), /Bash wants to run: touch demo-marker\.txt/);
  assert.equal(await byId(page, "status-state").innerText(), "waiting for approval");
  assert.ok(!fs.existsSync(path.join(gw.root, "demo-marker.txt")), "nothing runs before the answer");
  await shot(page, "02-approval-pending");
  await card.getByTestId("approval-allow").click();
  await card.getByTestId("approval-outcome").filter({ hasText: "Allowed" }).waitFor({ timeout: T });
  await page.waitForFunction(() => !document.querySelector('[data-testid="message-input"]').disabled, null, { timeout: 60_000 });
  assert.ok(fs.existsSync(path.join(gw.root, "demo-marker.txt")), "the approved tool ran");

  // --- an interrupt of a long answer; the input comes back on process:exit
  await input.fill("Please write a long answer.");
  await input.press("Enter");
  const long = byId(page, "assistant-message").last();
  await page.waitForFunction(
    () => {
      const all = document.querySelectorAll('[data-testid="assistant-message"]');
      return all.length > 0 && /A long answer/.test(all[all.length - 1].innerText) && all[all.length - 1].innerText.length > 40;
    },
    null,
    { timeout: 60_000 },
  );
  const partial = await long.innerText();
  await byId(page, "interrupt").click();
  await byId(page, "mark-interrupted").waitFor({ timeout: T });
  await page.waitForFunction(() => !document.querySelector('[data-testid="message-input"]').disabled, null, { timeout: T });
  assert.ok((await long.innerText()).startsWith(partial), "the partial answer stays");
  assert.equal(await byId(page, "status-state").innerText(), "interrupted");
  await shot(page, "03-interrupted");

  // --- an error toast: a project root the gateway does not allow
  await byId(page, "root-input").fill("/");
  await byId(page, "create-session").click();
  await byId(page, "toast").waitFor({ timeout: T });
  assert.match(await byId(page, "toast").innerText(), /403/);
  await shot(page, "04-error-toast");
  await byId(page, "toast").getByRole("button").click();
  await byId(page, "toast").waitFor({ state: "detached", timeout: T });

  const before = {
    users: await byId(page, "user-message").allInnerTexts(),
    answers: await byId(page, "assistant-message").count(),
    tools: await byId(page, "tool-call").count(),
    first: await answer.innerText(),
  };

  // --- a reload shows the session again, from its event log
  await page.reload();
  await byId(page, "mark-interrupted").waitFor({ timeout: T });
  assert.deepEqual(await byId(page, "user-message").allInnerTexts(), before.users);
  assert.equal(await byId(page, "assistant-message").count(), before.answers);
  assert.equal(await byId(page, "tool-call").count(), before.tools);
  assert.equal(await byId(page, "assistant-message").first().innerText(), before.first);
  assert.match(await byId(page, "approval-outcome").first().innerText(), /Allowed/);
  // The history ends with the interrupted turn's process:exit: the input
  // comes back once the replay is read.
  await page.waitForFunction(() => !document.querySelector('[data-testid="message-input"]').disabled, null, { timeout: T });
  await shot(page, "05-after-reload");

  // --- a second session, then the first resumed from the list
  await byId(page, "root-input").fill(gw.root);
  await byId(page, "persona-select").selectOption("");
  await byId(page, "mode-select").selectOption("direct");
  await byId(page, "create-session").click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="session-item"]').length === 2, null, { timeout: T });
  await page.waitForFunction((id) => !location.hash.includes(id), sessionId, { timeout: T });
  assert.equal(await byId(page, "user-message").count(), 0, "a new session starts empty");
  await page.locator(`[data-testid="session-item"][data-session-id="${sessionId}"]`).click();
  await byId(page, "mark-interrupted").waitFor({ timeout: T });
  assert.deepEqual(await byId(page, "user-message").allInnerTexts(), before.users);
  await input.fill("are you there?");
  await input.press("Enter");
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="user-message"]').length === 4, null, { timeout: T });
  await page.waitForFunction(() => !document.querySelector('[data-testid="message-input"]').disabled, null, { timeout: 60_000 });
  assert.ok((await byId(page, "assistant-message").count()) > before.answers, "the resumed session answers");
  await shot(page, "06-resumed");

  // The token stayed on the server: no request carried it, no page holds it.
  assert.ok(requests.some((r) => r.url.includes("/proxy/api/harness/turn")));
  assert.ok(requests.every((r) => !r.auth && !r.url.includes(gw.token)), "no request from the browser carries the token");
  assert.ok(!(await page.content()).includes(gw.token));
  assert.deepEqual(errors, []);
  await page.close();
});

/** Runs curl -N and calls onLine for each line as it arrives; resolves to
 * curl's exit code. */
function curl(args, onLine) {
  return new Promise((resolve, reject) => {
    const c = spawn("curl", ["-N", "-sS", "--max-time", "90", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let buf = "";
    let err = "";
    c.stdout.on("data", (b) => {
      buf += b;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        onLine(buf.slice(0, i).replace(/\r$/, ""), c);
        buf = buf.slice(i + 1);
      }
    });
    c.stderr.on("data", (b) => (err += b));
    c.once("error", reject);
    c.once("exit", (code) => resolve({ code, err }));
  });
}

const events = (lines) => lines.filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
const ids = (lines) => lines.filter((l) => l.startsWith("id: ")).map((l) => Number(l.slice(4)));

test("the rewrite streams a turn to curl -N as it happens, and both ways pass Last-Event-ID", async () => {
  // A browser-like client of the rewrite: it holds the token and sends
  // its Origin, which the gateway allows (--allow-origin).
  const H = ["-H", `Authorization: Bearer ${gw.token}`, "-H", `Origin: ${app}`, "-H", "Content-Type: application/json"];
  const api = `${app}/api/harness`;
  const created = await fetch(`${api}/session/create`, {
    method: "POST",
    headers: { authorization: `Bearer ${gw.token}`, origin: app, "content-type": "application/json" },
    body: JSON.stringify({ projectRoot: gw.root, persona: "REVIEWER", mode: "workbench" }),
  });
  assert.equal(created.status, 201, await created.clone().text());
  const { session } = await created.json();

  const lines = [];
  let approved = null;
  const res = await curl(["-X", "POST", `${api}/turn?events=all`, ...H, "-d", JSON.stringify({ sessionId: session.id, message: "please touch another marker file" })], (line) => {
    lines.push(line);
    if (!line.startsWith("data: ")) return;
    const ev = JSON.parse(line.slice(6));
    if (ev.type === "approval:requested" && !approved) {
      // The turn now waits on this answer: the request could only have
      // reached us unbuffered.
      approved = fetch(`${api}/approval`, {
        method: "POST",
        headers: { authorization: `Bearer ${gw.token}`, origin: app, "content-type": "application/json" },
        body: JSON.stringify({ sessionId: session.id, requestId: ev.requestId, decision: "allow" }),
      });
    }
  });
  assert.equal(res.code, 0, res.err);
  assert.ok(approved, `an approval:requested came through the rewrite:\n${lines.join("\n")}`);
  assert.equal((await approved).status, 200);
  const evs = events(lines);
  const types = evs.map((e) => e.type);
  assert.equal(types[0], "user:message");
  assert.equal(types.at(-1), "process:exit");
  assert.ok(types.indexOf("chat:delta") < types.indexOf("approval:requested"), types.join(","));
  assert.ok(types.includes("approval:resolved"));
  assert.equal(evs.at(-1).code, 0);
  const all = ids(lines);
  assert.deepEqual(all, evs.map((e) => e.seq), "every event has its id");

  // Last-Event-ID through the rewrite and through the route handler (which
  // adds the token itself): the events after it, up to the end.
  const mid = all[Math.floor(all.length / 2)];
  for (const [name, url, extra] of [
    ["rewrite", `${api}/session/${session.id}/events?events=all`, H],
    ["route handler", `${app}/proxy/api/harness/session/${session.id}/events?events=all`, []],
  ]) {
    const got = [];
    const r = await curl([url, ...extra, "-H", `Last-Event-ID: ${mid}`], (l) => got.push(l));
    assert.equal(r.code, 0, `${name}: ${r.err}`);
    assert.deepEqual(ids(got), all.filter((i) => i > mid), `${name} resumes after Last-Event-ID ${mid}`);
  }
});
