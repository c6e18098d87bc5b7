// Package lab runs lumina tests across a lab of testbeds on NATS JetStream
// (docs/lab.md): a work-queue stream holds jobs, a key-value bucket leases
// each testbed to one worker at a time, and a worker acks a job only after
// its results are stored, so a crashed worker's job is redelivered and runs
// again elsewhere. The engine is JetStream's; lumina adds no scheduler.
package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/netlumina/lumina/config"
)

// JobSpec is one submitted job: one test file × testbed pool × repeat set.
// It travels as JSON in the work-queue stream. The test's own num-repeats
// run inside one job.
type JobSpec struct {
	// ID is deterministic (JobID): submitting the same file, pool, labels
	// and repeat set again names the same job, whose results replace the
	// earlier ones.
	ID string `json:"id"`
	// Test is the test's name (config.Test.Name).
	Test string `json:"test"`
	// File is the path as submitted: error positions, and the base of the
	// personality files the test names (read on the worker).
	File string `json:"file"`
	// YAML is the test file's bytes.
	YAML   []byte            `json:"yaml,omitempty"`
	Pool   string            `json:"pool"`
	Labels map[string]string `json:"labels,omitempty"`
	// Set are --set PATH=VALUE overrides of the test (lumina lab submit
	// --set), applied on the worker before the testbed file's.
	Set []string `json:"set,omitempty"`
	// Repeat is the repeat set, 0..N-1 (lumina lab submit --repeats N).
	Repeat int `json:"repeat"`
	// Submitted is when it was submitted (not part of ID).
	Submitted time.Time `json:"submitted"`
}

// Attempt says where and how one delivery of a job ran.
type Attempt struct {
	Worker      string `json:"worker"`
	Testbed     string `json:"testbed"`
	TestbedKind string `json:"testbed_kind"`
	// NIC is the testbed file's nic ("" if it names none).
	NIC string `json:"nic,omitempty"`
	// Delivery is 1 for the first delivery, 2+ for redeliveries.
	Delivery uint64    `json:"delivery"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// LeaseAcquired and LeaseReleased are the revisions of the testbed's
	// lease key when this attempt acquired it and when it last renewed it
	// before storing its results: revisions of one stream, so the
	// attempts of one testbed are ordered by them (a lease is a chain of
	// compare-and-swap updates from LeaseAcquired to LeaseReleased).
	LeaseAcquired uint64 `json:"lease_acquired"`
	LeaseReleased uint64 `json:"lease_released"`
}

// MaxRepeats bounds --repeats.
const MaxRepeats = 10000

// JobID is the job's deterministic id: 16 hex digits of the SHA-256 of the
// file's bytes, its path, the pool, the labels (sorted) and the repeat set.
func JobID(file string, yaml []byte, pool string, labels map[string]string, repeat int) string {
	return jobID(file, yaml, pool, labels, nil, repeat)
}

// jobID is JobID with the job's --set overrides (in order) hashed too.
func jobID(file string, yaml []byte, pool string, labels map[string]string, set []string, repeat int) string {
	h := sha256.New()
	w := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	w("lumina-lab-job-v1")
	w(file)
	w(string(yaml))
	w(pool)
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w(k)
		w(labels[k])
	}
	for _, st := range set {
		w("set")
		w(st)
	}
	fmt.Fprintf(h, "repeat=%d", repeat)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// SuiteFiles expands a suite: each argument is a test YAML file or a
// directory, which means every *.yaml and *.yml directly in it (sorted), as
// lumina run reads them (config.TestFiles).
func SuiteFiles(args []string) ([]string, error) { return config.TestFiles(args) }

// ParseLabel reads "k=v"; k is a non-empty word of letters, digits, '_',
// '-' and '.'.
func ParseLabel(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("label %q: want KEY=VALUE, e.g. firmware=22.39", s)
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return "", "", fmt.Errorf("label %q: key may hold letters, digits, '_', '-' and '.' only", s)
		}
	}
	return k, v, nil
}

// ValidPool reports whether name can name a pool: it is a NATS subject
// token and a consumer name.
func ValidPool(name string) error {
	if name == "" {
		return errors.New("pool name is empty")
	}
	if len(name) > 64 {
		return fmt.Errorf("pool %q: longer than 64 characters", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("pool %q: may hold letters, digits, '_' and '-' only", name)
		}
	}
	return nil
}

// Jobs builds the jobs of a suite: every file × repeat set 0..repeats-1,
// each file validated first as lumina run validates it (without the
// machine's resources, which are the worker's): an invalid file gives a
// config.ErrorList (FILE:LINE:COL) and no jobs.
func Jobs(files []string, pool string, labels map[string]string, repeats int, now time.Time) ([]JobSpec, error) {
	return JobsWith(files, pool, labels, nil, repeats, now)
}

// JobsWith is Jobs with --set PATH=VALUE overrides of every test, checked
// as lumina run --set checks them and part of each job's id.
func JobsWith(files []string, pool string, labels map[string]string, set []string, repeats int, now time.Time) ([]JobSpec, error) {
	if err := ValidPool(pool); err != nil {
		return nil, err
	}
	var settings []config.Setting
	for _, st := range set {
		s, err := config.ParseSetting(st)
		if err != nil {
			return nil, err
		}
		settings = append(settings, s)
	}
	if repeats < 1 || repeats > MaxRepeats {
		return nil, fmt.Errorf("repeats must be 1..%d, not %d", MaxRepeats, repeats)
	}
	var jobs []JobSpec
	var errs config.ErrorList
	var other []error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			other = append(other, err)
			continue
		}
		if len(data) > config.MaxFileSize {
			other = append(other, fmt.Errorf("%s: larger than %d MiB", f, config.MaxFileSize>>20))
			continue
		}
		t, err := config.ParseWith(f, data, config.LoadOptions{Personalities: true, Set: settings})
		var list config.ErrorList
		if errors.As(err, &list) {
			errs = append(errs, list...)
			continue
		} else if err != nil {
			other = append(other, err)
			continue
		}
		for r := range repeats {
			jobs = append(jobs, JobSpec{ID: jobID(f, data, pool, labels, set, r), Test: t.Name, File: f, YAML: data,
				Pool: pool, Labels: labels, Set: set, Repeat: r, Submitted: now.UTC()})
		}
	}
	if len(other) > 0 {
		return nil, errors.Join(other...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return jobs, nil
}
