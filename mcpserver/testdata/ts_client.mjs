// A third-party MCP client against `harness mcp --demo`: the TypeScript
// SDK's Client over StdioClientTransport (@modelcontextprotocol/sdk,
// pinned in package.json). Usage: node ts_client.mjs HARNESS_BIN ROOT STATE_DIR
// It prints one JSON object of what it saw; the Go test checks it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [bin, root, state] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: bin,
  // The transport passes the child only a safe part of this environment:
  // the CLI's path goes as a flag.
  args: ['mcp', '--demo', '--root', root, '--state-dir', state,
    ...(process.env.HARNESS_CLAUDE_BIN ? ['--claude-bin', process.env.HARNESS_CLAUDE_BIN] : [])],
  stderr: 'inherit',
});
const client = new Client({ name: 'ts-sdk-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
const elicited = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  elicited.push(req.params.message);
  return { action: 'accept', content: { decision: 'allow' } };
});
await client.connect(transport);
const out = { server: client.getServerVersion(), protocol: transport.protocolVersion ?? null };

const tools = await client.listTools();
out.tools = tools.tools.map((t) => t.name).sort();

const call = async (name, args, extra = {}) => {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...extra });
  if (r.isError) throw new Error(`${name}: ${r.content.map((c) => c.text).join('')}`);
  return r.structuredContent;
};

const s = await call('create_session', { projectRoot: root, engine: 'native' });
out.session = s;
let progress = 0;
const turn = await call('run_turn', { sessionId: s.sessionId, message: 'hello from TypeScript' }, {
  onprogress: () => { progress++; },
});
out.turn = { status: turn.status, final: turn.final, tools: turn.toolCalls.map((c) => c.name), costUsd: turn.costUsd };
out.progress = progress;
const tr = await call('get_transcript', { sessionId: s.sessionId });
out.transcript = tr.entries.map((e) => ({ role: e.role, text: e.role === 'user' ? e.text : undefined }));

// An approval asked of this client through elicitation: the demo's
// "touch" on Claude Code, in the permission mode default.
const cc = await call('create_session', { projectRoot: root, engine: 'claude-code' });
const touch = await call('run_turn', { sessionId: cc.sessionId, message: 'touch the marker' });
out.approval = { elicited, tools: touch.toolCalls, status: touch.status };

const bad = await client.callTool({ name: 'run_turn', arguments: { sessionId: 'nope', message: 'x' } });
out.badCall = { isError: bad.isError, text: bad.content.map((c) => c.text).join('') };

const sessions = await call('list_sessions', {});
out.sessions = sessions.sessions.length;
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
