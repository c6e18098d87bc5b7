//go:build !linux

package dumper

import "os"

// setDirect reports false: direct I/O is used on Linux only.
func setDirect(*os.File, bool) bool { return false }

// spoolBuffer returns an aligned buffer of n bytes.
func spoolBuffer(n int) ([]byte, func()) { return alignedBuffer(n), func() {} }
