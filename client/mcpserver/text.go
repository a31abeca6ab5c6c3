package mcpserver

import (
	"bufio"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/orion-agent/orion/internal/edit"
	"github.com/orion-agent/orion/protocol"
)

// errorText is a failed call's text for the model: what went wrong and
// what to do. The daemon's messages already end with the step to take;
// where an MCP model has other tools than the daemon's own client, the
// step is said in this server's terms.
func errorText(err error) string {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return err.Error()
	}
	d := pe.Data
	switch d.Reason {
	case protocol.ReasonSeqGap:
		return protocol.Fill(protocol.PromptMCPSeqGap, "last", fmt.Sprint(d.ExpectedSeq-1), "next", fmt.Sprint(d.ExpectedSeq))
	case protocol.ReasonSeqConflict:
		return protocol.PromptMCPSeqConflict
	case protocol.ReasonSessionNotFound:
		return protocol.Fill(protocol.PromptMCPSessionNotFound, "id", d.SessionID)
	case protocol.ReasonSessionClosed:
		return protocol.Fill(protocol.PromptMCPSessionClosed, "message", pe.Message)
	case protocol.ReasonValidationFailed, protocol.ReasonInvalidUTF8:
		findings := ""
		if v := d.Validation; v != nil {
			var fs []string
			for _, f := range v.Findings {
				if !f.Preexisting {
					fs = append(fs, findingText(f))
				}
			}
			if len(fs) > 0 {
				findings = protocol.Fill(protocol.PromptMCPFindings, "findings", strings.Join(capList(fs), "; "))
			}
		}
		return protocol.Fill(protocol.PromptMCPCheckRefused, "message", firstSentence(pe.Message), "findings", findings)
	case protocol.ReasonEditFailed:
		var b strings.Builder
		if d.Edit != nil {
			for _, bl := range d.Edit.Blocks {
				if bl.Status == "applied" || bl.Status == "already_applied" {
					continue
				}
				fmt.Fprintf(&b, " Block %d: %s", bl.Index, bl.Status)
				if bl.Message != "" {
					b.WriteString(" (" + bl.Message + ")")
				}
				b.WriteString(".")
			}
		}
		return protocol.Fill(protocol.PromptMCPEditRefused, "message", firstSentence(pe.Message), "blocks", b.String())
	case protocol.ReasonAttemptsExhausted:
		return protocol.Fill(protocol.PromptMCPAttemptsExhausted, "message", pe.Message)
	}
	return pe.Message
}

// firstSentence keeps a daemon message up to its advice, which the caller
// replaces with its own.
func firstSentence(msg string) string {
	if i := strings.Index(msg, ". "); i >= 0 {
		return msg[:i+1]
	}
	return msg
}

// editTarget is the first file an edit names, for an edit_file call
// without target_file: an envelope's or search/replace blocks' paths, or a
// unified diff's +++ line.
func editTarget(text string) string {
	if named := edit.NamedFiles([]byte(text)); len(named) > 0 {
		return named[0]
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "+++ ") {
			continue
		}
		p := strings.TrimSpace(strings.TrimPrefix(line, "+++ "))
		if i := strings.IndexByte(p, '\t'); i >= 0 {
			p = p[:i]
		}
		if p == "/dev/null" {
			continue
		}
		return strings.TrimPrefix(p, "b/")
	}
	return ""
}

// displayPath shows target relative to root when it lies inside it.
func displayPath(target, root string) string {
	if root == "" || !within(root, target) {
		return target
	}
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == "." {
		return target
	}
	return filepath.ToSlash(rel)
}
