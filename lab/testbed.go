package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/orchestrator"
)

// Testbed is a worker's testbed file (lumina lab worker --testbed FILE):
//
//	name: tb1            # the lease key: one worker at a time per name
//	testbed: sim         # sim, netns or remote (every job runs with this override)
//	nic: cx6             # recorded with the results (optional)
//	set: [PATH=VALUE...] # --set overrides applied to every test (e.g. this testbed's control-ip)
//	remote: {agent-token-file: F, agent-certs: DIR, rnic: verbs, p4info: F, device-config: F,
//	         intake-listen: A, intake-addr: A}
type Testbed struct {
	Name    string   `yaml:"name"`
	Testbed string   `yaml:"testbed"`
	NIC     string   `yaml:"nic"`
	Set     []string `yaml:"set"`
	Remote  struct {
		TokenFile    string `yaml:"agent-token-file"`
		CertDir      string `yaml:"agent-certs"`
		RNIC         string `yaml:"rnic"`
		P4Info       string `yaml:"p4info"`
		DeviceConfig string `yaml:"device-config"`
		IntakeListen string `yaml:"intake-listen"`
		IntakeAddr   string `yaml:"intake-addr"`
	} `yaml:"remote"`

	settings []config.Setting
}

// SimTestbed is the sim testbed named name.
func SimTestbed(name string) *Testbed { return &Testbed{Name: name, Testbed: "sim"} }

// LoadTestbed reads and checks a testbed file; errors name FILE:LINE:COL
// where the YAML decoder gives a line.
func LoadTestbed(path string) (*Testbed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("%s: larger than 1 MiB", path)
	}
	return ParseTestbed(path, data)
}

// ParseTestbed parses a testbed file's bytes (file names it in errors).
func ParseTestbed(file string, data []byte) (*Testbed, error) {
	var tb Testbed
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&tb); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: %s", file, strings.Join(te.Errors, "; "))
		}
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if tb.Name == "" {
		return nil, fmt.Errorf("%s: name: required (the testbed's lease key)", file)
	}
	if err := ValidPool(tb.Name); err != nil {
		return nil, fmt.Errorf("%s: name: %v", file, strings.Replace(err.Error(), "pool", "testbed name", 1))
	}
	if _, err := config.ParseTestbed(tb.Testbed); err != nil {
		return nil, fmt.Errorf("%s: testbed: want sim, netns or remote, not %q", file, tb.Testbed)
	}
	for _, s := range tb.Set {
		st, err := config.ParseSetting(s)
		if err != nil {
			return nil, fmt.Errorf("%s: set: %v", file, err)
		}
		tb.settings = append(tb.settings, st)
	}
	return &tb, nil
}

// RunFunc runs one job on a testbed, writing its results under outDir as
// lumina run -o outDir does, and returns its verdicts.
type RunFunc func(ctx context.Context, job JobSpec, tb *Testbed, outDir string) Outcome

// Outcome is what one job's run gave.
type Outcome struct {
	// Repeats are the test's repeats (its num-repeats), in order.
	Repeats []RepeatOutcome `json:"repeats"`
	// Error is the run's error ("" if none): an invalid test on this
	// testbed, a testbed that failed to start.
	Error string `json:"error,omitempty"`
}

// RepeatOutcome is one repeat's verdict.
type RepeatOutcome struct {
	Repeat int  `json:"repeat"`
	Valid  bool `json:"valid"`
	// Failed and Inconclusive name the checks with those verdicts.
	Failed       []string `json:"failed,omitempty"`
	Inconclusive []string `json:"inconclusive,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	// Dir is the repeat's directory relative to the run's outDir
	// (<test>/<repeat>).
	Dir string `json:"dir"`
}

// Passed reports whether the outcome has every repeat valid and no failed
// check.
func (o Outcome) Passed() bool {
	if o.Error != "" || len(o.Repeats) == 0 {
		return false
	}
	for _, r := range o.Repeats {
		if !r.Valid || len(r.Failed) > 0 {
			return false
		}
	}
	return true
}

// RunTest is the RunFunc of a real worker: the test through the same
// driver as lumina run (orchestrator.RunTest) with the testbed's override,
// --set settings and remote options.
func RunTest(ctx context.Context, job JobSpec, tb *Testbed, outDir string) Outcome {
	kind, _ := config.ParseTestbed(tb.Testbed) // checked by ParseTestbed
	var settings []config.Setting
	for _, st := range job.Set {
		s, err := config.ParseSetting(st)
		if err != nil {
			return Outcome{Error: err.Error()}
		}
		settings = append(settings, s)
	}
	settings = append(settings, tb.settings...)
	t, err := config.ParseWith(job.File, job.YAML, config.LoadOptions{Testbed: &kind, Personalities: true, Set: settings})
	if err != nil {
		return Outcome{Error: err.Error()}
	}
	o := orchestrator.Options{OutDir: outDir, Testbed: tb.Testbed, Remote: orchestrator.RemoteOptions{
		TokenFile: tb.Remote.TokenFile, CertDir: tb.Remote.CertDir, RNIC: tb.Remote.RNIC, P4Info: tb.Remote.P4Info,
		DeviceConfig: tb.Remote.DeviceConfig, IntakeListen: tb.Remote.IntakeListen, IntakeAddr: tb.Remote.IntakeAddr}}
	if o.Remote.RNIC == "" {
		o.Remote.RNIC = "verbs"
	}
	res := orchestrator.RunTest(ctx, t, o)
	var out Outcome
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	for i, r := range res.Repeats {
		ro := RepeatOutcome{Repeat: i, Dir: t.Name + "/" + fmt.Sprint(i)}
		if r.Report != nil {
			ro.Repeat = r.Report.Repeat
			ro.Dir = t.Name + "/" + fmt.Sprint(r.Report.Repeat)
			ro.Valid = r.Report.Valid
			ro.Failed = r.Report.Verdicts("fail")
			ro.Inconclusive = r.Report.Verdicts("inconclusive")
			if !r.Report.Valid {
				ro.Reason = firstLine(r.Report.Error)
				if ro.Reason == "" {
					ro.Reason = firstLine(r.Report.Integrity.Reason)
				}
			}
		} else {
			ro.Reason = "no report"
		}
		out.Repeats = append(out.Repeats, ro)
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
