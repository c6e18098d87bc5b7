//go:build !cgo

package store

import (
	"os"
	"testing"
)

// TestDuckDB stands for the DuckDB tests (duckdb_test.go, doc_test.go),
// which need cgo: DuckDB's engine is a C++ library linked through cgo.
// Without a C compiler (CGO_ENABLED=0) they are not built; this says so,
// and fails where every test must run (LUMINA_REQUIRE_ALL=1, CI).
func TestDuckDB(t *testing.T) {
	const why = "the DuckDB tests need cgo (a C compiler; CGO_ENABLED=1)"
	if os.Getenv("LUMINA_REQUIRE_ALL") == "1" {
		t.Fatal("requirement missing (LUMINA_REQUIRE_ALL=1): " + why)
	}
	t.Skip(why)
}
