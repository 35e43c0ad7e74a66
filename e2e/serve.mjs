// Shared by the browser tests of issue 32 (notify.test.mjs,
// queue.test.mjs): a `harness serve --demo` of its own on a free port,
// a headless Chromium, a session made through the API.

import { before, after } from "node:test";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
export const artifacts = path.join(here, "artifacts");

/** Starts the demo server with args; resolves {url, root, stop}. */
export async function demoServer(args = []) {
  const bin = path.resolve(here, process.env.HARNESS_BIN || "../bin/harness");
  if (!fs.existsSync(bin)) throw new Error(`no harness binary at ${bin}: go build -o bin/harness ./cmd/harness, or set HARNESS_BIN`);
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "harness-e2e32-")));
  fs.writeFileSync(path.join(root, "README.md"), "# project\n");
  const child = spawn(bin, ["serve", "--demo", "--addr", "127.0.0.1:0", "--root", root, "--warm", "0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stderr.on("data", (b) => (log += b));
  const url = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (b) => {
      const m = /harness: listening on (http:\/\/\S+)/.exec((out += b));
      if (m) resolve(m[1]);
    });
    child.once("exit", (code) => reject(new Error(`harness serve exited ${code}:\n${log}`)));
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await gone;
    }
    fs.rmSync(root, { recursive: true, force: true });
  };
  return { url, root, stop, log: () => log };
}

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
  });
}

/** POSTs JSON to the server's API; resolves the decoded answer. */
export async function api(server, p, body, method = "POST") {
  const res = await fetch(server.url + "/api/harness" + p, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

/** A new session in the server's project; resolves its ID. */
export async function newSession(server) {
  const r = await api(server, "/session/create", { projectRoot: server.root, mode: "direct" });
  if (r.status !== 201) throw new Error(`create: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.session.id;
}

/** Page errors of a page, collected for a final assertion. */
export function watchErrors(page, errors) {
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 40[149]/.test(m.text())) errors.push(m.text());
  });
}

/** Registers a file's before and after hooks: a demo server with args
 * and a browser, in the returned object once before has run, with the
 * list its pages' errors go to. */
export function suite(args = []) {
  const s = { server: null, browser: null, errors: [] };
  before(async () => {
    fs.mkdirSync(artifacts, { recursive: true });
    s.server = await demoServer(args);
    s.browser = await launch();
  });
  after(async () => {
    await s.browser?.close();
    await s.server?.stop();
  });
  return s;
}
