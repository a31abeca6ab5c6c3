// Command genman writes the man page of a cobra command-line tool from the
// tool's own help, so the page never drifts from the program: it runs
// `BIN --help`, then `BIN CMD --help` for every command listed (and their
// subcommands), and lays the texts out as a roff man page, followed by the
// sections of an extra roff file (ENVIRONMENT, FILES, EXIT STATUS, ...).
//
//	go run ./packaging/genman -bin dist/orionctl -summary "control oriond" \
//	    -extra packaging/man/orionctl.extra -date 2026-01-02 > orionctl.1
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

func main() {
	var (
		bin     = flag.String("bin", "", "the built program")
		summary = flag.String("summary", "", "the one-line summary of the NAME section")
		extra   = flag.String("extra", "", "roff file with the sections that follow COMMANDS")
		date    = flag.String("date", time.Now().UTC().Format("2006-01-02"), "the page's date")
		source  = flag.String("source", "orion", "the footer's source")
	)
	flag.Parse()
	if *bin == "" || *summary == "" {
		fmt.Fprintln(os.Stderr, "usage: genman -bin PROGRAM -summary TEXT [-extra FILE] [-date YYYY-MM-DD] > PAGE.1")
		os.Exit(2)
	}
	var extraText []byte
	if *extra != "" {
		var err error
		if extraText, err = os.ReadFile(*extra); err != nil {
			fmt.Fprintln(os.Stderr, "genman:", err)
			os.Exit(1)
		}
	}
	if err := write(os.Stdout, *bin, *summary, string(extraText), *date, *source); err != nil {
		fmt.Fprintln(os.Stderr, "genman:", err)
		os.Exit(1)
	}
}

// help is one command's help, split into cobra's sections.
type help struct {
	path        []string // the command's words after the program
	description []string
	usage       []string
	commands    []string // names of the subcommands listed
	rest        []string // flags, examples: everything after the description but the usage, commands and footer
}

// helpOf runs the program's help for the command path.
func helpOf(bin string, path []string) (*help, error) {
	cmd := exec.Command(bin, append(append([]string{}, path...), "--help")...)
	cmd.Env = helpEnv(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s --help: %w", bin, strings.Join(path, " "), err)
	}
	h := &help{path: path}
	section := "description"
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " ")
		switch {
		case line == "Usage:":
			section = "usage"
			continue
		case line == "Available Commands:" || line == "Additional Commands:":
			section = "commands"
			continue
		case line == "Global Flags:":
			// The root's flags, listed once under OPTIONS.
			section = "skip"
			continue
		case strings.HasPrefix(line, "Use \"") && strings.Contains(line, "for more information"):
			continue
		case strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") && section != "description":
			section = "rest"
		case strings.Contains(line, "-h, --help ") && len(path) > 0:
			continue
		}
		switch section {
		case "skip":
		case "description":
			h.description = append(h.description, line)
		case "usage":
			if line != "" {
				h.usage = append(h.usage, strings.TrimSpace(line))
			}
		case "commands":
			if f := strings.Fields(line); len(f) > 0 {
				if f[0] != "help" && f[0] != "completion" {
					h.commands = append(h.commands, f[0])
				}
			}
		default:
			h.rest = append(h.rest, line)
		}
	}
	h.description = trimBlank(h.description)
	h.rest = wrapAll(dropEmptySections(trimBlank(h.rest)), optionWidth)
	return h, sc.Err()
}

