// The official TypeScript SDK's client driving `orionctl mcp` over stdio:
// lists the tools, calls every tool once, and checks that roots are
// honoured, changed roots included. It prints one JSON object of what it
// saw; the Go test reads it and checks the files.
//
// node tsclient.mjs ORIONCTL SOCKET ROOT_A ROOT_B ROOT_C OUTSIDE
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [orionctl, socket, rootA, rootB, rootC, outside] = process.argv.slice(2);
const client = new Client({ name: 'orion-ts-test', version: '1' }, { capabilities: { roots: { listChanged: true } } });
let roots = [{ uri: 'file://' + rootA, name: 'a' }, { uri: 'file://' + rootB, name: 'b' }];
let rootsAsked = 0;
client.setRequestHandler(ListRootsRequestSchema, async () => { rootsAsked++; return { roots }; });
const transport = new StdioClientTransport({ command: orionctl, args: ['--socket', socket, 'mcp'], stderr: 'inherit' });
await client.connect(transport);

const out = { server: client.getServerVersion(), instructions: client.getInstructions(), calls: {} };
out.tools = (await client.listTools()).tools.map(t => ({ name: t.name, properties: Object.keys(t.inputSchema.properties || {}) }));
const call = async (label, name, args) => {
  const r = await client.callTool({ name, arguments: args });
  const res = { isError: !!r.isError, text: r.content.map(c => c.text).join(''), structured: r.structuredContent };
  out.calls[label] = res;
  return res;
};

const begin = await call('write_begin', 'write_begin', { target_file: 'chunked.txt', operation: 'create', intent: 'two chunks' });
const id = begin.structured.session_id;
await call('write_append', 'write_append', { session_id: id, seq: 1, chunk: 'one\n' });
await call('write_append_2', 'write_append', { session_id: id, seq: 2, chunk: 'two\n' });
await call('write_finalize', 'write_finalize', { session_id: id });
await call('write_file', 'write_file', { target_file: rootB + '/b.txt', operation: 'create', content: 'in root b\n' });
await call('edit_file', 'edit_file', { target_file: 'chunked.txt', edit: '<<<<<<< SEARCH\none\n=======\nuno\n>>>>>>> REPLACE\n' });
await call('undo', 'undo', { last: true });
await call('list_sessions', 'list_sessions', { limit: 10 });
const second = await call('write_begin_2', 'write_begin', { target_file: 'aborted.txt', operation: 'create' });
await call('write_abort', 'write_abort', { session_id: second.structured.session_id });
await call('outside', 'write_file', { target_file: outside, operation: 'create', content: 'no\n' });

// The host changes its roots.
roots = [{ uri: 'file://' + rootC, name: 'c' }];
await client.sendRootsListChanged();
for (let i = 0; i < 100; i++) {
  const r = await call('after_change', 'write_file', { target_file: 'c.txt', operation: 'create', content: 'in root c\n' });
  if (!r.isError) break;
  await new Promise(res => setTimeout(res, 20));
}
out.rootsAsked = rootsAsked;
await client.close();
console.log(JSON.stringify(out));
