//go:build unix

package main

import "golang.org/x/sys/unix"

// diskFree returns the bytes an unprivileged user may still write on the
// file system holding dir.
func diskFree(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
