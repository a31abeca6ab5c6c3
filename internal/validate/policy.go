package validate

import (
	"fmt"
	"strings"

	"github.com/orion-agent/orion/internal/textfmt"
)

// Policy says what a finding of some category does to a write.
type Policy string

// Policies.
const (
	// PolicyStrict refuses the write; the daemon keeps the session for a
	// corrected attempt and returns the findings.
	PolicyStrict Policy = "strict"
	// PolicyWarn writes and reports the findings.
	PolicyWarn Policy = "warn"
	// PolicyOff ignores the category.
	PolicyOff Policy = "off"
)

// Valid reports whether p is one of the known policies.
func (p Policy) Valid() bool {
	return p == PolicyStrict || p == PolicyWarn || p == PolicyOff
}

// Categories lists every finding category, in documentation order.
var Categories = []Category{
	CategoryDataSyntax, CategoryCodeSyntax, CategoryTruncation, CategoryTruncationHint,
	CategoryPlaceholder, CategoryEndMarker,
}

// DefaultPolicy is the built-in policy of a category: strict where the
// content is certainly broken or silently deletes code (syntax errors in
// structured data, structural evidence of a cut, new lazy placeholders),
// warn for the rest, whose findings can be wrong about a real file.
func DefaultPolicy(c Category) Policy {
	switch c {
	case CategoryDataSyntax, CategoryTruncation, CategoryPlaceholder:
		return PolicyStrict
	default:
		return PolicyWarn
	}
}

// Policies set a policy per category. The zero value means the built-in
// defaults. A session's Policies are laid over the daemon's with Over.
type Policies struct {
	// All applies to every category not named in Categories.
	All Policy `json:"all,omitempty"`
	// Categories sets the policy of single categories.
	Categories map[Category]Policy `json:"categories,omitempty"`
}

// For returns the policy for category c: p.Categories[c], else p.All, else
// the default.
func (p Policies) For(c Category) Policy {
	if v, ok := p.Categories[c]; ok && v != "" {
		return v
	}
	if p.All != "" {
		return p.All
	}
	return DefaultPolicy(c)
}

// Over returns p laid over base: for each category, p's own setting or
// p.All if p has one, else what base says. The result names every
// category.
func (p Policies) Over(base Policies) Policies {
	out := Policies{Categories: make(map[Category]Policy, len(Categories))}
	for _, c := range Categories {
		switch v, ok := p.Categories[c]; {
		case ok && v != "":
			out.Categories[c] = v
		case p.All != "":
			out.Categories[c] = p.All
		default:
			out.Categories[c] = base.For(c)
		}
	}
	return out
}

// Validate reports unknown policies or categories, so a session's options
// can be refused with a precise message.
func (p Policies) Validate() error {
	if p.All != "" && !p.All.Valid() {
		return fmt.Errorf("unknown validation policy %q: use strict, warn or off", p.All)
	}
	for c, v := range p.Categories {
		if !knownCategory(c) {
			return fmt.Errorf("unknown validation category %q: use one of %s", c, categoryList())
		}
		if !v.Valid() {
			return fmt.Errorf("unknown validation policy %q for %s: use strict, warn or off", v, c)
		}
	}
	return nil
}

func knownCategory(c Category) bool {
	for _, k := range Categories {
		if k == c {
			return true
		}
	}
	return false
}

func categoryList() string {
	s := make([]string, len(Categories))
	for i, c := range Categories {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// Decision is what a Report means for a write under some Policies.
type Decision struct {
	// Blocked is true when at least one new finding's category is strict.
	Blocked bool `json:"blocked"`
	// Blocking are the findings that block, Warnings the others that are
	// reported (pre-existing problems included); findings whose category is
	// off are in neither.
	Blocking []Finding `json:"blocking,omitempty"`
	Warnings []Finding `json:"warnings,omitempty"`
	// Summary says in one paragraph what happened and what to fix, for the
	// model.
	Summary string `json:"summary"`
}

// Decide applies p to r. A pre-existing finding never blocks.
func Decide(r Report, p Policies) Decision {
	var d Decision
	for _, f := range r.Findings {
		switch pol := p.For(f.Category); {
		case pol == PolicyOff:
		case pol == PolicyStrict && !f.Preexisting:
			d.Blocking = append(d.Blocking, f)
		default:
			d.Warnings = append(d.Warnings, f)
		}
	}
	d.Blocked = len(d.Blocking) > 0
	switch {
	case d.Blocked:
		var b strings.Builder
		fmt.Fprintf(&b, "The file was not written: %s must be fixed first.", textfmt.Count(len(d.Blocking), "problem", "problems"))
		for i, f := range d.Blocking {
			if i == 3 {
				fmt.Fprintf(&b, " (%d more)", len(d.Blocking)-3)
				break
			}
			fmt.Fprintf(&b, " [%s] %s.", f.Code, strings.TrimSuffix(f.Message, "."))
		}
		b.WriteString(" Send the corrected complete content.")
		d.Summary = b.String()
	case len(d.Warnings) > 0:
		d.Summary = fmt.Sprintf("The content passed with %s.", textfmt.Count(len(d.Warnings), "warning", "warnings"))
	default:
		d.Summary = "The content passed all checks."
	}
	return d
}
