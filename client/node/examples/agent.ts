// The agent backend of the README, type-checked with the package (it is
// not run by the tests: it needs a model).
import { Readable } from "node:stream";
import { Event, OrionClient, StreamController, turnMessages } from "../src";

export async function agent(task: string): Promise<void> {
  const tools = await (await OrionClient.connect()).toolDefinitions();
  let events: Event[] = [];
  const ctl = await StreamController.create({ workspaceRoot: process.cwd(), onEvent: (e) => events.push(e) });
  const messages: object[] = [{ role: "user", content: task }];
  for (let more = true; more; events = []) {
    const res = await fetch("https://api.deepseek.com/chat/completions", { method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${process.env.DEEPSEEK_API_KEY}` }, body: JSON.stringify({ model: "deepseek-chat", stream: true, tools, messages }) });
    await ctl.run(Readable.fromWeb(res.body as never));
    for (const e of events) if (e.type === "text" || e.type === "finalized") console.log(e.text);
    const next = turnMessages(events);
    messages.push(...next);
    more = next.length > 1; // tool results or prompts to send back
  }
  await ctl.finish();
  ctl.close();
}
