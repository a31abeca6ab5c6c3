// Package textfmt formats counts and sizes for the sentences people and
// models read: "1 line", "3 lines", "1,204 bytes", "1.5 MiB".
//
// English only has two forms to choose from, so this is a few lines rather
// than github.com/dustin/go-humanize: its Plural and Comma would do, but its
// IBytes switches to no decimals at 10 units ("12 MiB"), where the progress
// line keeps one ("12.0 MiB") so that its width does not jump.
package textfmt

import (
	"fmt"
	"strconv"
)

// Integer is any integer type a count comes in.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Word is one when n is 1 and many otherwise (0 included: "0 lines").
func Word[N Integer](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n followed by the form of the noun that goes with it: "1 line",
// "2 lines".
func Count[N Integer](n N, one, many string) string {
	return fmt.Sprintf("%d %s", n, Word(n, one, many))
}

// CountGrouped is Count with the digits grouped by thousands: "1,204
// lines".
func CountGrouped[N Integer](n N, one, many string) string {
	return Thousands(n) + " " + Word(n, one, many)
}

// Thousands is n with its digits grouped by three with commas: 1,234,567.
func Thousands[N Integer](n N) string {
	s := fmt.Sprint(n)
	digits := s
	sign := ""
	if len(s) > 0 && s[0] == '-' {
		sign, digits = "-", s[1:]
	}
	if len(digits) <= 3 {
		return s
	}
	b := make([]byte, 0, len(s)+len(digits)/3)
	b = append(b, sign...)
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, digits[i])
	}
	return string(b)
}

// IBytes is n bytes in B, KiB, MiB, GiB or TiB, with one decimal above
// bytes: "12 B", "64.0 KiB", "1.5 MiB".
func IBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if f < unit {
			break
		}
		f, suffix = f/unit, s
	}
	return fmt.Sprintf("%.1f %s", f, suffix)
}

// Size says a file's size the way a summary line does: bytes below 1 KiB,
// whole KiB below 1 MiB, then MiB with one decimal ("812 bytes", "1,204
// KiB", "3.5 MiB").
func Size(n int64) string {
	switch {
	case n < 1024:
		return CountGrouped(n, "byte", "bytes")
	case n < 1<<20:
		return Thousands((n+512)/1024) + " KiB"
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
