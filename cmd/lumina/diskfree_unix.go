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

// sameFS reports whether a and b are on one file system (same device).
func sameFS(a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Stat(a, &sa) != nil || unix.Stat(b, &sb) != nil {
		return false
	}
	return uint64(sa.Dev) == uint64(sb.Dev)
}
