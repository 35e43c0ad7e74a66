// npm run size: the browser entry's cost in an app bundle, minified and
// gzipped (esbuild, platform browser, zod included), for BENCHMARKS.md.

import fs from "node:fs";
import os from "node:os";
import { installPacked, browserBundle } from "./packed.mjs";

const { dir } = installPacked();
try {
  const cases = [
    ["HarnessClient only", `import { HarnessClient } from "@chirality/harness-client"; globalThis.c = HarnessClient;`],
    ["the whole entry", `import * as h from "@chirality/harness-client"; globalThis.h = h;`],
    ["zod, one schema (scale)", `import * as z from "zod"; globalThis.s = z.looseObject({ a: z.string() });`],
  ];
  console.log(`${os.cpus()[0]?.model ?? "?"}, ${os.cpus().length} cores; Node ${process.version}; ${new Date().toISOString().slice(0, 10)}`);
  for (const [name, code] of cases) {
    const s = await browserBundle(dir, code);
    console.log(`${name.padEnd(24)} ${String(s.minified).padStart(7)} B minified  ${String(s.gzip).padStart(6)} B gzip`);
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
