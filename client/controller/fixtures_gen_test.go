package controller_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var generate = flag.Bool("generate", false, "rewrite the recorded streams in ../testdata/streams from their recipes")

// streamsDir holds the fixtures the Go and Node suites share.
const streamsDir = "../testdata/streams"

// TestGenerateFixtures writes the recorded streams. They are committed; the
// recipes are here so a change to one is reviewable as code.
func TestGenerateFixtures(t *testing.T) {
	if !*generate {
		t.Skip("run with -generate to rewrite the recorded streams")
	}
	for name, recipe := range recipes {
		path := filepath.Join(streamsDir, name+".sse")
		if err := os.WriteFile(path, []byte(recipe()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func beginArgs(intent, target, op string) string {
	return fmt.Sprintf(`{"intent": %q, "target_file": %q, "operation": %q}`, intent, target, op)
}

const guide = "# Getting started\n\nInstall with `go install ./...` and run \"oriond run\".\n\n" +
	"Paths like C:\\Users\\me and \\n stay as written; so do ünïcödé, 日本語 and 🚀.\n\n" +
	"A line saying DONE is content, and so is the marker quoted inside a line: {{marker}} here.\n" +
	"DONE\n\n" +
	"```go\nfunc main() { fmt.Println(\"hi\") }\n```\n"

var recipes = map[string]func() string{
	// Ordinary chat: no tool call, everything passes through, even text
	// that looks like a marker.
	"chat_no_tool": func() string {
		r := newRecorder()
		r.start()
		r.content(split("Hello! Files are written with WritePlanTool_begin.\n__END_WRITE_notamarker__\nDONE\nAnything else?", 3, 7, 1, 12)...)
		r.finish("stop")
		return r.String()
	},

	// Arguments split into many fragments, cutting escapes and
	// multi-byte characters; then the content, the marker, and chat after it.
	"args_fragments": func() string {
		r := newRecorder()
		r.start()
		r.content("I'll write ", "the guide.")
		r.toolStart(0, "call_guide", "WritePlanTool_begin")
		args := `{"intent":"Write the \"getting started\" guide – caf\u00e9 \\ ünï","target_file":"guide.md","operation":"create"}`
		r.toolArgs(0, split(args, 1, 2, 5, 3, 8, 1, 13)...)
		r.finish("tool_calls")

		r.start()
		r.content(split(guide, 4, 9, 2, 17, 6)...)
		r.content("{{marker}}\n", "\nI have written guide.md.")
		r.finish("stop")
		return r.String()
	},

	// Several tool calls in one response, their fragments interleaved by
	// index: two files and a tool that is not ours. The files' content
	// then comes one after the other in the next response.
	"several_tool_calls": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_a", "WritePlanTool_begin")
		r.toolStart(1, "call_read", "read_file")
		a := split(beginArgs("First file", "a.txt", "create"), 6)
		read := split(`{"path":"README.md"}`, 4)
		for i := 0; i < max(len(a), len(read)); i++ {
			if i < len(a) {
				r.toolArgs(0, a[i])
			}
			if i < len(read) {
				r.toolArgs(1, read[i])
			}
		}
		r.toolStart(2, "call_b", "WritePlanTool_begin")
		r.toolArgs(2, split(beginArgs("Second file", "b.py", "create"), 11)...)
		r.finish("tool_calls")

		r.start()
		r.content(lines("alpha\nbeta\ngamma\n")...)
		r.content("{{marker}}\n")
		r.content(lines("def main():\n    print(\"b\")\n")...)
		r.content("{{marker}}", "\n")
		r.content("Both files are written.")
		r.finish("stop")
		return r.String()
	},

	// A file is created, then changed part by part: a patch whose
	// patch_spec arrives in fragments (only the new line is streamed), then
	// an edit streamed as a search/replace block.
	"patch_and_edit": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_create", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Write the config", "config.txt", "create"))
		r.finish("tool_calls")

		r.start()
		r.content(lines("name = orion\nport = 8080\nmode = dev\n")...)
		r.content("{{marker}}\n", "Created config.txt.")
		r.finish("stop")

		r.start()
		r.toolStart(0, "call_patch", "WritePlanTool_begin")
		args := `{"intent": "Move to port 9090", "target_file": "config.txt", "operation": "patch", ` +
			`"patch_spec": {"type": "replace_lines", "start_line": 2, "end_line": 2}}`
		r.toolArgs(0, split(args, 7, 13, 2, 29)...)
		r.finish("tool_calls")

		r.start()
		r.content("port = 9090\n", "{{marker}}\n")
		r.finish("stop")

		r.start()
		r.toolStart(0, "call_edit", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Switch to production mode", "config.txt", "edit"))
		r.finish("tool_calls")

		r.start()
		r.content(lines("<<<<<<< SEARCH\nmode = dev\n=======\nmode = prod\n>>>>>>> REPLACE\n")...)
		r.content("{{marker}}\n", "Done.")
		r.finish("stop")
		return r.String()
	},

	// One file changed by edits in each agent's dialect, streamed with
	// prose before the edit and after the marker: a Codex envelope that
	// also adds a file, Aider blocks under path lines (diff-fenced too),
	// and Cline's blocks with markers of other lengths.
	"edit_dialects": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_create", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Write the app", "app.py", "create"))
		r.finish("tool_calls")

		r.start()
		r.content(lines("import sys\n\n\ndef greet(name):\n    print(\"Hi\", name)\n\n\ngreet(sys.argv[1])\n")...)
		r.content("{{marker}}\n", "Created app.py.")
		r.finish("stop")

		r.start()
		r.toolStart(0, "call_codex", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Greet politely and add a version", "app.py", "edit"))
		r.finish("tool_calls")

		r.start()
		r.content(lines("I'll patch the greeting.\n\n *** Begin Patch\n*** Update File: app.py\n@@ def greet(name):\n" +
			"-    print(\"Hi\", name)\n+    print(\"Hello,\", name)\n  *** Add File: version.py\n+VERSION = 1\n *** End Patch\n")...)
		r.content("{{marker}}\n", "Patched app.py and added version.py.")
		r.finish("stop")

		r.start()
		r.toolStart(0, "call_aider", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Print the version", "app.py", "edit"))
		r.finish("tool_calls")

		r.start()
		r.content(lines("Two files change.\n\napp.py\n```python\n<<<<<<< SEARCH\nimport sys\n=======\nimport sys\n\nfrom version import VERSION\n>>>>>>> REPLACE\n```\n\n" +
			"```python\nversion.py\n<<<<<<<<< SEARCH\nVERSION = 1\n=========\nVERSION = 2\n>>>>>>>>> REPLACE\n```\n")...)
		r.content("{{marker}}\n", "Done with Aider's blocks.")
		r.finish("stop")

		r.start()
		r.toolStart(0, "call_cline", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Print the version too", "app.py", "edit"))
		r.finish("tool_calls")

		r.start()
		r.content(lines("------------ SEARCH\ngreet(sys.argv[1])\n==========\nprint(VERSION)\ngreet(sys.argv[1])\n+++++ REPLACE\n")...)
		r.content("{{marker}}\n", "Done with Cline's block.")
		r.finish("stop")
		return r.String()
	},

	// The marker split across deltas, after look-alikes that are content:
	// a marker with text after it, and one quoted inside a line.
	"marker_split": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_notes", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Notes", "notes.md", "overwrite"))
		r.finish("tool_calls")

		r.start()
		r.content("- one\n- two\n", "{{marker}}x is not the marker\n", "say {{marker}}\n", "- three\n")
		r.content("  {{marker:0:3}}", "{{marker:3:11}}", "{{marker:11:25}}", "{{marker:25:26}} \t", "\n")
		r.content("That's all.")
		r.finish("stop")
		return r.String()
	},

	// The model stops without the marker: the daemon's idle prompt is
	// relayed, and when the conversation ends the auto-finalize marks the
	// session truncated (the default policy writes nothing).
	"no_marker": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_draft", "WritePlanTool_begin")
		r.toolArgs(0, split(beginArgs("Draft", "draft.txt", "create"), 9)...)
		r.finish("tool_calls")

		r.start()
		r.content(lines("first line\nsecond line\nthird line, no marker follows\n")...)
		r.finish("stop")
		return r.String()
	},

	// The connection to the daemon drops twice in the middle of the
	// content; the controller reconnects, resumes and resends from next_seq.
	"dropped_connection": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_big", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Many lines", "big.txt", "create"))
		r.finish("tool_calls")

		r.start()
		for i := 1; i <= 200; i++ {
			r.content(fmt.Sprintf("line %03d: the quick brown fox jumps over the lazy dog\n", i))
			if i == 70 || i == 141 {
				r.comment("orion-test drop-connection")
			}
		}
		r.content("{{marker}}\n")
		r.finish("stop")
		return r.String()
	},

	// The daemon is killed (SIGKILL) and started again mid-content: the
	// controller reconnects, resumes the session the daemon recovered from
	// its journal, and nothing acknowledged is lost or repeated.
	"daemon_restart": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_r", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Survive a crash", "crash.txt", "create"))
		r.finish("tool_calls")

		r.start()
		for i := 1; i <= 60; i++ {
			r.content(fmt.Sprintf("line %02d written before and after the daemon restarts\n", i))
			if i == 30 {
				r.comment("orion-test restart-daemon")
			}
		}
		r.content("{{marker}}\n")
		r.finish("stop")
		return r.String()
	},

	// The response hits the output limit mid-line: the controller resumes
	// the session and asks the model to continue; the next response's
	// content lands in the same session.
	"length_continue": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_long", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Long document", "long.md", "create"))
		r.finish("tool_calls")

		r.start()
		var b strings.Builder
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&b, "Paragraph %d says something worth keeping.\n", i)
		}
		r.content(lines(b.String())...)
		r.content("Paragraph 41 was cut in the mid")
		r.finish("length")

		r.start()
		r.content("dle of a word.\n", "Paragraph 42 ends it.\n", "{{marker}}\n")
		r.finish("stop")
		return r.String()
	},

	// Bad arguments, each answered with exactly what to resend: cut off by
	// the output limit, not JSON, fields missing, a target the daemon
	// refuses. Then a good call with a stray content argument, ignored.
	"bad_arguments": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_cut", "WritePlanTool_begin")
		r.toolArgs(0, split(`{"intent":"Write the report","target_file":"rep`, 5)...)
		r.finish("length")

		r.start()
		r.toolStart(0, "call_bad", "WritePlanTool_begin")
		r.toolArgs(0, `{"intent":"Write the report","target_file":"report.md","content":"line one`+"\n"+`line two"}`)
		r.toolStart(1, "call_missing", "WritePlanTool_begin")
		r.toolArgs(1, `{"target_file":"report.md","operation":"delete"}`)
		r.toolStart(2, "call_outside", "WritePlanTool_begin")
		r.toolArgs(2, beginArgs("Escape", "/etc/orion-test.md", "create"))
		r.toolStart(3, "call_empty", "WritePlanTool_begin")
		r.finish("tool_calls")

		r.start()
		r.toolStart(0, "call_good", "WritePlanTool_begin")
		r.toolArgs(0, split(`{"intent":"Write the report","target_file":"report.md","operation":"create","content":"ignored"}`, 7, 3)...)
		r.finish("tool_calls")

		r.start()
		r.content("# Report\n", "All good.\n", "{{marker}}")
		r.finish("stop")
		return r.String()
	},

	// The model's own connection drops mid-content: the stream ends with no
	// finish reason and no [DONE]. The response counts as interrupted and,
	// like a cut by the output limit, gets the message to continue.
	"model_stream_cut": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_cut", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Cut", "cut.md", "create"))
		r.finish("tool_calls")

		r.start()
		r.content(lines("# Title\n\nThe first paragraph is whole.\n")...)
		r.content("The second one stops in")
		return r.String()
	},

	// The daemon's auto-finalize ends the session while the model is slow;
	// the content that still comes continues it in a chained session, and
	// the model's marker (the first session's) ends the file.
	"truncated_continue": func() string {
		r := newRecorder()
		r.start()
		r.toolStart(0, "call_t", "WritePlanTool_begin")
		r.toolArgs(0, beginArgs("Slow file", "slow.txt", "create"))
		r.finish("tool_calls")

		r.start()
		r.content(lines("one\ntwo\n")...)
		r.finish("stop")
		r.comment("orion-test wait-truncated")

		r.start()
		r.content(lines("three\nfour\n")...)
		r.content("{{marker}}\n")
		r.finish("stop")
		return r.String()
	},
}
