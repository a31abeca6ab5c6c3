package controller

import (
	"encoding/json"
	"strings"
)

// chunk is one chat.completion.chunk of an OpenAI-compatible stream. Only
// the fields the controller acts on are decoded.
type chunk struct {
	Choices []choice     `json:"choices"`
	Error   *streamError `json:"error"`
}

type choice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Content   *string         `json:"content"`
	ToolCalls []toolCallDelta `json:"tool_calls"`
}

// toolCallDelta is one fragment of a streamed tool call. The first
// fragment of a call carries its id and name; later ones carry pieces of
// the arguments, matched to it by index.
type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// streamError is the error object some providers send inside the stream.
type streamError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// sseLine classifies one line of a server-sent event stream.
type sseLine struct {
	kind    int // lineData, lineDone, lineComment, lineBlank, lineOther
	payload string
}

const (
	lineOther = iota
	lineBlank
	lineData
	lineDone
	lineComment
)

// parseSSELine reads one line (without its line ending) per the
// server-sent events format: "data:" with one optional space, ":" comments,
// a blank line ending an event; "event:", "id:" and "retry:" do not matter
// here.
func parseSSELine(line string) sseLine {
	line = strings.TrimSuffix(line, "\r")
	switch {
	case line == "":
		return sseLine{kind: lineBlank}
	case strings.HasPrefix(line, ":"):
		return sseLine{kind: lineComment, payload: strings.TrimPrefix(strings.TrimPrefix(line, ":"), " ")}
	case line == "data" || strings.HasPrefix(line, "data:"):
		v := strings.TrimPrefix(strings.TrimPrefix(line, "data"), ":")
		v = strings.TrimPrefix(v, " ")
		if strings.TrimSpace(v) == "[DONE]" {
			return sseLine{kind: lineDone}
		}
		return sseLine{kind: lineData, payload: v}
	}
	return sseLine{kind: lineOther}
}

// eventData gathers the data lines of one event. By the format, an event
// ends at a blank line and its data lines join with "\n"; recordings that
// drop the blank lines are common, so a data line that follows complete
// JSON starts a new event.
type eventData struct {
	lines []string
}

// add takes a data line and returns a completed earlier event, if the line
// starts a new one.
func (e *eventData) add(payload string) (done string, ok bool) {
	if len(e.lines) > 0 {
		if prev := strings.Join(e.lines, "\n"); json.Valid([]byte(prev)) {
			e.lines = e.lines[:0]
			done, ok = prev, true
		}
	}
	e.lines = append(e.lines, payload)
	return done, ok
}

// take returns the pending event's data, if any, and clears it.
func (e *eventData) take() (string, bool) {
	if len(e.lines) == 0 {
		return "", false
	}
	s := strings.Join(e.lines, "\n")
	e.lines = e.lines[:0]
	return s, true
}
