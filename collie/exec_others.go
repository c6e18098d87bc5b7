//go:build !unix

package collie

import "os/exec"

// setProcessGroup is a no-op: the default cancel kills the shell only.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup is a no-op without process groups.
func killProcessGroup(*exec.Cmd) {}
