package validate_test

import (
	"testing"

	"github.com/orion-agent/orion/internal/validate"
)

func TestMessagesUsePluralForms(t *testing.T) {
	for _, tt := range []struct {
		count int
		want  string
	}{
		{1, "content is not valid UTF-8: 1 invalid byte, the first at line 3, column 2; send the text as UTF-8"},
		{2, "content is not valid UTF-8: 2 invalid bytes, the first at line 3, column 2; send the text as UTF-8"},
	} {
		if got := (&validate.UTF8Error{Line: 3, Column: 2, Count: tt.count}).Error(); got != tt.want {
			t.Errorf("got %q\nwant %q", got, tt.want)
		}
	}
}
