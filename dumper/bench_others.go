//go:build !linux

package dumper

import (
	"context"
	"fmt"
	"io"
)

// RunBench needs Linux network namespaces.
func RunBench(ctx context.Context, cfg BenchConfig, stdout, stderr io.Writer) ([]BenchResult, error) {
	return nil, fmt.Errorf("%w: the benchmark needs Linux", ErrNotSupported)
}

// ProcessCPUNs returns 0 off Linux.
func ProcessCPUNs() int64 { return 0 }
