package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ResultStore keeps one finished attempt of a job. runDir is laid out as
// lumina run -o runDir writes it: runDir/<test>/<repeat>/. Store must be
// idempotent by job.ID: a redelivered job's attempt replaces what an
// earlier attempt stored. The worker acks the job only after Store returns
// nil (an error leaves the job to be redelivered); it removes runDir
// afterwards if Store left it.
type ResultStore interface {
	Store(ctx context.Context, job JobSpec, runDir string, at Attempt) error
}

// Stores stores into each of its stores in order; the first error stops.
type Stores []ResultStore

// Store implements ResultStore.
func (s Stores) Store(ctx context.Context, job JobSpec, runDir string, at Attempt) error {
	for _, st := range s {
		if err := st.Store(ctx, job, runDir, at); err != nil {
			return err
		}
	}
	return nil
}

// DirStore keeps results as directories under Root: Root/jobs/<job-id>/
// holds what lumina run -o writes (<test>/<repeat>/...) and job.json (the
// job without its YAML, and the attempt). With Flat, Root/<test>/<repeat>/
// directly, as lumina run -o Root lays them out (lumina lab run: one
// submission, test names distinct), with Root/<test>/<repeat>/job.json.
// A redelivered job's directories replace the earlier attempt's: the new
// one is moved into place by rename, the old one removed.
type DirStore struct {
	Root string
	Flat bool
}

// JobDir is where a job's results go.
func (d DirStore) JobDir(id string) string { return filepath.Join(d.Root, "jobs", id) }

// jobRecord is job.json.
type jobRecord struct {
	Job     JobSpec `json:"job"`
	Attempt Attempt `json:"attempt"`
}

// Store implements ResultStore.
func (d DirStore) Store(ctx context.Context, job JobSpec, runDir string, at Attempt) error {
	job.YAML = nil
	rec, err := json.MarshalIndent(jobRecord{Job: job, Attempt: at}, "", "  ")
	if err != nil {
		return err
	}
	rec = append(rec, '\n')
	if !d.Flat {
		if err := os.WriteFile(filepath.Join(runDir, "job.json"), rec, 0o644); err != nil {
			return fmt.Errorf("results: %w", err)
		}
		return replaceDir(runDir, d.JobDir(job.ID))
	}
	// Flat: each <test>/<repeat> of runDir replaces Root's.
	tests, err := os.ReadDir(runDir)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	for _, te := range tests {
		if !te.IsDir() {
			continue
		}
		reps, err := os.ReadDir(filepath.Join(runDir, te.Name()))
		if err != nil {
			return fmt.Errorf("results: %w", err)
		}
		for _, re := range reps {
			if !re.IsDir() || strings.HasPrefix(re.Name(), ".") {
				continue
			}
			src := filepath.Join(runDir, te.Name(), re.Name())
			if err := os.WriteFile(filepath.Join(src, "job.json"), rec, 0o644); err != nil {
				return fmt.Errorf("results: %w", err)
			}
			if err := replaceDir(src, filepath.Join(d.Root, te.Name(), re.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// replaceDir moves src to dst, replacing dst: the old dst is renamed aside
// first and removed after, so dst is at every moment either the old or the
// new results, never a mix. src and dst must be on one file system (the
// worker's run directory is under Root for that).
func replaceDir(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	old := ""
	if _, err := os.Stat(dst); err == nil {
		o, err := os.MkdirTemp(filepath.Dir(dst), ".old-"+filepath.Base(dst)+"-")
		if err != nil {
			return fmt.Errorf("results: %w", err)
		}
		old = filepath.Join(o, "d")
		if err := os.Rename(dst, old); err != nil {
			os.Remove(o)
			return fmt.Errorf("results: replacing %s: %w", dst, err)
		}
		defer os.RemoveAll(o)
	}
	if err := os.Rename(src, dst); err != nil {
		if old != "" {
			os.Rename(old, dst) // put the old results back
		}
		return fmt.Errorf("results: %w", err)
	}
	return nil
}
