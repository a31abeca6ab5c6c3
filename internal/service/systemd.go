package service

import (
	"fmt"
	"strings"

	"github.com/orion-agent/orion/packaging"
)

const systemdFile = "systemd/oriond.service"

// systemdUnit renders the unit file from the packaged one, which is the
// user unit for /usr/bin/oriond: its ExecStart becomes s.Exec; a system
// unit also runs as s.RunAs in a private runtime directory and is wanted
// by multi-user.target.
func systemdUnit(s Spec) (string, error) {
	exec, err := systemdExec(s.Exec)
	if err != nil {
		return "", err
	}
	text := packaging.SystemdUnit
	line := "ExecStart=" + exec + "\n"
	if s.System {
		if err := checkUnitValue("--run-as", s.RunAs); err != nil {
			return "", err
		}
		line = "User=" + s.RunAs + "\n" +
			"# The socket lives in /run/oriond, private to that account; its clients set\n" +
			"# ORION_SOCKET=" + SystemSocketFor(Systemd, s.RunAs) + ".\n" +
			"RuntimeDirectory=oriond\nRuntimeDirectoryMode=0700\n" + line
		text, err = replaceOnce(text, systemdFile, "as a systemd user service (systemctl --user).",
			"as a system-wide systemd service running as "+s.RunAs+".")
		if err != nil {
			return "", err
		}
		// No package installs a system unit: this one is install's.
		text, err = replaceOnce(text, systemdFile, "# The oriond package installs it for every user (enable it: systemctl --user enable --now oriond);\n"+
			"# `oriond service install` writes a copy with your settings on its ExecStart line,\n"+
			"# and `oriond service uninstall` removes that copy.\n",
			"# Written by `oriond service install --system`; `oriond service uninstall --system` removes it.\n")
		if err != nil {
			return "", err
		}
		text, err = replaceOnce(text, systemdFile, "\nWantedBy=default.target\n", "\nWantedBy=multi-user.target\n")
		if err != nil {
			return "", err
		}
	}
	return replaceLine(text, systemdFile, "ExecStart=", line)
}

// replaceLine replaces the one line of text starting with prefix by
// lines (which end in a newline).
func replaceLine(text, file, prefix, lines string) (string, error) {
	var out strings.Builder
	n := 0
	for _, l := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
			out.WriteString(lines)
			continue
		}
		out.WriteString(l)
	}
	if n != 1 {
		return "", fmt.Errorf("packaging/%s has %d %s lines, where oriond renders the unit from exactly one", file, n, prefix)
	}
	return out.String(), nil
}

func checkUnitValue(what, v string) error {
	if v == "" || strings.ContainsAny(v, "\n\r\x00") {
		return fmt.Errorf("%s %q cannot go in a unit file", what, v)
	}
	return nil
}

// systemdExec quotes a command line for ExecStart: words with anything but
// safe characters are double-quoted, and % and $ are escaped so systemd
// expands neither specifiers nor variables.
func systemdExec(args []string) (string, error) {
	words := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "\n\r\x00") {
			return "", fmt.Errorf("argument %q cannot go in a unit file", a)
		}
		a = strings.ReplaceAll(a, "%", "%%")
		a = strings.ReplaceAll(a, "$", "$$")
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%$") == "" {
			words[i] = a
			continue
		}
		a = strings.ReplaceAll(a, `\`, `\\`)
		a = strings.ReplaceAll(a, `"`, `\"`)
		words[i] = `"` + a + `"`
	}
	return strings.Join(words, " "), nil
}
