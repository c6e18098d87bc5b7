package collie

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Issue #38, point 6: a profile's mapping of more than maxMappingKeys keys
// is refused at its first key beyond the limit, before yaml.v3 decodes it
// into a map in time quadratic in its keys.
func TestProfileMappingLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("memory:\n")
	for i := range maxMappingKeys + 1 {
		fmt.Fprintf(&b, "  m%d: 1\n", i)
	}
	_, _, err := ParseProfile([]byte(b.String()))
	want := fmt.Sprintf("collie: invalid profile: line %d, column 3: more than %d keys in one mapping", maxMappingKeys+2, maxMappingKeys)
	if !errors.Is(err, ErrProfile) || err.Error() != want {
		t.Errorf("ParseProfile(%d memory keys) error = %v, want %q", maxMappingKeys+1, err, want)
	}
}
