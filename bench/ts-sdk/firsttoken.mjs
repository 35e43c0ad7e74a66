// The peer's figure for bench/warmturns: the TypeScript Agent SDK's
// query() against the real pinned Claude CLI and a loopback fake Messages
// API, the time from calling query() to the first text delta, over N
// queries one after another (each query() starts its own CLI, as the SDK
// does for a string prompt).
//
//   ANTHROPIC_BASE_URL=http://127.0.0.1:PORT ANTHROPIC_API_KEY=... HOME=... \
//     node bench/ts-sdk/firsttoken.mjs --claude-bin PATH --cwd DIR [--turns N] [--think MS]
//
// Prints one JSON line on stdout: {"turns":N,"ms":[...]} (one figure per
// query, in order). The environment is passed to the CLI as it is. Exits 1
// if a query ends without a successful result or without a text delta.

import { query } from '@anthropic-ai/claude-agent-sdk';

let claudeBin = '';
let cwd = process.cwd();
let turns = 30;
let think = 0;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--claude-bin') claudeBin = argv[++i];
  else if (a === '--cwd') cwd = argv[++i];
  else if (a === '--turns') turns = Number(argv[++i]);
  else if (a === '--think') think = Number(argv[++i]);
  else { console.error(`firsttoken.mjs: unknown argument ${a}`); process.exit(2); }
}
if (!claudeBin) {
  console.error('firsttoken.mjs: --claude-bin is required');
  process.exit(2);
}

const ms = [];
for (let i = 0; i < turns; i++) {
  if (think > 0) await new Promise((r) => setTimeout(r, think));
  const t0 = performance.now();
  let first = 0;
  let result;
  const q = query({
    prompt: `message ${i}`,
    options: {
      pathToClaudeCodeExecutable: claudeBin,
      includePartialMessages: true,
      cwd,
      env: { ...process.env },
      permissionMode: 'dontAsk',
    },
  });
  for await (const m of q) {
    if (!first && m.type === 'stream_event' && m.event?.type === 'content_block_delta' && m.event.delta?.type === 'text_delta') {
      first = performance.now() - t0;
    }
    if (m.type === 'result') result = m;
  }
  if (!first || !result || result.subtype !== 'success' || result.is_error) {
    console.error(`firsttoken.mjs: query ${i} ended without a text delta or a successful result`);
    process.exit(1);
  }
  ms.push(Number(first.toFixed(1)));
}
console.log(JSON.stringify({ turns, ms }));
