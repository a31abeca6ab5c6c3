import type { FinalizeResult, TruncationContext } from "./protocol";

/** Event types; see Event. The same as the Go controller's. */
export type EventType =
  | "text"
  | "tool_call"
  | "tool_result"
  | "finalized"
  | "continue"
  | "idle"
  | "truncated"
  | "continued"
  | "conflict"
  | "error"
  | "response_end";

/** A chat message in the OpenAI shape: a tool result or a user message. */
export interface Message {
  role: "tool" | "user";
  content: string;
  tool_call_id?: string;
}

/** A tool call assembled from its streamed fragments. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface ErrorInfo {
  code?: number;
  reason?: string;
  message: string;
}

/**
 * Event is one thing the controller reports: text to show (text), a call of
 * another tool for the agent to run (tool_call), a message to send to the
 * model (tool_result, continue, idle, truncated; in `message`), a summary
 * (finalized), or a problem (error, conflict). response_end closes each
 * response with its finish reason and all its tool calls. Its JSON is what
 * `orionctl stream` prints.
 */
export interface Event {
  type: EventType;
  session_id?: string;
  text?: string;
  tool_call?: ToolCall;
  message?: Message;
  result?: FinalizeResult;
  truncation?: TruncationContext;
  error?: ErrorInfo;
  finish_reason?: string;
  tool_calls?: ToolCall[];
}
