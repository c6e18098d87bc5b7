package nic

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// FS is what the package reads and writes: sysfs, configfs and procfs.
// Names are absolute paths as on the machine ("/sys/class/net/eth0/…").
type FS interface {
	ReadFile(name string) ([]byte, error)
	// WriteFile writes data to an existing file, like `echo data > name`.
	WriteFile(name string, data []byte) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Readlink(name string) (string, error)
	Stat(name string) (fs.FileInfo, error)
	// Mkdir and Remove create and remove configfs groups.
	Mkdir(name string) error
	Remove(name string) error
}

// OSFS is the machine's file system under Root, with sysfs's write rule
// on every file: a file with no write permission bit refuses writes with
// EACCES, even for root (kernfs does this for attributes without a store
// method). So a fake tree in a temporary directory behaves like sysfs.
//
// OSFS is safe for concurrent use.
type OSFS struct {
	// Root is prepended to every name. Default "" (the real root).
	Root string
}

func (o OSFS) path(name string) string {
	if o.Root == "" {
		return name
	}
	return filepath.Join(o.Root, name)
}

// ReadFile implements FS.
func (o OSFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(o.path(name)) }

// ReadDir implements FS.
func (o OSFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(o.path(name)) }

// Readlink implements FS.
func (o OSFS) Readlink(name string) (string, error) { return os.Readlink(o.path(name)) }

// Stat implements FS.
func (o OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(o.path(name)) }

// Mkdir implements FS.
func (o OSFS) Mkdir(name string) error { return os.Mkdir(o.path(name), 0o755) }

// Remove implements FS.
func (o OSFS) Remove(name string) error { return os.Remove(o.path(name)) }

// WriteFile implements FS.
func (o OSFS) WriteFile(name string, data []byte) error {
	p := o.path(name)
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o222 == 0 {
		return &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	// O_TRUNC matters for a fake tree only; sysfs ignores it.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writable(fsys FS, name string) error {
	st, err := fsys.Stat(name)
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o222 == 0 {
		return &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	return nil
}

func isPerm(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// Runner runs an external command and returns its standard output. The
// package runs exactly these argument vectors:
//
//	mlxreg -d PCI --reg_name ROCE_ACCL --get --yes
//	mlxreg -d PCI --reg_name ROCE_ACCL --set roce_adp_retrans_en=V --yes
//	mlxreg -d PCI --reg_name ROCE_ACCL --set roce_slow_restart_en=V --yes
//	mlnx_qos -i IF
//	mlnx_qos -i IF --trust=dscp|pcp
//	mlnx_qos -i IF --dscp2prio=set,DSCP,PRIO
//	rdma -j statistic show mr
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// ExecRunner runs commands with os/exec. A failure's error carries the
// command's standard error.
type ExecRunner struct{}

// Run implements Runner.
func (ExecRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return out, &cmdError{err: err, stderr: string(ee.Stderr)}
	}
	return out, err
}

type cmdError struct {
	err    error
	stderr string
}

func (e *cmdError) Error() string { return e.err.Error() + ": " + trimOut(e.stderr) }
func (e *cmdError) Unwrap() error { return e.err }

func trimOut(s string) string {
	const max = 300
	if len(s) > max {
		s = s[:max] + "…"
	}
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	return s
}
