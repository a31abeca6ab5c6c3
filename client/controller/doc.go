// Package controller drives oriond from a model's streamed chat completion,
// as an agent's backend sees it: OpenAI-compatible server-sent events
// ("data: {...}" lines, choices[].delta.content, choices[].delta.tool_calls,
// finish_reason, "data: [DONE]").
//
// The model calls the small WritePlanTool_begin tool with metadata only; the
// controller assembles that call from its streamed fragments, opens a
// session and produces the tool result (session id, end marker,
// instructions) for the agent to send back. In the responses that follow,
// assistant text is the file's content: the controller forwards it to the
// session in chunks with seq 1, 2, 3, ..., finalizes when the end marker
// stands on a line of its own, and reports the summary. Finalizing is never
// a tool the model sees.
//
// When a response is cut by the output limit (finish_reason "length") the
// controller asks the daemon where the content stands (session.resume) and
// produces the message that makes the model continue from the right line.
// When the model stops without the marker it relays the daemon's
// session.idle prompt, and in the end lets the daemon's auto-finalize mark
// the session truncated. Text outside a session passes through untouched.
//
// Everything the agent must act on is an Event. The same events, from the
// same recorded streams, come out of the Node package in client/node; the
// shared fixtures in client/testdata/streams hold both to it.
package controller
