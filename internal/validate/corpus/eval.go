package corpus

import (
	"bytes"
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/orion-agent/orion/internal/validate"
)

// Detections are the finding codes that count as "this content is broken
// or cut off". no_end_marker is not among them: every truncated copy lacks
// the marker by construction, and what is measured is whether the content
// itself gives the cut away. lazy_placeholder is counted apart.
var Detections = map[validate.Code]bool{
	validate.CodeSyntaxError:   true,
	validate.CodeTruncated:     true,
	validate.CodeUnclosedFence: true,
	validate.CodeMidSentence:   true,
	validate.CodeMidWord:       true,
	validate.CodeMidStatement:  true,
	validate.CodeEmptyHeading:  true,
}

// EvalOptions configure Evaluate.
type EvalOptions struct {
	// Cuts is the number of random truncations per file; 0 means 5.
	Cuts int
	Seed uint64
	// Workers is the number of files checked at once; 0 means GOMAXPROCS.
	Workers int
	// Keep is how many false positives and misses to keep per type, for
	// a verbose report; 0 keeps none.
	Keep int
}

// Sample is a file, or a truncated copy of one, with the finding that
// flagged it or the tail of a cut that was missed.
type Sample struct {
	Path string `json:"path"`
	// Cut is the length of the truncated copy; 0 for an original.
	Cut     int               `json:"cut,omitempty"`
	Finding *validate.Finding `json:"finding,omitempty"`
	// Tail is the end of a truncated copy that was not caught.
	Tail string `json:"tail,omitempty"`
}

// Row is the result for one file type.
type Row struct {
	Type  validate.FileType `json:"type"`
	Class validate.Class    `json:"class"`
	Files int               `json:"files"`
	// Invalid counts originals the type's parser rejects: they are not
	// valid files of their type (a Go template named .css, a JSON stream
	// named .json), so they are listed apart and left out of both rates.
	Invalid int `json:"invalid"`
	// Flagged counts valid originals with a detection finding: false
	// positives.
	Flagged int `json:"flagged"`
	// Truncations counts truncated copies and Caught those with a
	// detection finding; AsTruncation those whose finding is of category
	// truncation, which blocks a write by default.
	Truncations  int `json:"truncations"`
	Caught       int `json:"caught"`
	AsTruncation int `json:"as_truncation"`
	// Placeholders counts originals with a lazy_placeholder finding.
	Placeholders   int      `json:"placeholders"`
	InvalidFiles   []Sample `json:"invalid_files,omitempty"`
	FalsePositives []Sample `json:"false_positives,omitempty"`
	Misses         []Sample `json:"misses,omitempty"`
	PlaceholderHit []Sample `json:"placeholder_hits,omitempty"`
}

// FPRate is the share of valid originals flagged.
func (r Row) FPRate() float64 { return ratio(r.Flagged, r.Files-r.Invalid) }

