// The TypeScript SDK's client sending one fixed sequence of calls to an MCP
// filesystem server (the reference one or `orionctl mcp
// --filesystem-compatible`) in the directory DIR, printing what it saw as
// JSON: the tools listed and every call's result, in order. The Go test
// runs it against both servers and compares.
//
// node fscompare.mjs DIR OUTSIDE COMMAND ARG...
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [dir, outside, command, ...args] = process.argv.slice(2);
const client = new Client({ name: 'orion-fscompare', version: '1' }, { capabilities: {} });
await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));

const out = { tools: [], calls: [] };
for (const t of (await client.listTools()).tools) {
  out.tools.push({ name: t.name, inputSchema: t.inputSchema });
}
const call = async (name, args) => {
  let r;
  try {
    r = await client.callTool({ name, arguments: args });
  } catch (e) {
    r = { isError: true, thrown: String(e.message || e) };
  }
  out.calls.push({ name, args, isError: !!r.isError, content: r.content, structured: r.structuredContent, thrown: r.thrown });
};

await call('list_allowed_directories', {});
await call('write_file', { path: dir + '/new.txt', content: 'one\ntwo\nthree\n' });
await call('write_file', { path: 'relative.txt', content: 'relative\n' });
await call('write_file', { path: dir + '/new.txt', content: 'one\ntwo\nthree\nfour\n' });
await call('write_file', { path: outside, content: 'no\n' });
await call('write_file', { path: dir + '/../escape.txt', content: 'no\n' });
await call('write_file', { path: dir + '/missing/dir/x.txt', content: 'no\n' });
await call('write_file', { path: dir + '/link-out/x.txt', content: 'no\n' });
await call('read_text_file', { path: dir + '/new.txt' });
await call('read_text_file', { path: dir + '/new.txt', head: 2 });
await call('read_text_file', { path: dir + '/new.txt', tail: 2 });
await call('read_text_file', { path: dir + '/new.txt', head: 1, tail: 1 });
await call('read_text_file', { path: 'relative.txt' });
await call('read_text_file', { path: dir + '/nope.txt' });
await call('read_text_file', { path: outside });
await call('read_text_file', { path: dir + '/link-out/secret.txt' });
await call('read_text_file', { path: dir + '/link-in.txt' });
await call('read_text_file', { path: dir + '/file-link-out' });
await call('read_file', { path: dir + '/new.txt' });
await call('read_media_file', { path: dir + '/sub/a.txt' });
await call('read_media_file', { path: dir + '/sub/pic.png' });
await call('read_media_file', { path: dir + '/sub/sound.wav' });
await call('read_media_file', { path: dir + '/file-link-out' });
await call('read_multiple_files', { paths: [dir + '/new.txt', 'relative.txt', dir + '/nope.txt', outside] });
await call('edit_file', { path: dir + '/new.txt', edits: [{ oldText: 'two\n', newText: 'TWO\n' }], dryRun: true });
await call('edit_file', { path: dir + '/new.txt', edits: [{ oldText: 'two\n', newText: 'TWO\n' }, { oldText: '  four  ', newText: 'FOUR' }] });
await call('edit_file', { path: dir + '/new.txt', edits: [{ oldText: 'absent', newText: 'x' }] });
await call('edit_file', { path: outside, edits: [{ oldText: 'secret', newText: 'x' }] });
await call('edit_file', { path: dir + '/link-in.txt', edits: [{ oldText: 'alpha', newText: 'ALPHA' }] });
await call('read_text_file', { path: dir + '/new.txt' });
await call('write_file', { path: dir + '/.mcp.json', content: '{"mcpServers": {}}\n' });
await call('create_directory', { path: dir + '/made/deep' });
await call('create_directory', { path: dir + '/made' });
await call('create_directory', { path: dir + '/link-out/made' });
await call('create_directory', { path: outside + '-dir' });
await call('write_file', { path: dir + '/made/deep/f.txt', content: 'in a new directory\n' });
await call('list_directory', { path: dir + '/sub' });
await call('list_directory_with_sizes', { path: dir + '/sub' });
await call('list_directory_with_sizes', { path: dir + '/sub/deeper', sortBy: 'size' });
await call('list_directory_with_sizes', { path: outside });
await call('list_directory', { path: outside });
await call('list_directory', { path: dir + '/link-out' });
await call('directory_tree', { path: dir + '/sub' });
await call('directory_tree', { path: dir, excludePatterns: ['deeper', '*.png', 'made/**', '.mcp.json'] });
await call('directory_tree', { path: outside });
await call('directory_tree', { path: dir + '/link-out' });
await call('directory_tree', { path: dir + '/new.txt' });
await call('search_files', { path: dir, pattern: '**/*.txt' });
await call('search_files', { path: dir, pattern: '*.txt' });
await call('search_files', { path: dir, pattern: '**/b.{md,txt}', excludePatterns: ['made/**'] });
await call('search_files', { path: dir + '/sub', pattern: '**/*.zip' });
await call('search_files', { path: outside, pattern: '*' });
await call('get_file_info', { path: dir + '/sub/a.txt' });
await call('get_file_info', { path: dir + '/sub' });
await call('get_file_info', { path: dir + '/nope.txt' });
await call('get_file_info', { path: outside });
await call('get_file_info', { path: dir + '/file-link-out' });
await call('move_file', { source: dir + '/sub/a.txt', destination: dir + '/new.txt' });
await call('move_file', { source: dir + '/sub/a.txt', destination: outside + '-moved' });
await call('move_file', { source: outside, destination: dir + '/stolen.txt' });
await call('move_file', { source: dir + '/sub/deeper/b.md', destination: dir + '/moved.md' });
await call('read_text_file', {});
await call('write_file', { path: 5, content: 'x' });
await call('edit_file', { path: dir + '/new.txt', edits: 'not a list' });
await call('move_file', { source: dir + '/new.txt' });

console.log(JSON.stringify(out, null, 1));
await client.close();
