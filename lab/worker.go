package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Worker runs a pool's jobs on one testbed. Several workers may name one
// testbed (a standby takes over when one dies); the lease lets one at a
// time use it.
//
// One turn of the loop: acquire the testbed's lease (create-if-absent);
// fetch one job of the pool; run it while a heartbeat renews the lease
// (compare-and-swap on its revision) and tells the server the job is in
// progress; renew once more, store the results, record the result, ack
// the job, release the lease (delete at its revision). A lease that could
// not be renewed is lost: the run is cancelled and the job left to be
// redelivered, nothing stored.
type Worker struct {
	Lab     *Lab
	Name    string
	Pool    string
	Testbed *Testbed
	Store   ResultStore
	// Run runs a job (default RunTest).
	Run RunFunc
	// WorkDir is where runs write before Store moves them, in
	// WorkDir/<Name>/ (default os.TempDir(); put it on the results' file
	// system so that a DirStore renames instead of copying). A killed
	// worker leaves its run there; a worker of the same name starting
	// again removes it.
	WorkDir string
	// Log receives one line per job and per trouble (default discarded).
	Log io.Writer
	// Heartbeat is the period of the in-progress acks and lease renewals
	// (default: a quarter of the shorter of the lease TTL and the ack wait).
	Heartbeat time.Duration
	// MaxJobs stops the worker after that many jobs (0: until ctx ends).
	MaxJobs int
}

// ErrLeaseLost says the worker's testbed lease expired or was taken.
var ErrLeaseLost = errors.New("lab: testbed lease lost")

func (w *Worker) logf(format string, a ...any) {
	if w.Log != nil {
		fmt.Fprintf(w.Log, "lab worker %s: "+format+"\n", append([]any{w.Name}, a...)...)
	}
}

// Serve runs jobs until ctx ends (nil then) or MaxJobs are done.
func (w *Worker) Serve(ctx context.Context) error {
	if w.Run == nil {
		w.Run = RunTest
	}
	if w.Store == nil {
		return errors.New("lab: worker without a result store")
	}
	if err := ValidPool(w.Pool); err != nil {
		return err
	}
	cons, err := w.Lab.Consumer(ctx, w.Pool)
	if err != nil {
		return err
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return err
	}
	hb := w.Heartbeat
	if hb <= 0 {
		hb = min(w.Lab.LeaseTTL, ci.Config.AckWait) / 4
	}
	fetchWait := max(min(2*time.Second, w.Lab.LeaseTTL/3), 100*time.Millisecond)
	if w.WorkDir == "" {
		w.WorkDir = os.TempDir()
	}
	w.WorkDir = filepath.Join(w.WorkDir, workerDirName(w.Name))
	if err := os.RemoveAll(w.WorkDir); err != nil {
		return err
	}
	if err := os.MkdirAll(w.WorkDir, 0o755); err != nil {
		return err
	}
	defer os.Remove(w.WorkDir)
	done := 0
	for ctx.Err() == nil && (w.MaxJobs == 0 || done < w.MaxJobs) {
		l, err := w.acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			w.logf("lease %s: %v", w.Testbed.Name, err)
			sleep(ctx, hb)
			continue
		}
		// The fetch ends with ctx (a stopping worker does not wait out
		// fetchWait).
		fctx, fcancel := context.WithTimeout(ctx, fetchWait)
		batch, err := cons.Fetch(1, jetstream.FetchContext(fctx))
		var msg jetstream.Msg
		if err == nil {
			for m := range batch.Messages() {
				msg = m
			}
		}
		fcancel()
		if msg == nil {
			l.release(context.WithoutCancel(ctx)) // also when stopping: the lease need not wait out its TTL
			// Let another worker of this testbed have a turn.
			sleep(ctx, time.Duration(50+rand.IntN(150))*time.Millisecond)
			continue
		}
		w.handle(ctx, msg, l, hb)
		done++
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// lease is a held testbed lease.
type lease struct {
	w        *Worker
	mu       sync.Mutex
	rev      uint64
	acquired uint64
	lastOK   time.Time
	value    Lease
	lost     bool
}

// acquire waits for the testbed's lease and takes it.
func (w *Worker) acquire(ctx context.Context) (*lease, error) {
	poll := max(min(w.Lab.LeaseTTL/8, time.Second), 20*time.Millisecond)
	for {
		v := Lease{Worker: w.Name, Since: time.Now().UTC()}
		b, _ := json.Marshal(v)
		t0 := time.Now()
		rev, err := w.Lab.Leases.Create(ctx, w.Testbed.Name, b)
		if err == nil {
			return &lease{w: w, rev: rev, acquired: rev, lastOK: t0, value: v}, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, err
		}
		sleep(ctx, poll+time.Duration(rand.Int64N(int64(poll))))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// renew updates the lease at its revision. A revision mismatch or a
// missing key means another worker has it or it expired: lost. Another
// error (the server unreachable) is lost only once the lease's TTL has
// passed since the last renewal.
func (l *lease) renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return ErrLeaseLost
	}
	b, _ := json.Marshal(l.value)
	t0 := time.Now()
	rev, err := l.w.Lab.Leases.Update(ctx, l.w.Testbed.Name, b, l.rev)
	switch {
	case err == nil:
		l.rev, l.lastOK = rev, t0
		return nil
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted),
		time.Since(l.lastOK) >= l.w.Lab.LeaseTTL:
		l.lost = true
		return fmt.Errorf("%w: %v", ErrLeaseLost, err)
	}
	return err
}

