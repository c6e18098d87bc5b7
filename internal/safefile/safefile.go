package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Limits of the files lumina reads whole, by kind.
const (
	// MaxRecordSize is the limit of a run's JSON records (report.json,
	// counters.json, meta.json, suite.json): a run with 16,384 connections
	// and its events tables writes tens of MiB.
	MaxRecordSize = 512 << 20
	// MaxYAMLSize is the limit of the YAML files lumina reads besides test
	// and personality files (which have their own, also 4 MiB): a public
	// Lumina counter dump, a collie search space.
	MaxYAMLSize = 4 << 20
)

var (
	// ErrTooLarge is wrapped by ReadFile's error for a file above its limit.
	ErrTooLarge = errors.New("file too large")
	// ErrNotRegular is wrapped by the error for a path that is not a
	// regular file (a FIFO, a device, a socket); a directory gives
	// syscall.EISDIR, as reading one would.
	ErrNotRegular = errors.New("not a regular file")
	// ErrSymlink is wrapped by the error for a path that is a symbolic
	// link where none is followed (NoFollow, WriteFile's target).
	ErrSymlink = errors.New("a symbolic link, not followed")
)

// Options change how Open and ReadFile treat a path.
type Options struct {
	// NoFollow refuses a path that is a symbolic link (ErrSymlink).
	// Default false: links are followed, to a regular file.
	NoFollow bool
}

// NoFollow are the Options for files inside a result directory.
var NoFollow = Options{NoFollow: true}

// kindOf names a non-regular file's type for an error.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a plain file"
}

func notRegular(op, path string, m fs.FileMode) error {
	if m.IsDir() {
		return &fs.PathError{Op: op, Path: path, Err: syscall.EISDIR}
	}
	return &fs.PathError{Op: op, Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(m))}
}

// Open opens the regular file at path for reading. A path that is not a
// regular file is refused with ErrNotRegular before it is opened (and
// again from the open descriptor, which is opened without blocking); with
// o.NoFollow, a symbolic link with ErrSymlink. The errors are
// *fs.PathError.
func Open(path string, o Options) (*os.File, error) {
	stat := os.Stat
	if o.NoFollow {
		stat = os.Lstat
	}
	st, err := stat(path)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			pe.Op = "open" // as os.Open says it
		}
		return nil, err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular("open", path, st.Mode())
	}
	f, err := openFile(path, o.NoFollow)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, notRegular("open", path, st.Mode())
	}
	return f, nil
}

// ReadFile reads the regular file at path, of at most limit bytes. A
// larger file is refused with ErrTooLarge (having read at most limit+1
// bytes), anything but a regular file as Open refuses it.
func ReadFile(path string, limit int64, o Options) ([]byte, error) {
	f, err := Open(path, o)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func() error {
		return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: above the %s limit", ErrTooLarge, Size(limit))}
	}
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		return nil, tooLarge()
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge()
	}
	return data, nil
}

// Size renders a limit: 4 MiB, 512 MiB, 1000 bytes.
func Size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// WriteFile writes data to the file at path, replacing it atomically: a
// new file in the same directory, created exclusively (no link followed),
// renamed over path. A path that is a symbolic link is refused
// (ErrSymlink), one that is not a regular file too (ErrNotRegular);
// either leaves the path as it was.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&fs.ModeSymlink != 0 {
			return &fs.PathError{Op: "write", Path: path, Err: ErrSymlink}
		}
		if !st.Mode().IsRegular() {
			return notRegular("write", path, st.Mode())
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