// helpEnv is the environment the help runs in: without XDG_* variables and
// TMPDIR, and with HOME=~, so that defaults the help computes read
// ~/.config/... and /tmp/... in the page, not the paths of the machine that
// built it (a long TMPDIR also pushed the socket's default past 80 columns).
func helpEnv(environ []string) []string {
	env := []string{"NO_COLOR=1", "HOME=~"}
	for _, kv := range environ {
		if strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "ORION_") || strings.HasPrefix(kv, "TMPDIR=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// optionWidth is the longest line of the OPTIONS and of each command's
// flags: man indents them by 7 columns, so they fit 80-column terminals.
const optionWidth = 73

// wrap breaks a line of flags or examples longer than width at spaces. A
// flag's description continues under the description's column, other
// lines under their own indentation.
func wrap(line string, width int) []string {
	if utf8.RuneCountInString(line) <= width {
		return []string{line}
	}
	trimmed := strings.TrimLeft(line, " ")
	col := len(line) - len(trimmed)
	if strings.HasPrefix(trimmed, "-") {
		if i := strings.Index(trimmed, "   "); i > 0 {
			j := i + strings.IndexFunc(trimmed[i:], func(r rune) bool { return r != ' ' })
			col += j
		}
	}
	if col > width/2 {
		col = width / 2
	}
	var out []string
	cur := line[:col] // a flag's name and type, or the indentation
	words := strings.Fields(line[col:])
	pad := strings.Repeat(" ", col)
	n := 0
	for _, w := range words {
		if n > 0 && utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(w) > width {
			out = append(out, cur)
			cur, n = pad, 0
		}
		if n > 0 {
			cur += " "
		}
		cur += w
		n++
	}
	return append(out, cur)
}

func wrapAll(lines []string, width int) []string {
	var out []string
	for _, l := range lines {
		out = append(out, wrap(l, width)...)
	}
	return out
}

// dropEmptySections removes section headers ("Flags:") left without
// lines, once the help flag is gone.
func dropEmptySections(lines []string) []string {
	var out []string
	for i, l := range lines {
		header := strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ")
		if header && (i+1 == len(lines) || strings.TrimSpace(lines[i+1]) == "") {
			continue
		}
		out = append(out, l)
	}
	return trimBlank(out)
}

func trimBlank(lines []string) []string {
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// walk collects the help of the program and every command under it.
func walk(bin string, path []string) ([]*help, error) {
	h, err := helpOf(bin, path)
	if err != nil {
		return nil, err
	}
	all := []*help{h}
	for _, c := range h.commands {
		sub, err := walk(bin, append(append([]string{}, path...), c))
		if err != nil {
			return nil, err
		}
		all = append(all, sub...)
	}
	return all, nil
}

// esc makes a line of help text safe as roff text: backslashes and
// hyphens escaped, and a leading . or ' (a roff request) neutralised.
func esc(line string) string {
	line = strings.ReplaceAll(line, `\`, `\e`)
	line = strings.ReplaceAll(line, "-", `\-`)
	if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
		line = `\&` + line
	}
	return line
}

func verbatim(w io.Writer, lines []string) {
	fmt.Fprintln(w, ".nf")
	for _, l := range lines {
		fmt.Fprintln(w, esc(l))
	}
	fmt.Fprintln(w, ".fi")
}

func write(w io.Writer, bin, summary, extra, date, source string) error {
	name := filepath.Base(bin)
	all, err := walk(bin, nil)
	if err != nil {
		return err
	}
	root := all[0]
	if len(root.usage) == 0 {
		return errors.New("no Usage: section in the help; is this a cobra program?")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, ".\\\" Generated by packaging/genman from `%s --help`; do not edit.\n", name)
	fmt.Fprintf(&b, ".TH %s 1 \"%s\" \"%s\" \"User Commands\"\n", strings.ToUpper(name), date, source)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", name, esc(summary))
	b.WriteString(".SH SYNOPSIS\n")
	verbatim(&b, root.usage)
	b.WriteString(".SH DESCRIPTION\n")
	verbatim(&b, root.description)
	if len(root.rest) > 0 {
		b.WriteString(".SH OPTIONS\n")
		verbatim(&b, root.rest)
	}
	if len(all) > 1 {
		b.WriteString(".SH COMMANDS\n")
		for _, h := range all[1:] {
			title := name + " " + strings.Join(h.path, " ")
			if len(h.usage) > 0 {
				title = h.usage[0]
			}
			fmt.Fprintf(&b, ".SS \"%s\"\n", strings.ReplaceAll(esc(title), `"`, `\(dq`))
			body := append([]string{}, h.description...)
			if len(h.usage) > 1 {
				body = append(body, "", "Usage:")
				for _, u := range h.usage {
					body = append(body, "  "+u)
				}
			}
			if len(h.rest) > 0 {
				body = append(append(body, ""), h.rest...)
			}
			verbatim(&b, body)
		}
	}
	if extra != "" {
		b.WriteString(strings.TrimRight(extra, "\n") + "\n")
	}
	_, err = w.Write(b.Bytes())
	return err
}
