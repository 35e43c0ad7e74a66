// Finds or starts the gateway the integration tests talk to.
//
//   HARNESS_URL    a running gateway (then HARNESS_ROOT names an allowed
//                  project root on it, and HARNESS_TOKEN its token if any)
//   HARNESS_BIN    otherwise, the harness binary to start as
//                  `harness serve --demo --addr 127.0.0.1:0 --root <tmp>`
//                  (default ../../bin/harness from clients/typescript)
//
// The started server prints `harness: listening on http://127.0.0.1:PORT`
// on stdout once it is ready.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, existsSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface TestServer {
  url: string;
  token: string | undefined;
  root: string;
  stop(): Promise<void>;
}

const here = path.dirname(fileURLToPath(import.meta.url));
// dist/test -> clients/typescript
const pkgDir = path.resolve(here, "..", "..");

export async function harnessServer(extraArgs: string[] = []): Promise<TestServer> {
  const token = process.env.HARNESS_TOKEN || undefined;
  if (process.env.HARNESS_URL && extraArgs.length === 0) {
    const root = process.env.HARNESS_ROOT;
    if (!root) throw new Error("HARNESS_URL is set: set HARNESS_ROOT to a project root the gateway allows");
    return { url: process.env.HARNESS_URL.replace(/\/+$/, ""), token, root, stop: async () => {} };
  }
  const bin = path.resolve(pkgDir, process.env.HARNESS_BIN || "../../bin/harness");
  if (!existsSync(bin)) {
    throw new Error(`harness binary not found at ${bin}: build it (go build -o bin/harness ./cmd/harness) or set HARNESS_BIN or HARNESS_URL`);
  }
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), "harness-ts-")));
  const child = spawn(bin, ["serve", "--demo", "--addr", "127.0.0.1:0", "--root", root, ...extraArgs], {
    stdio: ["ignore", "pipe", "pipe"],
    env: process.env,
  });
  const url = await listeningUrl(child, 30_000);
  return {
    url,
    token,
    root,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((r) => child.once("exit", () => r()));
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(t);
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}

function listeningUrl(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const fail = (why: string) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`harness serve --demo: ${why}\nstdout:\n${out}\nstderr:\n${err.slice(-4000)}`));
    };
    const timer = setTimeout(() => fail(`no "listening on" line within ${timeoutMs} ms`), timeoutMs);
    child.stderr!.on("data", (b: Buffer) => {
      err += b.toString();
      if (process.env.HARNESS_TEST_VERBOSE) process.stderr.write(b);
    });
    child.stdout!.on("data", (b: Buffer) => {
      out += b.toString();
      const m = /^harness: listening on (http:\/\/\S+)\s*$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        // Keep draining so the child never blocks on a full pipe.
        child.stdout!.removeAllListeners("data");
        child.stdout!.resume();
        resolve(m[1]!.replace(/\/+$/, ""));
      }
    });
    child.once("exit", (code, signal) => fail(`exited (${code ?? signal}) before listening`));
    child.once("error", (e) => fail(e.message));
  });
}
