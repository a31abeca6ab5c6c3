package corpus

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/orion-agent/orion/internal/validate"
)

// Target is what a class of file types must reach.
type Target struct {
	// MaxFP is the highest acceptable false-positive rate on originals.
	MaxFP float64
	// MinTP is the lowest acceptable true-positive rate on truncations;
	// 0 means no target.
	MinTP float64
}

// Targets are the agreed goals: no false positive on structured data,
// under 1% on code, under 5% on prose; over 95% of truncations caught for
// code and structured data.
var Targets = map[validate.Class]Target{
	validate.ClassData:  {MaxFP: 0, MinTP: 0.95},
	validate.ClassCode:  {MaxFP: 0.01, MinTP: 0.95},
	validate.ClassProse: {MaxFP: 0.05},
}

// Totals sums rows by class.
func Totals(rows []Row) []Row {
	var out []Row
	idx := make(map[validate.Class]int)
	for _, r := range rows {
		i, ok := idx[r.Class]
		if !ok {
			i = len(out)
			idx[r.Class] = i
			out = append(out, Row{Type: validate.FileType("all " + string(r.Class)), Class: r.Class})
		}
		t := &out[i]
		t.Files += r.Files
		t.Invalid += r.Invalid
		t.Flagged += r.Flagged
		t.Truncations += r.Truncations
		t.Caught += r.Caught
		t.AsTruncation += r.AsTruncation
		t.Placeholders += r.Placeholders
	}
	return out
}

// verdict says whether a row meets its class's target.
func verdict(r Row) string {
	t, ok := Targets[r.Class]
	if !ok {
		return ""
	}
	var miss []string
	if r.FPRate() > t.MaxFP {
		miss = append(miss, "FP")
	}
	if t.MinTP > 0 && r.TPRate() <= t.MinTP {
		miss = append(miss, "TP")
	}
	if len(miss) == 0 {
		return "ok"
	}
	return "MISS " + strings.Join(miss, "+")
}

// WriteTable prints one line per type, then one per class with its target
// and verdict.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "type\tclass\tfiles\tinvalid\tFP\tFP rate\ttruncations\tcaught\tTP rate\tas truncation\tplaceholder hits\ttarget\t")
	line := func(r Row) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%d\t%s\t\n",
			r.Type, r.Class, r.Files, r.Invalid, r.Flagged, pct(r.FPRate()), r.Truncations, r.Caught, pct(r.TPRate()),
			pct(ratio(r.AsTruncation, r.Truncations)), r.Placeholders, verdict(r))
	}
	for _, r := range rows {
		line(r)
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t\t\t")
	for _, r := range Totals(rows) {
		line(r)
	}
	return tw.Flush()
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// WriteDetails prints the kept false positives, misses and placeholder
// hits of each row.
func WriteDetails(w io.Writer, rows []Row) {
	for _, r := range rows {
		for _, s := range r.InvalidFiles {
			fmt.Fprintf(w, "BAD  %-10s %s: line %d: %s\n", r.Type, s.Path, s.Finding.Line, s.Finding.Message)
		}
		for _, s := range r.FalsePositives {
			fmt.Fprintf(w, "FP   %-10s %s: [%s] line %d: %s\n", r.Type, s.Path, s.Finding.Code, s.Finding.Line, s.Finding.Message)
		}
		for _, s := range r.PlaceholderHit {
			fmt.Fprintf(w, "PH   %-10s %s: line %d: %s\n", r.Type, s.Path, s.Finding.Line, s.Finding.Snippet)
		}
		for _, s := range r.Misses {
			fmt.Fprintf(w, "MISS %-10s %s@%d: …%q\n", r.Type, s.Path, s.Cut, s.Tail)
		}
	}
}