// release deletes the lease at its revision (if it is still ours).
func (l *lease) release(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost {
		return
	}
	if err := l.w.Lab.Leases.Delete(ctx, l.w.Testbed.Name, jetstream.LastRevision(l.rev)); err != nil && ctx.Err() == nil {
		l.w.logf("releasing lease %s: %v (it expires in %v)", l.w.Testbed.Name, err, l.w.Lab.LeaseTTL)
	}
}

// handle runs one delivered job.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg, l *lease, hb time.Duration) {
	defer l.release(context.WithoutCancel(ctx))
	var job JobSpec
	if err := json.Unmarshal(msg.Data(), &job); err != nil || job.ID == "" {
		w.logf("not a job (%v): terminated", err)
		_ = msg.Term()
		return
	}
	at := Attempt{Worker: w.Name, Testbed: w.Testbed.Name, TestbedKind: w.Testbed.Testbed, NIC: w.Testbed.NIC,
		Delivery: 1, Started: time.Now().UTC(), LeaseAcquired: l.acquired}
	if md, err := msg.Metadata(); err == nil {
		at.Delivery = md.NumDelivered
	}
	l.mu.Lock()
	l.value.Job = job.ID
	l.mu.Unlock()
	if err := l.renew(ctx); err != nil {
		w.logf("job %s: lease: %v; left for redelivery", job.ID, err)
		_ = msg.Nak()
		return
	}
	w.logf("job %s (%s, repeat set %d, delivery %d) on %s", job.ID, job.File, job.Repeat, at.Delivery, w.Testbed.Name)

	runDir, err := os.MkdirTemp(w.WorkDir, ".run-"+job.ID+"-")
	if err != nil {
		w.logf("job %s: %v", job.ID, err)
		_ = msg.NakWithDelay(hb)
		return
	}
	defer os.RemoveAll(runDir)

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // heartbeat
		defer wg.Done()
		t := time.NewTicker(hb)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			_ = msg.InProgress()
			if err := l.renew(runCtx); errors.Is(err, ErrLeaseLost) {
				w.logf("job %s: %v: cancelled", job.ID, err)
				cancel()
				return
			}
		}
	}()
	out := w.Run(runCtx, job, w.Testbed, runDir)
	cancel()
	wg.Wait()
	at.Finished = time.Now().UTC()
	if ctx.Err() != nil {
		// Stopping: the job goes back to the queue now.
		_ = msg.Nak()
		return
	}
	// The last renewal fences the results: an attempt whose lease lapsed
	// stores nothing (another worker may have had the testbed).
	deadline := time.Now().Add(w.Lab.LeaseTTL)
	for {
		err = l.renew(ctx)
		if err == nil || errors.Is(err, ErrLeaseLost) || time.Now().After(deadline) {
			break
		}
		sleep(ctx, hb/4)
	}
	if err != nil {
		w.logf("job %s: %v; left for redelivery", job.ID, err)
		_ = msg.Nak()
		return
	}
	l.mu.Lock()
	at.LeaseReleased = l.rev
	l.mu.Unlock()
	if err := w.Store.Store(ctx, job, runDir, at); err != nil {
		w.logf("job %s: storing results: %v; left for redelivery", job.ID, err)
		_ = msg.NakWithDelay(hb)
		return
	}
	job.YAML = nil
	res, _ := json.Marshal(Result{Job: job, Attempt: at, Outcome: out})
	if err := retry(ctx, deadline, hb/4, func() error { _, err := w.Lab.Results.Put(ctx, job.ID, res); return err }); err != nil {
		w.logf("job %s: recording the result: %v; left for redelivery", job.ID, err)
		_ = msg.Nak()
		return
	}
	if err := retry(ctx, deadline, hb/4, func() error { return msg.DoubleAck(ctx) }); err != nil {
		// It will be redelivered and run again; its results replace these.
		w.logf("job %s: ack: %v", job.ID, err)
		return
	}
	verdict := "passed"
	if !out.Passed() {
		verdict = "FAILED"
	}
	w.logf("job %s: %s", job.ID, verdict)
}

// retry calls f until it succeeds, ctx ends or deadline passes.
func retry(ctx context.Context, deadline time.Time, wait time.Duration, f func() error) error {
	for {
		err := f()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		sleep(ctx, wait)
	}
}

// workerDirName is name as one path element.
func workerDirName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') || (i == 0 && c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// DefaultWorkDir is a worker's work directory under a results root.
func DefaultWorkDir(root string) string { return filepath.Join(root, ".work") }
