package suite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Issue #38, point 13: lumina diff refuses a report.json of null (it
// decoded as an empty run and compared, exit 0).
func TestLoadNullReport(t *testing.T) {
	for _, in := range []string{"null", "null\n", "[]"} {
		t.Run(in, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(in), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(dir); !errors.Is(err, ErrNotReport) {
				t.Errorf("Load(report.json %q) error = %v, want ErrNotReport", in, err)
			}
		})
	}
}
