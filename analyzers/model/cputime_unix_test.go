//go:build unix

package model_test

import "syscall"

// processCPUNs is the process's user+sys CPU time in ns (0 if unknown).
func processCPUNs() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
