// Times whole-file write_file calls through the official TypeScript SDK
// client over stdio against one MCP server, and prints one JSON line:
// {"files": N, "seconds": S}. orionbench runs it for both servers, so both
// are measured with the same client.
//
// node mcpbench.mjs KIND ROOT FILES SIZE TAG WARM -- COMMAND ARGS...
//   KIND: orion (arguments target_file, operation, content) or filesystem
//   (path, content). ROOT: the directory written into, offered as the
//   client's only root. TAG names this run's files. WARM: calls made
//   before the timed ones (the server's start-up is not a write).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
const [kind, root, files, size, tag, warm] = argv.slice(0, sep);
const [command, ...args] = argv.slice(sep + 1);
const client = new Client({ name: 'orionbench', version: '1' }, { capabilities: { roots: { listChanged: true } } });
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file://' + root }] }));
await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }));

// Printable lines, as source code is: no escapes to favour either side.
const line = 'const value = compute(alpha, beta) + 42; // a line of code\n';
const content = line.repeat(Math.ceil(Number(size) / line.length)).slice(0, Number(size) - 1) + '\n';
const call = async (name) => {
  const path = `${root}/${tag}-${name}.txt`;
  const args = kind === 'orion' ? { target_file: path, operation: 'overwrite', content } : { path, content };
  const r = await client.callTool({ name: 'write_file', arguments: args });
  if (r.isError) {
    console.error(JSON.stringify(r.content));
    process.exit(1);
  }
};
for (let i = 0; i < Number(warm); i++) await call(`warm${i}`);
const start = process.hrtime.bigint();
for (let i = 0; i < Number(files); i++) await call(String(i));
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
await client.close();
console.log(JSON.stringify({ files: Number(files), seconds }));
