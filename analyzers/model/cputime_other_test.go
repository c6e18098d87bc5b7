//go:build !unix

package model_test

// processCPUNs is unknown here: benchmarks report no packets/cpu-s.
func processCPUNs() int64 { return 0 }
