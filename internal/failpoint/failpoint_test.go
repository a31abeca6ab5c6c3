package failpoint

import "testing"

func TestParse(t *testing.T) {
	got, err := Parse(" tx.renamed=2, tx.committed=1 ,")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["tx.renamed"] != 2 || got["tx.committed"] != 1 {
		t.Errorf("Parse = %v", got)
	}
	if _, panics, err := parse("a=1:panic,b=2"); err != nil || !panics["a"] || panics["b"] {
		t.Errorf("parse: panics %v, err %v", panics, err)
	}
	for _, bad := range []string{"x", "x=0", "=1", "x=y", "x=1:explode", "x=:panic"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// An unarmed point does nothing; the test process would die otherwise.
func TestHitUnarmed(t *testing.T) {
	for range 3 {
		Hit("tx.renamed")
	}
}
