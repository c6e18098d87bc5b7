//go:build !unix

package main

// diskFree is unknown off Unix: the disk check is skipped.
func diskFree(string) (int64, bool) { return 0, false }

// sameFS is unknown off Unix: false.
func sameFS(string, string) bool { return false }
