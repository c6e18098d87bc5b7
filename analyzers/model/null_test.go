package model

import (
	"errors"
	"testing"
)

// Issue #38, point 13: a report.json (or meta.json, counters.json) that is
// not a JSON object is refused, not read as a run without metadata.
func TestParseMetaNotObject(t *testing.T) {
	for _, in := range []string{"null", " null\n", "[]", "1", `"x"`, ""} {
		t.Run(in, func(t *testing.T) {
			if _, err := ParseMeta([]byte(in)); !errors.Is(err, ErrMeta) {
				t.Errorf("ParseMeta(%q) error = %v, want ErrMeta", in, err)
			}
		})
	}
	if _, err := ParseMeta([]byte(" {}")); err != nil {
		t.Errorf("ParseMeta(%q) = %v, want no error", " {}", err)
	}
}
