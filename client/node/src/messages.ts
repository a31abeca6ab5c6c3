import type { Event } from "./events";

/** An OpenAI chat-completions message, as an agent keeps its history. */
export interface ChatMessage {
  role: "assistant" | "tool" | "user";
  content: string | null;
  tool_call_id?: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
}

/**
 * turnMessages turns the events of one response into the messages to add to
 * the conversation: the assistant's message (its text outside sessions and
 * its tool calls), then the controller's answers to send back (tool results,
 * continue, idle and truncation prompts). Results of other tools (tool_call
 * events) are the agent's to add. The file content the model streamed is not
 * repeated in the history: it is on disk, and prompts quote its tail.
 */
export function turnMessages(events: Event[]): ChatMessage[] {
  const text = events.filter((e) => e.type === "text").map((e) => e.text ?? "").join("");
  const end = events.find((e) => e.type === "response_end");
  const assistant: ChatMessage = { role: "assistant", content: text === "" ? null : text };
  if (end?.tool_calls?.length) {
    assistant.tool_calls = end.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
  }
  const out: ChatMessage[] = [assistant];
  for (const e of events) {
    if (e.message && e.message.role === "tool") out.push({ role: "tool", content: e.message.content, tool_call_id: e.message.tool_call_id });
  }
  for (const e of events) {
    if (e.message && e.message.role === "user") out.push({ role: "user", content: e.message.content });
  }
  return out;
}
