// The TypeScript Agent SDK side of bench/compare.sh: one query() against a
// stand-in claude (claude-replay playing CLAUDETEST_REPLAY), consuming and
// counting every message, the way an application would.
//
//   CLAUDETEST_REPLAY=bench/out/transcript.ndjson \
//     node bench/ts-sdk/query.mjs [--claude-bin PATH] [--cwd DIR] [--by-type] [MESSAGE]
//
// Prints one JSON line on stdout:
//   {"messages":N,"seconds":S,"peakRssMB":M,...}
// seconds: from just before query() to the end of the message stream (the
//   process's wall time, including Node start-up and SDK loading, is what
//   compare.sh measures from outside);
// peakRssMB: this node process's own peak RSS, from getrusage(RUSAGE_SELF)
//   via process.resourceUsage().maxRSS; the claude child is not included.
// Exits 1 if the stream did not end in a successful result.

import { query } from '@anthropic-ai/claude-agent-sdk';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
let claudeBin = process.env.BENCH_CLAUDE_BIN || path.join(here, '..', 'out', 'claude-replay');
let cwd = process.cwd();
let byType = false;
let prompt = 'go';
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--claude-bin') claudeBin = argv[++i];
  else if (a === '--cwd') cwd = argv[++i];
  else if (a === '--by-type') byType = true;
  else if (a.startsWith('--')) { console.error(`query.mjs: unknown flag ${a}`); process.exit(2); }
  else prompt = a;
}
if (!process.env.CLAUDETEST_REPLAY) {
  console.error('query.mjs: set CLAUDETEST_REPLAY to the transcript the replayer should play');
  process.exit(2);
}

const t0 = performance.now();
const q = query({
  prompt,
  options: {
    pathToClaudeCodeExecutable: path.resolve(claudeBin),
    includePartialMessages: true,
    cwd,
    env: { ...process.env },
    stderr: (s) => process.stderr.write(s),
  },
});

let messages = 0;
let result;
const types = {};
for await (const m of q) {
  messages++;
  if (byType) {
    const k = m.type === 'stream_event' ? `stream_event/${m.event?.type}` : m.subtype ? `${m.type}/${m.subtype}` : m.type;
    types[k] = (types[k] || 0) + 1;
  }
  if (m.type === 'result') result = m;
}
const seconds = (performance.now() - t0) / 1000;
const peakRssMB = process.resourceUsage().maxRSS / 1024; // maxRSS is in KiB

const out = {
  messages,
  seconds: Number(seconds.toFixed(3)),
  peakRssMB: Number(peakRssMB.toFixed(1)),
  result: result ? { subtype: result.subtype, is_error: result.is_error, num_turns: result.num_turns } : null,
};
if (byType) out.types = types;
console.log(JSON.stringify(out));
process.exitCode = result && result.subtype === 'success' && !result.is_error ? 0 : 1;
