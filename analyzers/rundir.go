package analyzers

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/netlumina/lumina/analyzers/integrity"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/generator/softrnic"
	"github.com/netlumina/lumina/internal/safefile"
)

// RunIntegrity are the options of the integrity check of a lumina run's
// trace: the switch's pipeline is pushed for every run, so its first
// mirror copy carries sequence number 1 and a loss before the first
// captured copy is caught. lumina run checks with them while it merges the
// dumps; lumina analyze checks a run directory with them.
var RunIntegrity = integrity.Options{ExpectFirstSeq: true}

// RunIntegrityFor is RunIntegrity with the test's timestamp tolerance
// (switch.timestamp-tolerance-ns).
func RunIntegrityFor(t *config.Test) integrity.Options {
	o := RunIntegrity
	if t != nil && t.Switch.TimestampToleranceNs > 0 {
		o.TimeToleranceNs = uint64(t.Switch.TimestampToleranceNs)
	}
	return o
}

// DirIntegrity returns the integrity options for analyzing dir: for a
// lumina run directory RunIntegrity, for a public Lumina repeat directory
// the defaults; either with the test file's timestamp tolerance. Any other
// path gets the defaults.
func DirIntegrity(dir string) integrity.Options {
	var o integrity.Options
	cfg := ""
	switch {
	case IsRunDir(dir):
		o, cfg = RunIntegrity, filepath.Join(dir, "config.yaml")
	case IsPublicRunDir(dir):
		cfg = PublicConfig(dir)
	}
	if cfg != "" && checkResultFile(cfg) == nil {
		if t, err := config.Load(cfg); err == nil && t.Switch.TimestampToleranceNs > 0 {
			o.TimeToleranceNs = uint64(t.Switch.TimestampToleranceNs)
		}
	}
	return o
}

// IsRunDir reports whether path is a lumina run's result directory (it
// holds the run's config.yaml and report.json).
func IsRunDir(path string) bool {
	return fileExists(filepath.Join(path, "config.yaml")) && fileExists(filepath.Join(path, "report.json"))
}

// RunInputs returns the trace and metadata for analyzing arg: a trace file,
// a `lumina run` result directory, or a public Lumina repeat directory
// (<result-path>/<i>, see PublicRunDir).
//
// From a lumina run directory it reads, in order (later overrides
// earlier), config.yaml (parameters; its aggregate-pcap-filename names the
// trace, default trace.pcap; trace.pcapng is also tried), meta.json or
// report.json (connections; the timestamp uncertainty the run's analysis
// used) and counters.json. metaPath, if set, overrides them all.
func RunInputs(arg, metaPath string) (string, model.Meta, error) {
	in, err := ReadInputs(arg, metaPath)
	return in.Trace, in.Meta, err
}

// Inputs are what lumina analyze analyzes (ReadInputs).
type Inputs struct {
	Trace string
	Meta  model.Meta
	// RunDir is the lumina run directory whose metadata Meta holds and
	// whose recorded verdicts ApplyRunRecord adds: arg itself, or the
	// directory of a trace that is its run's trace. "" otherwise.
	RunDir string
	// Notes say which metadata was read and which files beside the trace
	// were ignored (report.Report.Inputs).
	Notes []string
}

// ReadInputs is RunInputs, and says where the metadata came from. A trace
// file that is the trace of the lumina run directory holding it (e.g.
// RUN/trace.pcap) is analyzed with that directory's metadata and record,
// like RUN itself; another file in a run directory is analyzed alone, and
// a note says the run's files beside it were ignored.
func ReadInputs(arg, metaPath string) (Inputs, error) {
	var in Inputs
	st, err := os.Stat(arg)
	if err != nil {
		return in, err
	}
	in.Trace = arg
	switch dir := filepath.Dir(arg); {
	case st.IsDir() && IsPublicRunDir(arg):
		if in.Trace, in.Meta, err = publicInputs(arg); err != nil {
			return in, err
		}
	case st.IsDir():
		if in.Trace, in.Meta, err = runDirInputs(arg); err != nil {
			return in, err
		}
		if IsRunDir(arg) {
			in.RunDir = arg
		}
	case IsRunDir(dir):
		runTrace, meta, err := runDirInputs(dir)
		if err != nil || !sameFile(runTrace, arg) {
			in.Notes = append(in.Notes, fmt.Sprintf("ignored the lumina run's files beside the trace (%s): the trace is not the run's; analyze %s for the run",
				strings.Join(runFiles(dir), ", "), dir))
			break
		}
		in.Meta, in.RunDir = meta, dir
	}
	if in.RunDir != "" {
		in.Notes = append(in.Notes, "metadata: "+strings.Join(runFiles(in.RunDir), ", "))
	}
	if metaPath != "" {
		m, err := model.LoadMeta(metaPath)
		if err != nil {
			return in, err
		}
		in.Meta = in.Meta.Merge(m)
		in.Notes = append(in.Notes, "metadata: "+metaPath+" (--meta, over the others)")
	}
	return in, nil
}

