package analyzers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/internal/safefile"
)

// The public Lumina's (github.com/lumina-test/lumina) result layout: a
// repeat's directory <result-path>/<i> holds pcap-result/ (the dumpers'
// pcaps and the merged trace, named by aggregate-pcap-filename),
// rdma-result/ (the hosts' counter dumps) and switch-result/. Its
// config.yml is the user's test file, which the public tool does not copy
// into the results.
const (
	publicPcapDir = "pcap-result"
	publicRDMADir = "rdma-result"
)

// publicConfigNames are the file names a public repeat directory's test
// file is looked up under, in the directory and then in its parent (the
// result-path).
var publicConfigNames = []string{"config.yml", "config.yaml"}

// IsPublicRunDir reports whether dir is a public Lumina repeat directory:
// it has a pcap-result/ subdirectory.
func IsPublicRunDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, publicPcapDir))
	return err == nil && st.IsDir()
}

// PublicConfig returns the path of a public repeat directory's test file:
// config.yml (or config.yaml) in dir or in its parent; "" if none.
func PublicConfig(dir string) string {
	for _, d := range []string{dir, filepath.Dir(filepath.Clean(dir))} {
		for _, n := range publicConfigNames {
			if p := filepath.Join(d, n); fileExists(p) {
				return p
			}
		}
	}
	return ""
}

// publicInputs reads a public Lumina repeat directory: the test file
// (PublicConfig) gives the parameters, the CNP interval among them, and
// the merged trace's name (aggregate-pcap-filename); rdma-result/'s
// <side>_counter_{start,finish}.yml give the NIC counters (side: requester
// and responder; a hosts-form test file's host names).
func publicInputs(dir string) (string, model.Meta, error) {
	var meta model.Meta
	for _, sub := range []string{publicPcapDir, publicRDMADir} {
		if err := checkResultSubdir(filepath.Join(dir, sub)); err != nil {
			return "", meta, err
		}
	}
	cfg := PublicConfig(dir)
	if cfg == "" {
		return "", meta, fmt.Errorf("%s: a public Lumina result directory, but no %s here or in its parent", dir, strings.Join(publicConfigNames, " or "))
	}
	if err := checkResultFile(cfg); err != nil {
		return "", meta, err
	}
	t, err := config.Load(cfg)
	if err != nil {
		return "", meta, err
	}
	meta.Params = ParamsFromConfig(t)
	tracePath := filepath.Join(dir, publicPcapDir, t.AggregatePcapFilename)
	if !fileExists(tracePath) {
		return "", meta, fmt.Errorf("%s: no %s in %s", dir, t.AggregatePcapFilename, publicPcapDir)
	}
	if err := checkResultFile(tracePath); err != nil {
		return "", meta, err
	}
	for _, h := range t.Hosts { // requester and responder in the two-host form
		base := filepath.Join(dir, publicRDMADir, h.Name+"_counter_")
		before, err := readPublicCounters(base + "start.yml")
		if err != nil {
			return "", meta, err
		}
		after, err := readPublicCounters(base + "finish.yml")
		if err != nil {
			return "", meta, err
		}
		if after == nil {
			continue
		}
		n := model.NIC{Name: h.Name, Before: before, After: after}
		if n.Before == nil {
			n.Before = model.Counters{}
		}
		for _, p := range h.NIC.IPList {
			n.IPs = append(n.IPs, p.Addr())
		}
		meta.NICs = append(meta.NICs, n)
	}
	return tracePath, meta, nil
}

// MaxCounterKeys is the largest number of keys in one mapping of a public
// counter dump (a counter type, or the types at the top): a real dump has a
// few hundred counters. A larger mapping is refused at its first key
// beyond the limit, before any counter is taken.
const MaxCounterKeys = 4096

// readPublicCounters reads one of the public tool's counter dumps, YAML
// {counter-type: {name: value}} (port-counters, hw-counters,
// ethtool-counters), flattened to name → value; a value that is not a
// non-negative integer is skipped. A missing file is nil. The file is a
// regular file inside the result directory (not a link), of at most
// safefile.MaxYAMLSize; its YAML is walked node by node, in time linear in
// its size (yaml.v3 decoding a mapping into a Go map checks duplicates in
// quadratic time), and errors are FILE:LINE:COL.
func readPublicCounters(path string) (model.Counters, error) {
	if err := checkResultFile(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	b, err := safefile.ReadFile(path, safefile.MaxYAMLSize, safefile.NoFollow)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	errAt := func(n *yaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d:%d: %s", path, n.Line, n.Column, fmt.Sprintf(format, args...))
	}
	// pairs checks mapping n's keys: strings, no duplicates, at most
	// MaxCounterKeys.
	pairs := func(n *yaml.Node, what string) error {
		seen := make(map[string]*yaml.Node, min(len(n.Content)/2, MaxCounterKeys))
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if i/2 >= MaxCounterKeys {
				return errAt(k, "more than %d keys in %s (analyzers.MaxCounterKeys)", MaxCounterKeys, what)
			}
			if k.Kind != yaml.ScalarNode {
				return errAt(k, "keys must be strings in %s", what)
			}
			if first, dup := seen[k.Value]; dup {
				return errAt(k, "duplicate key %q in %s (first at %d:%d)", k.Value, what, first.Line, first.Column)
			}
			seen[k.Value] = k
		}
		return nil
	}
	c := model.Counters{}
	if len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
		return c, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errAt(root, "want a mapping of counter types")
	}
	if err := pairs(root, "the counter types"); err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		group := root.Content[i+1]
		if group.ShortTag() == "!!null" {
			continue
		}
		if group.Kind != yaml.MappingNode {
			return nil, errAt(group, "%s: want a mapping of counters", root.Content[i].Value)
		}
		if err := pairs(group, root.Content[i].Value); err != nil {
			return nil, err
		}
		for j := 0; j+1 < len(group.Content); j += 2 {
			v := group.Content[j+1]
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
				continue
			}
			var u uint64
			if v.Decode(&u) == nil {
				c[group.Content[j].Value] = u
			}
		}
	}
	return c, nil
}
