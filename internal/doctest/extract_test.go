package doctest_test

import (
	"strings"
	"testing"

	"github.com/orion-agent/orion/internal/doctest"
)

func TestExtract(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []doctest.Block // File is always "d.md"
		err  string
	}{
		{name: "Modes", doc: "# T\n\n```sh\na\nb\n```\n\n```bash background\nd\n```\n```shell ci\nc\n```\n```sh no-run\nn\n```\n",
			want: []doctest.Block{{Line: 3, Mode: doctest.Run, Text: "a\nb\n"}, {Line: 8, Mode: doctest.Background, Text: "d\n"}, {Line: 11, Mode: doctest.CI, Text: "c\n"}, {Line: 14, Mode: doctest.NoRun, Text: "n\n"}}},
		{name: "OtherFencesAreNotRun", doc: "```\nls\n```\n```toml\nx = 1\n```\n```text\nrm -rf /\n```\n"},
		{name: "ShellInsideAnotherFence", doc: "````markdown\n```sh\nrm -rf /\n```\n````\n"},
		{name: "IndentedInAList", doc: "- step:\n\n  ```sh\n  echo hi\n  ```\n", want: []doctest.Block{{Line: 3, Text: "echo hi\n"}}},
		{name: "TildeFence", doc: "~~~sh\necho ~\n~~~\n", want: []doctest.Block{{Line: 1, Text: "echo ~\n"}}},
		{name: "HeredocWithBackticksInside", doc: "```sh\ncat <<'EOF'\n`x`\nEOF\n```\n", want: []doctest.Block{{Line: 1, Text: "cat <<'EOF'\n`x`\nEOF\n"}}},
		{name: "ErrUnknownMode", doc: "```sh norun\nx\n```\n", err: `d.md:1: shell block "sh norun": unknown mode "norun"`},
		{name: "ErrUnclosed", doc: "```sh\nx\n", err: "d.md: a fenced block is never closed"},
		{name: "ModeInComment", doc: "<!-- doctest: background -->\n```sh\nd\n```\n\n<!--doctest:no-run-->\n```bash\nn\n```\n```sh\na\n```\n",
			want: []doctest.Block{{Line: 2, Mode: doctest.Background, Text: "d\n"}, {Line: 7, Mode: doctest.NoRun, Text: "n\n"}, {Line: 10, Mode: doctest.Run, Text: "a\n"}}},
		{name: "ErrCommentUnknownMode", doc: "<!-- doctest: norun -->\n```sh\nx\n```\n", err: `d.md:1: doctest comment: unknown mode "norun"`},
		{name: "ErrCommentNotBeforeShell", doc: "<!-- doctest: no-run -->\n\n```sh\nx\n```\n", err: "d.md:1: doctest comment is not right before"},
		{name: "ErrCommentBeforeOtherFence", doc: "<!-- doctest: ci -->\n```text\nx\n```\n", err: "d.md:1: doctest comment is not right before"},
		{name: "ErrModeTwice", doc: "<!-- doctest: ci -->\n```sh no-run\nx\n```\n", err: "d.md:2: shell block \"sh no-run\": mode given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := doctest.Extract("d.md", []byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d blocks %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				w.File = "d.md"
				if got[i] != w {
					t.Errorf("block %d: got %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}

func TestLinksAndAnchors(t *testing.T) {
	doc := "# Durability and recovery: nothing is lost\n\n## The proxy's overhead\n\n## `orionctl` proxy\n\n## Notes\n\n## Notes\n\n" +
		"See [a](docs/a.md#x), [b](#notes-1), `[c](not-a-link.md)`, [web](https://example.com).\n\n```\n[d](in-a-fence.md)\n```\n"
	anchors := doctest.Anchors([]byte(doc))
	for _, a := range []string{"durability-and-recovery-nothing-is-lost", "the-proxys-overhead", "orionctl-proxy", "notes", "notes-1"} {
		if !anchors[a] {
			t.Errorf("no anchor %q in %v", a, anchors)
		}
	}
	links := doctest.Links([]byte(doc))
	var got []string
	for _, l := range links {
		got = append(got, l.Target)
	}
	if want := "docs/a.md#x #notes-1"; strings.Join(got, " ") != want {
		t.Errorf("links %q, want %q", got, want)
	}
	if links[0].Line != 11 {
		t.Errorf("first link on line %d, want 11", links[0].Line)
	}
}
