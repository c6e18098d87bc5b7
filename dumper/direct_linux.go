//go:build linux

package dumper

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setDirect turns O_DIRECT on or off for f and reports whether it is now
// on. A file system without direct I/O refuses it (EINVAL): f stays
// buffered.
func setDirect(f *os.File, on bool) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil {
			return
		}
		if on {
			fl |= unix.O_DIRECT
		} else {
			fl &^= unix.O_DIRECT
		}
		if _, err := unix.FcntlInt(fd, unix.F_SETFL, fl); err != nil {
			return
		}
		ok = on
	})
	return ok
}

// hugePage is the size of a transparent huge page on amd64 and arm64.
const hugePage = 2 << 20

// spoolBuffer returns a buffer of n bytes in transparent huge pages where
// the kernel grants them (madvise): a direct write pins the buffer's pages
// for every chunk, and a huge page is pinned at the cost of a small one.
// Elsewhere it is aligned Go memory. The returned func releases it.
func spoolBuffer(n int) ([]byte, func()) {
	size := (n + hugePage - 1) / hugePage * hugePage
	if m, err := unix.Mmap(-1, 0, size+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
		a := int((hugePage - uintptr(unsafe.Pointer(&m[0]))%hugePage) % hugePage)
		b := m[a : a+size : a+size]
		unix.Madvise(b, unix.MADV_HUGEPAGE)
		return b[:n:n], func() { unix.Munmap(m) }
	}
	return alignedBuffer(n), func() {}
}
