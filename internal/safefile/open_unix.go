//go:build unix

package safefile

import (
	"os"

	"golang.org/x/sys/unix"
)

// openFile opens path read-only without blocking (a FIFO would block
// until a writer appears) and, with noFollow, without following a final
// symbolic link (open(2): O_NONBLOCK, O_NOFOLLOW). The descriptor is made
// blocking again for the reads.
func openFile(path string, noFollow bool) (*os.File, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if noFollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
