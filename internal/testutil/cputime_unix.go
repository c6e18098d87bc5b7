//go:build unix

package testutil

import "syscall"

// ProcessCPUNs is the process's user+sys CPU time in ns (0 if unknown):
// what benchmarks divide their work by to report a rate per CPU-second,
// which other jobs on a shared machine do not inflate as they do wall
// time.
func ProcessCPUNs() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
