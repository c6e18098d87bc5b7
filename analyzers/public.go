package analyzers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
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
// <side>_counter_{start,finish}.yml give the NIC counters.
func publicInputs(dir string) (string, model.Meta, error) {
	var meta model.Meta
	cfg := PublicConfig(dir)
	if cfg == "" {
		return "", meta, fmt.Errorf("%s: a public Lumina result directory, but no %s here or in its parent", dir, strings.Join(publicConfigNames, " or "))
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
	for _, h := range []struct {
		side string
		nic  config.NIC
	}{{"requester", t.Requester.NIC}, {"responder", t.Responder.NIC}} {
		base := filepath.Join(dir, publicRDMADir, h.side+"_counter_")
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
		n := model.NIC{Name: h.side, Before: before, After: after}
		if n.Before == nil {
			n.Before = model.Counters{}
		}
		for _, p := range h.nic.IPList {
			n.IPs = append(n.IPs, p.Addr())
		}
		meta.NICs = append(meta.NICs, n)
	}
	return tracePath, meta, nil
}

// readPublicCounters reads one of the public tool's counter dumps, YAML
// {counter-type: {name: value}} (port-counters, hw-counters,
// ethtool-counters), flattened to name → value. A missing file is nil.
func readPublicCounters(path string) (model.Counters, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc map[string]map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := model.Counters{}
	for _, group := range doc {
		for k, v := range group {
			switch v := v.(type) {
			case int:
				if v >= 0 {
					c[k] = uint64(v)
				}
			case uint64:
				c[k] = v
			}
		}
	}
	return c, nil
}