// runFiles lists the metadata files of run directory dir that
// runDirInputs reads.
func runFiles(dir string) []string {
	var out []string
	for _, n := range []string{"config.yaml", "meta.json", "report.json", "counters.json"} {
		if p := filepath.Join(dir, n); fileExists(p) && !(n == "report.json" && fileExists(filepath.Join(dir, "meta.json"))) {
			out = append(out, p)
		}
	}
	return out
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// runDirInputs reads a lumina run directory (see RunInputs).
func runDirInputs(dir string) (string, model.Meta, error) {
	var meta model.Meta
	var hosts []string // the test's hosts, in file order
	names := []string{"trace.pcap", "trace.pcapng"}
	if p := filepath.Join(dir, "config.yaml"); fileExists(p) {
		if err := checkResultFile(p); err != nil {
			return "", meta, err
		}
		t, err := config.Load(p)
		if err != nil {
			return "", meta, err
		}
		meta.Params = ParamsFromConfig(t)
		for _, h := range t.Hosts {
			hosts = append(hosts, h.Name)
		}
		if n := t.AggregatePcapFilename; n != "" && n != names[0] {
			names = append([]string{n}, names...)
		}
	}
	tracePath := ""
	for _, n := range names {
		if p := filepath.Join(dir, n); fileExists(p) {
			tracePath = p
			break
		}
	}
	if tracePath == "" {
		return "", meta, fmt.Errorf("%s: no %s in the run directory", dir, strings.Join(names, " or "))
	}
	if err := checkResultFile(tracePath); err != nil {
		return "", meta, err
	}
	for _, n := range []string{"meta.json", "report.json"} {
		if p := filepath.Join(dir, n); fileExists(p) {
			if err := checkResultFile(p); err != nil {
				return "", meta, err
			}
			m, err := model.LoadMetaWith(p, safefile.NoFollow)
			if err != nil {
				return "", meta, err
			}
			meta = meta.Merge(m)
			break
		}
	}
	if p := filepath.Join(dir, "counters.json"); fileExists(p) {
		if err := checkResultFile(p); err != nil {
			return "", meta, err
		}
		c, err := model.LoadMetaWith(p, safefile.NoFollow)
		if err != nil {
			return "", meta, err
		}
		meta = meta.Merge(c)
	}
	orderNICs(meta.NICs, hosts)
	return tracePath, meta, nil
}

// orderNICs puts nics in the order of the test's hosts, as lumina run
// lists them (counters.json keeps them by name); NICs of no host last.
func orderNICs(nics []model.NIC, hosts []string) {
	rank := func(n model.NIC) int {
		if i := slices.Index(hosts, n.Name); i >= 0 {
			return i
		}
		return len(hosts)
	}
	slices.SortStableFunc(nics, func(a, b model.NIC) int { return rank(a) - rank(b) })
}

// ParamsFromConfig reads the analyzers' parameters from a run's resolved
// test file: MTU, QP timeout and retry_cnt, and the notification point's
// CNP settings (the data receiver: the responder, or the requester for
// READ). A NAK is a CNP trigger with slow restart when the NP's
// personality sends CNPs with NAKs (nakTriggersCNP).
//
// The values are the first flow's (the two-host form's traffic): its MTU,
// its notification point's CNP settings, its requester's adaptive
// retransmission and prio-dscp-map; the timeout and retry_cnt are unknown
// (nil) when the flows differ in them. In the hosts form, Params.Hosts
// also holds every host's addresses and CNP settings, which the checks
// take per notification point.
func ParamsFromConfig(t *config.Test) model.Params { return ParamsFromRun(t, nil) }

// ParamsFromRun is ParamsFromConfig with the software-RNIC personalities a
// run loaded, by host name (orchestrator.Run.Personality): a NAK's CNP
// (Personality.CNPOnNAK) and the line rate come from them. A host without
// one has its personality loaded from t (nic.personality, a file relative
// to the test file); if that cannot be read (a run directory without the
// file), the built-in personality that models its nic.type, if any.
func ParamsFromRun(t *config.Test, pers map[string]softrnic.Personality) model.Params {
	var p model.Params
	if !t.HostsForm || len(t.Flows) == 0 {
		c := *t // Normalize on a copy: t may have been built by hand
		c.Normalize()
		t = &c
	}
	f0 := t.Flows[0]
	p.MTU = f0.MTU
	p.DeadlockNs = int64(t.DeadlockMs) * int64(time.Millisecond) // 0: no deadlock check
	if v := f0.MinRetransmitTimeout; v >= 0 && v <= 31 {
		to := uint8(v)
		p.Timeout = &to
	}
	if v := f0.MaxRetransmitRetry; v >= 0 && v <= 7 {
		p.RetryCnt = &v
	}
	// rnr_retry: the largest of the flows' (the laxest bound); 7
	// (infinite), the default, stays nil.
	rnr := 0
	for _, f := range t.Flows {
		rnr = max(rnr, f.RNRRetry)
	}
	if rnr < 7 {
		p.RNRRetry = &rnr
	}
	for _, f := range t.Flows[1:] {
		if f.MinRetransmitTimeout != f0.MinRetransmitTimeout {
			p.Timeout = nil
		}
		if f.MaxRetransmitRetry != f0.MaxRetransmitRetry {
			p.RetryCnt = nil
		}
	}
	p.ODP = t.ODPInTest()
	for i := range t.Hosts { // the two-host form normalized: requester, responder
		h := &t.Hosts[i]
		if !h.NIC.ODPOn() {
			continue
		}
		p.ODPIPs = append(p.ODPIPs, config.HostIPs(h.Host, i)...)
	}
	host := func(name string) config.Host {
		if h := t.Host(name); h != nil {
			return h.Host
		}
		return config.Host{}
	}
	npName := f0.To
	if f0.Verb == config.VerbRead && f0.NumReadQPs == 0 {
		npName = f0.From
	}
	np := host(npName)
	us := float64(np.RoCE.MinTimeBetweenCNPs)
	p.MinTimeBetweenCNPsUs = &us
	req := host(f0.From)
	p.AdaptiveRetrans = req.RoCE.AdaptiveRetrans
	p.NAKTriggersCNP = nakTriggersCNP(t, npName, np, pers)
	if m := req.NIC.PrioDSCPMap; len(m) > 0 {
		p.PrioDSCPMap = m
	}
	if w := t.Switch.PFCWatchdog; w != nil {
		p.PFCDetectionNs, p.PFCRestorationNs = int64(w.DetectionMs)*1e6, int64(w.RestorationMs)*1e6
	}
	// A fabric: the shortest detection time of its switches' watchdogs
	// (one pair of times for the trace's inferred firings).
	for _, s := range t.Switches {
		if w := s.Switch.PFCWatchdog; w != nil && (p.PFCDetectionNs == 0 || int64(w.DetectionMs)*1e6 < p.PFCDetectionNs) {
			p.PFCDetectionNs, p.PFCRestorationNs = int64(w.DetectionMs)*1e6, int64(w.RestorationMs)*1e6
		}
	}
	if !t.HostsForm {
		return p
	}
	for _, f := range t.Flows {
		p.AdaptiveRetrans = p.AdaptiveRetrans || host(f.From).RoCE.AdaptiveRetrans
	}
	for _, h := range t.Hosts {
		us := float64(h.RoCE.MinTimeBetweenCNPs)
		hp := model.HostParams{Name: h.Name, MinTimeBetweenCNPsUs: &us, NAKTriggersCNP: nakTriggersCNP(t, h.Name, h.Host, pers)}
		if pp, ok := personalityOf(t, h.Name, h.Host, pers, false); ok {
			hp.LinkGbps = pp.LineRateGbps
		}
		for _, a := range h.NIC.IPList {
			hp.IPs = append(hp.IPs, a.Addr())
		}
		if len(p.PrioDSCPMap) == 0 && len(h.NIC.PrioDSCPMap) > 0 {
			p.PrioDSCPMap = h.NIC.PrioDSCPMap
		}
		p.Hosts = append(p.Hosts, hp)
	}
	return p
}

// nakTriggersCNP says a NAK of h (host name of t) is a CNP trigger: slow
// restart on, and a personality that sends a CNP with each NAK
// (softrnic.Personality.CNPOnNAK; personalityOf).
func nakTriggersCNP(t *config.Test, name string, h config.Host, pers map[string]softrnic.Personality) bool {
	if !h.RoCE.SlowRestart {
		return false
	}
	p, ok := personalityOf(t, name, h, pers, true)
	return ok && p.CNPOnNAK
}

// personalityOf returns the personality of host name (h in t): the run's
// (pers), else the one its nic.personality names, else, with byType, the
// built-in personality that models its nic.type (a hardware NIC, or a run
// directory without the personality file); false if none.
func personalityOf(t *config.Test, name string, h config.Host, pers map[string]softrnic.Personality, byType bool) (softrnic.Personality, bool) {
	if p, ok := pers[name]; ok {
		return p, true
	}
	file := h.NIC.Personality
	if path := config.PersonalityPath(t, file); path != "" {
		file = path
	}
	if file != "" {
		if p, err := softrnic.LoadPersonality(file); err == nil {
			return p, true
		}
	}
	if byType && h.NIC.Type != "" && !strings.HasSuffix(h.NIC.Type, ".yaml") && !strings.HasSuffix(h.NIC.Type, ".yml") {
		if p, err := softrnic.LoadPersonality(h.NIC.Type); err == nil {
			return p, true
		}
	}
	return softrnic.Personality{}, false
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
