package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// TestFiles expands the test arguments of lumina run, validate and lab:
// each is a test YAML file or a directory, which means every *.yaml and
// *.yml directly in it, sorted; a directory without any is an error.
func TestFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		var found []string
		for _, pat := range []string{"*.yaml", "*.yml"} {
			m, _ := filepath.Glob(filepath.Join(a, pat))
			found = append(found, m...)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no .yaml test files", a)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}
