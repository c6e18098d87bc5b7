package nic

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// irdmaConfigfs is where irdma exposes its RoCE knobs: a group created per
// verbs device with mkdir (Intel's irdma README; the public tool's
// config_traffic_gen).
const irdmaConfigfs = "/sys/kernel/config/irdma"

func (h *Host) planIntel(dev Device, p Params) ([]step, error) {
	fsys := h.fs()
	if dev.IBDev == "" {
		return nil, fmt.Errorf("%w: %s: no irdma verbs device (is the irdma module loaded? set nic.ib-device)", ErrNoDevice, dev.IfName)
	}
	if _, err := fsys.Stat(irdmaConfigfs); err != nil {
		return nil, fmt.Errorf("%w: %s missing (mount configfs and load irdma): %v", ErrUnsupported, irdmaConfigfs, err)
	}
	group := irdmaConfigfs + "/" + dev.IBDev
	file := group + "/roce_dcqcn_enable"
	// with runs fn inside the configfs group, creating and removing it
	// around fn unless it already existed.
	with := func(fn func() error) error {
		created := false
		if err := fsys.Mkdir(group); err == nil {
			created = true
		} else if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating %s: %w", group, err)
		}
		err := fn()
		if created {
			if rerr := fsys.Remove(group); rerr != nil && err == nil {
				err = fmt.Errorf("removing %s: %w", group, rerr)
			}
		}
		return err
	}
	var prev string
	err := with(func() error {
		b, err := fsys.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s does not exist", ErrUnsupported, file)
		}
		if err != nil {
			return err
		}
		prev = strings.TrimSpace(string(b))
		if err := writable(fsys, file); err != nil {
			return fmt.Errorf("%w: %w", ErrReadOnly, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return []step{{what: file, prev: prev, want: b01(p.DCQCNEnable), set: func(_ context.Context, v string) error {
		return with(func() error {
			err := fsys.WriteFile(file, []byte(v+"\n"))
			if isPerm(err) {
				return fmt.Errorf("%w: %w", ErrReadOnly, err)
			}
			return err
		})
	}}}, nil
}
