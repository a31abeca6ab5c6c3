// Times whole-file write_file calls through the official TypeScript SDK
// client over stdio against one MCP server, and prints one JSON line:
// {"files": N, "seconds": S, "server_cpu_ms": C}, C the server process's
// CPU time over the timed calls (null where /proc cannot tell it).
// orionbench runs it for both servers, so both are measured with the same
// client. With ORION_CPU_PROFILE set, orionctl mcp profiles itself into
// that path with ".orionctl-mcp-TAG" added (the SDK passes a server only
// a few variables of its environment).
//
// node mcpbench.mjs KIND ROOT FILES SIZE TAG WARM -- COMMAND ARGS...
//   KIND: orion (arguments target_file, operation, content) or filesystem
//   (path, content). ROOT: the directory written into, offered as the
//   client's only root. TAG names this run's files. WARM: calls made
//   before the timed ones (the server's start-up is not a write).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { readdirSync, readFileSync } from 'node:fs';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
const [kind, root, files, size, tag, warm] = argv.slice(0, sep);
const [command, ...args] = argv.slice(sep + 1);
const client = new Client({ name: 'orionbench', version: '1' }, { capabilities: { roots: { listChanged: true } } });
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file://' + root }] }));
const env = getDefaultEnvironment();
if (kind === 'orion' && process.env.ORION_CPU_PROFILE) env.ORION_CPU_PROFILE = `${process.env.ORION_CPU_PROFILE}.orionctl-mcp-${tag}`;
const transport = new StdioClientTransport({ command, args, env, stderr: 'ignore' });
await client.connect(transport);

// The server's CPU time in ms: the sum of its threads' time on a CPU, in
// nanoseconds (schedstat), finer than the clock ticks of /proc/PID/stat.
const serverCPU = () => {
  try {
    let ns = 0;
    for (const t of readdirSync(`/proc/${transport.pid}/task`)) {
      ns += Number(readFileSync(`/proc/${transport.pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    }
    return ns / 1e6;
  } catch {
    return null;
  }
};

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
const cpu0 = serverCPU();
const start = process.hrtime.bigint();
for (let i = 0; i < Number(files); i++) await call(String(i));
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const cpu1 = serverCPU();
await client.close();
const server_cpu_ms = cpu0 === null || cpu1 === null ? null : cpu1 - cpu0;
console.log(JSON.stringify({ files: Number(files), seconds, server_cpu_ms }));
