package service

import (
	"encoding/xml"
	"path/filepath"
	"strings"

	"github.com/orion-agent/orion/packaging"
)

const launchdFile = "launchd/" + LaunchdLabel + ".plist"

// launchdPlist renders the launchd job from the packaged one, an agent for
// /usr/local/bin/oriond: its ProgramArguments become s.Exec and its log
// goes under s.Home; a daemon also names its UserName and logs to
// /Library/Logs.
func launchdPlist(s Spec) (string, error) {
	esc := func(v string) string {
		var b strings.Builder
		xml.EscapeText(&b, []byte(v))
		return b.String()
	}
	text := packaging.LaunchdPlist
	const argsOpen, argsClose = "\t<key>ProgramArguments</key>\n\t<array>\n", "\t</array>\n"
	i := strings.Index(text, argsOpen)
	j := strings.Index(text, argsClose)
	if i < 0 || j < i {
		_, err := replaceOnce(text, launchdFile, argsOpen, "")
		return "", err
	}
	var args strings.Builder
	for _, a := range s.Exec {
		args.WriteString("\t\t<string>" + esc(a) + "</string>\n")
	}
	text = text[:i+len(argsOpen)] + args.String() + text[j:]

	logFile := filepath.Join(s.Home, "Library/Logs/oriond.log")
	if s.System {
		logFile = "/Library/Logs/oriond.log"
	}
	var err error
	for _, key := range []string{"StandardErrorPath", "StandardOutPath"} {
		old := "<key>" + key + "</key>\n\t<string>/Users/YOU/Library/Logs/oriond.log</string>"
		if text, err = replaceOnce(text, launchdFile, old, "<key>"+key+"</key>\n\t<string>"+esc(logFile)+"</string>"); err != nil {
			return "", err
		}
	}
	if s.System {
		if err := checkUnitValue("--run-as", s.RunAs); err != nil {
			return "", err
		}
		text, err = replaceOnce(text, launchdFile, "</dict>\n</plist>\n",
			"\t<key>UserName</key>\n\t<string>"+esc(s.RunAs)+"</string>\n</dict>\n</plist>\n")
	}
	return text, err
}
