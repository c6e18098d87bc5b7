//go:build !unix

package testutil

// ProcessCPUNs is unknown here (0): benchmarks report no rate per
// CPU-second.
func ProcessCPUNs() int64 { return 0 }
