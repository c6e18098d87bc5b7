package yamlbound

import (
	"fmt"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestFirstKeyBeyond(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		max       int
		want      string // "LINE:COL key", or "" for none
	}{
		{name: "within", doc: "a: 1\nb: {c: 1, d: 2}\n", max: 2},
		{name: "top level", doc: "a: 1\nb: 2\nc: 3\n", max: 2, want: "3:1 c"},
		{name: "nested", doc: "a:\n  - {x: 1, y: 2, z: 3}\nb: 2\n", max: 2, want: "2:18 z"},
		{name: "first in document order", doc: "a: {x: 1, y: 2, z: 3}\nb: {p: 1, q: 2, r: 3}\n", max: 2, want: "1:17 z"},
		{name: "alias not followed", doc: "a: &m {x: 1}\nb: *m\nc: *m\n", max: 3},
		{name: "empty", doc: "", max: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			got := ""
			if k := FirstKeyBeyond(&doc, tc.max); k != nil {
				got = fmt.Sprintf("%d:%d %s", k.Line, k.Column, k.Value)
			}
			if got != tc.want {
				t.Errorf("FirstKeyBeyond(%q, %d) = %q, want %q", tc.doc, tc.max, got, tc.want)
			}
		})
	}
	if k := FirstKeyBeyond(nil, 1); k != nil {
		t.Errorf("FirstKeyBeyond(nil) = %v, want nil", k)
	}
}
