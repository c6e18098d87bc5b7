package main

import (
	"flag"
	"fmt"

	"github.com/netlumina/lumina/store"
	"github.com/netlumina/lumina/suite"
)

// diffSides are lumina diff's BASE and NEW: directories or suite.json files
// given as arguments, or selections of a Parquet results store (--store
// ROOT --base SEL --new SEL, docs/lab-results.md), one side of each kind at most.
type diffSides struct {
	root, base, new *string
}

func diffStoreFlags(fs *flag.FlagSet) diffSides {
	return diffSides{
		root: fs.String("store", "", "results store `root` (docs/lab-results.md) that --base and --new select from"),
		base: fs.String("base", "", "BASE as a `selection` of the store: key=value[,key=value…], e.g. firmware=22.39 (keys nic, firmware, date, job, test, testbed, valid, or a label)"),
		new:  fs.String("new", "", "NEW as a `selection` of the store, as --base"),
	}
}

// check says whether the arguments and flags name both sides once.
func (d diffSides) check(args []string) error {
	want := 2
	if *d.base != "" {
		want--
	}
	if *d.new != "" {
		want--
	}
	switch {
	case (*d.base != "" || *d.new != "") && *d.root == "":
		return usagef("diff: --base and --new select from a results store: give --store ROOT")
	case *d.root != "" && *d.base == "" && *d.new == "":
		return usagef("diff: --store needs --base SEL and/or --new SEL")
	case len(args) != want && want == 2:
		return usagef("diff needs BASE and NEW (run or suite directories, or suite.json files)")
	case len(args) != want:
		return usagef("diff: with --store and %s, give %d directories, not %d", map[bool]string{true: "--base and --new", false: "one of --base or --new"}[want == 0], want, len(args))
	}
	return nil
}

// load reads BASE and NEW, from the store when selected, else from the
// arguments in order.
func (d diffSides) load(args []string) (base, nw *suite.Suite, err error) {
	side := func(name, sel string) (*suite.Suite, error) {
		if sel != "" {
			s, err := store.ParseSelection(sel)
			if err != nil {
				return nil, usagef("diff: --%s: %v", map[string]string{"BASE": "base", "NEW": "new"}[name], err)
			}
			su, err := store.Select(*d.root, s)
			if err != nil {
				return nil, fmt.Errorf("diff: %s: %w", name, err)
			}
			return su, nil
		}
		arg := args[0]
		args = args[1:]
		su, err := suite.Load(arg)
		if err != nil {
			return nil, fmt.Errorf("diff: %s: %w", name, err)
		}
		su.Dir = arg
		return su, nil
	}
	if base, err = side("BASE", *d.base); err != nil {
		return nil, nil, err
	}
	if nw, err = side("NEW", *d.new); err != nil {
		return nil, nil, err
	}
	return base, nw, nil
}
