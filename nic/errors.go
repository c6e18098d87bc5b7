package nic

import "errors"

// Errors. Wrapped with the file, command or device they concern; match
// them with errors.Is.
var (
	// ErrNoDevice: the interface or verbs device does not exist.
	ErrNoDevice = errors.New("nic: no such device")
	// ErrUnsupported: the NIC, driver or platform lacks the knob or the
	// counters (a missing sysfs file, an unknown vendor, a non-Linux OS).
	ErrUnsupported = errors.New("nic: not supported")
	// ErrReadOnly: a knob's file refuses writes.
	ErrReadOnly = errors.New("nic: read-only")
	// ErrBadParams: a parameter is out of range.
	ErrBadParams = errors.New("nic: invalid parameters")
	// ErrCommand: mlxreg or mlnx_qos failed or printed something this
	// package cannot read.
	ErrCommand = errors.New("nic: command failed")
	// ErrRestore: restoring a previous value failed; the NIC may be left
	// partly configured (the error lists what could not be restored).
	ErrRestore = errors.New("nic: restore failed")
	// ErrNoCounters: neither hw_counters nor counters exist for the port.
	ErrNoCounters = errors.New("nic: no counters")
	// ErrCounter: some counter files could not be read or parsed (the other
	// counters are still returned).
	ErrCounter = errors.New("nic: unreadable counter")
)
