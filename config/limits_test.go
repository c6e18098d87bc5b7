package config

import (
	"fmt"
	"strings"
	"testing"
)

// Issue #38, point 6: a mapping of more than MaxMappingKeys keys is
// refused at FILE:LINE:COL of the first key beyond the limit, before
// anything is decoded (before: every key was decoded, each unknown one
// with a did-you-mean search: 80,000 keys took over a second, 250,000 in
// a 4 MiB file many).
func TestMappingLimit(t *testing.T) {
	keys := func(n int) string {
		var b strings.Builder
		b.WriteString("name: x\nrequester:\n  nic:\n")
		for i := range n {
			fmt.Fprintf(&b, "    k%d: %d\n", i, i)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name string
		n    int
		want string // the first error
	}{
		{name: "at the limit", n: MaxMappingKeys, want: `t.yaml:4:5: unknown key "k0" in requester.nic`},
		{name: "beyond", n: MaxMappingKeys + 1,
			want: fmt.Sprintf("t.yaml:%d:5: more than %d keys in one mapping (config.MaxMappingKeys); nothing was decoded", 4+MaxMappingKeys, MaxMappingKeys)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(keys(tc.n)))
			if err == nil {
				t.Fatalf("Parse(%d keys) = nil error, want %q", tc.n, tc.want)
			}
			if got, _, _ := strings.Cut(err.Error(), "\n"); !strings.HasPrefix(got, tc.want) {
				t.Errorf("Parse(%d keys) first error = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}