// TPRate is the share of truncated copies caught.
func (r Row) TPRate() float64 { return ratio(r.Caught, r.Truncations) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// fileResult is what one file contributes to its row.
type fileResult struct {
	invalid     *Sample
	flagged     *Sample
	placeholder *Sample
	cuts        int
	caught      int
	asTrunc     int
	misses      []Sample
}

// Evaluate checks each file as it is and truncated at opts.Cuts random
// points, and returns one row per file type, sorted by class then type.
// Truncation points are drawn per file from (Seed, path), so results do
// not depend on scheduling, and fall on UTF-8 character boundaries (the
// daemon's clients split chunks there) strictly inside the content, never
// in trailing whitespace (cutting that loses nothing).
func Evaluate(ctx context.Context, files []File, opts EvalOptions) []Row {
	if opts.Cuts <= 0 {
		opts.Cuts = 5
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	results := make([]fileResult, len(files))
	var wg sync.WaitGroup
	next := make(chan int)
	for range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = evalFile(files[i], opts)
			}
		}()
	}
	for i := range files {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()

	rows := make(map[validate.FileType]*Row)
	for i, f := range files {
		r := rows[f.Type]
		if r == nil {
			r = &Row{Type: f.Type, Class: f.Type.Class()}
			rows[f.Type] = r
		}
		res := results[i]
		r.Files++
		if res.invalid != nil {
			r.Invalid++
			if len(r.InvalidFiles) < opts.Keep {
				r.InvalidFiles = append(r.InvalidFiles, *res.invalid)
			}
		}
		if res.flagged != nil {
			r.Flagged++
			if len(r.FalsePositives) < opts.Keep {
				r.FalsePositives = append(r.FalsePositives, *res.flagged)
			}
		}
		if res.placeholder != nil {
			r.Placeholders++
			if len(r.PlaceholderHit) < opts.Keep {
				r.PlaceholderHit = append(r.PlaceholderHit, *res.placeholder)
			}
		}
		r.Truncations += res.cuts
		r.Caught += res.caught
		r.AsTruncation += res.asTrunc
		for _, m := range res.misses {
			if len(r.Misses) < opts.Keep {
				r.Misses = append(r.Misses, m)
			}
		}
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	order := map[validate.Class]int{validate.ClassData: 0, validate.ClassCode: 1, validate.ClassProse: 2, validate.ClassText: 3}
	slices.SortFunc(out, func(a, b Row) int {
		if d := order[a.Class] - order[b.Class]; d != 0 {
			return d
		}
		if a.Type < b.Type {
			return -1
		}
		return 1
	})
	return out
}

// detection returns the first finding that counts as a detection.
func detection(r validate.Report) *validate.Finding {
	for i, f := range r.Findings {
		if Detections[f.Code] {
			return &r.Findings[i]
		}
	}
	return nil
}

func evalFile(f File, opts EvalOptions) fileResult {
	var res fileResult
	opt := validate.CheckOptions{Type: f.Type}
	rep := validate.Check(f.Path, f.Data, nil, false, opt)
	if !rep.SyntaxOK {
		for i, fd := range rep.Findings {
			if fd.Code == validate.CodeSyntaxError || fd.Code == validate.CodeTruncated {
				res.invalid = &Sample{Path: f.Path, Finding: &rep.Findings[i]}
				break
			}
		}
		return res
	}
	if d := detection(rep); d != nil {
		res.flagged = &Sample{Path: f.Path, Finding: d}
	} else if trimmed := bytes.TrimRight(f.Data, " \t\r\n"); len(trimmed) < len(f.Data) {
		// A stream that ends without the marker may also end without the
		// final newline; the original is complete all the same.
		if d := detection(validate.Check(f.Path, trimmed, nil, false, opt)); d != nil {
			res.flagged = &Sample{Path: f.Path + " (without final newline)", Finding: d}
		}
	}
	for _, fd := range rep.Findings {
		if fd.Code == validate.CodeLazyPlaceholder {
			res.placeholder = &Sample{Path: f.Path, Finding: &fd}
			break
		}
	}

	end := len(bytes.TrimRight(f.Data, " \t\r\n\f\v"))
	if end < 2 {
		return res
	}
	rng := rand.New(rand.NewPCG(opts.Seed, hashString(f.Path)))
	for range opts.Cuts {
		cut := 0
		for try := 0; try < 8 && cut == 0; try++ {
			c := 1 + rng.IntN(end-1)
			for c > 0 && !utf8.RuneStart(f.Data[c]) {
				c--
			}
			if len(bytes.TrimSpace(f.Data[:c])) > 0 {
				cut = c
			}
		}
		if cut == 0 {
			continue
		}
		res.cuts++
		rep := validate.Check(f.Path, f.Data[:cut], nil, false, opt)
		d := detection(rep)
		if d == nil {
			tail := f.Data[max(0, cut-80):cut]
			for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
				tail = tail[1:]
			}
			res.misses = append(res.misses, Sample{Path: f.Path, Cut: cut, Tail: string(tail)})
			continue
		}
		res.caught++
		if rep.Truncated {
			res.asTrunc++
		}
	}
	return res
}
