package validate

import (
	"fmt"
	"strings"
	"testing"
)

func benchJSONDoc() string {
	var b strings.Builder
	b.WriteString("[\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "  {\"id\": %d, \"name\": \"item %d\", \"tags\": [\"a\", \"b\"], \"price\": %d.5, \"ok\": true},\n", i, i, i)
	}
	b.WriteString("  null\n]\n")
	return b.String()
}

// BenchmarkCheckJSON checks a 0.8 MB JSON array: valid, and with a missing
// comma near its end (the parser reads it all before the error).
func BenchmarkCheckJSON(b *testing.B) {
	doc := benchJSONDoc()
	broken := strings.Replace(doc, `"ok": true},`+"\n  null", `"ok": true}`+"\n  null", 1)
	for name, src := range map[string][]byte{"Valid": []byte(doc), "ErrorAtEnd": []byte(broken)} {
		b.Run(name, func(b *testing.B) {
			if (checkJSON(src) == nil) != (name == "Valid") {
				b.Fatal("wrong verdict")
			}
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				checkJSON(src)
			}
		})
	}
}
