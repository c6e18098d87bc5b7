package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Names in JetStream.
const (
	// StreamJobs is the work-queue stream of jobs; a job of pool P is a
	// message on SubjectJobs+P, its JobSpec as JSON, with the job id as
	// its Nats-Msg-Id (a second submission within the stream's duplicate
	// window is dropped).
	StreamJobs  = "LUMINA_JOBS"
	SubjectJobs = "lumina.jobs."
	// BucketLeases holds one key per leased testbed (its name), whose
	// value is a Lease; the bucket's TTL is the lease's lifetime.
	BucketLeases = "lumina-leases"
	// BucketResults holds one key per finished job (its id), whose value
	// is a Result: the latest attempt's.
	BucketResults = "lumina-results"
)

// Options are the lab's settings. They take effect when the stream, the
// buckets and a pool's consumer are created (by whoever opens the lab
// first); later Opens use what exists.
type Options struct {
	// Replicas of the stream and buckets (1; 3 on a 3-server cluster).
	Replicas int
	// LeaseTTL is the lease bucket's TTL: a lease not renewed for that
	// long expires (default 30 s).
	LeaseTTL time.Duration
	// AckWait is how long a delivered job may go without an ack or an
	// in-progress heartbeat before it is redelivered (default 60 s).
	AckWait time.Duration
	// MaxDeliver bounds a job's deliveries (default 10): a job that kills
	// every worker it reaches stops after that many.
	MaxDeliver int
}

func (o *Options) defaults() {
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.AckWait == 0 {
		o.AckWait = 60 * time.Second
	}
	if o.MaxDeliver == 0 {
		o.MaxDeliver = 10
	}
}

// Lab is a connection to a lab: its jobs stream and its buckets.
type Lab struct {
	NC      *nats.Conn
	JS      jetstream.JetStream
	Jobs    jetstream.Stream
	Leases  jetstream.KeyValue
	Results jetstream.KeyValue
	// LeaseTTL is the lease bucket's TTL as it exists.
	LeaseTTL time.Duration
	opts     Options
}

// Open opens the lab on nc, creating its stream and buckets if missing.
func Open(ctx context.Context, nc *nats.Conn, o Options) (*Lab, error) {
	o.defaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	l := &Lab{NC: nc, JS: js, opts: o}
	if l.Jobs, err = js.Stream(ctx, StreamJobs); errors.Is(err, jetstream.ErrStreamNotFound) {
		l.Jobs, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name: StreamJobs, Subjects: []string{SubjectJobs + ">"}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.FileStorage, Replicas: o.Replicas, Duplicates: 2 * time.Minute,
			Description: "lumina lab jobs (docs/lab.md)",
		})
	}
	if err != nil {
		return nil, fmt.Errorf("lab: jobs stream: %w", err)
	}
	kv := func(name string, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
		b, err := js.KeyValue(ctx, name)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			b, err = js.CreateKeyValue(ctx, cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("lab: bucket %s: %w", name, err)
		}
		return b, nil
	}
	// The lease bucket's TTL (the stream's MaxAge) ages out every
	// revision of a key; each renewal is a new revision, so a lease lives
	// LeaseTTL past its last renewal. nats.go v1.55's per-key TTL
	// (jetstream.KeyTTL) is set at Create only and Update cannot carry
	// one, so a renewal could not extend it: the bucket TTL is the one
	// that fits a renewed lease.
	if l.Leases, err = kv(BucketLeases, jetstream.KeyValueConfig{Bucket: BucketLeases, History: 1, TTL: o.LeaseTTL,
		Storage: jetstream.FileStorage, Replicas: o.Replicas, Description: "lumina lab testbed leases"}); err != nil {
		return nil, err
	}
	if l.Results, err = kv(BucketResults, jetstream.KeyValueConfig{Bucket: BucketResults, History: 1, MaxValueSize: 1 << 20,
		Storage: jetstream.FileStorage, Replicas: o.Replicas, Description: "lumina lab job results"}); err != nil {
		return nil, err
	}
	st, err := l.Leases.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("lab: bucket %s: %w", BucketLeases, err)
	}
	l.LeaseTTL = st.TTL()
	if l.LeaseTTL <= 0 {
		return nil, fmt.Errorf("lab: bucket %s has no TTL: leases would never expire; delete it", BucketLeases)
	}
	return l, nil
}

// consumerName is a pool's durable consumer.
func consumerName(pool string) string { return "pool-" + pool }

// Consumer returns the pool's durable pull consumer, creating it if missing.
func (l *Lab) Consumer(ctx context.Context, pool string) (jetstream.Consumer, error) {
	c, err := l.Jobs.Consumer(ctx, consumerName(pool))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		c, err = l.Jobs.CreateConsumer(ctx, jetstream.ConsumerConfig{
			Durable: consumerName(pool), FilterSubject: SubjectJobs + pool, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: l.opts.AckWait, MaxDeliver: l.opts.MaxDeliver, Replicas: l.opts.Replicas,
			Description: "lumina lab workers of pool " + pool,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("lab: consumer of pool %s: %w", pool, err)
	}
	return c, nil
}

// Submit queues jobs. A job already queued within the duplicate window (2
// min) is not queued twice; otherwise an earlier result of the same id is
// deleted so that Wait waits for the new run.
func (l *Lab) Submit(ctx context.Context, jobs []JobSpec) error {
	for _, j := range jobs {
		if err := ValidPool(j.Pool); err != nil {
			return err
		}
		if _, err := l.Consumer(ctx, j.Pool); err != nil {
			return err
		}
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		ack, err := l.JS.Publish(ctx, SubjectJobs+j.Pool, b, jetstream.WithMsgID(j.ID))
		if err != nil {
			return fmt.Errorf("lab: submitting %s (%s): %w", j.ID, j.File, err)
		}
		if !ack.Duplicate {
			if _, err := l.Results.Get(ctx, j.ID); err == nil {
				if err := l.Results.Purge(ctx, j.ID); err != nil {
					return fmt.Errorf("lab: clearing the old result of %s: %w", j.ID, err)
				}
			}
		}
	}
	return nil
}

// Lease is a lease key's value.
type Lease struct {
	Worker string    `json:"worker"`
	Job    string    `json:"job,omitempty"`
	Since  time.Time `json:"since"`
	// Testbed and Revision are filled by Status (the key and its latest
	// revision).
	Testbed  string `json:"testbed,omitempty"`
	Revision uint64 `json:"revision,omitempty"`
}

// Result is a results key's value: a job's latest stored attempt.
type Result struct {
	Job     JobSpec `json:"job"`
	Attempt Attempt `json:"attempt"`
	Outcome Outcome `json:"outcome"`
}

// PoolStatus is one pool's queue.
type PoolStatus struct {
	Pool string `json:"pool"`
	// Queued jobs wait for a worker; Running were delivered and are not
	// acked yet; Redelivered of those are on a second or later delivery.
	Queued      uint64 `json:"queued"`
	Running     int    `json:"running"`
	Redelivered int    `json:"redelivered"`
}

// Status is the lab at one moment.
type Status struct {
	Pools  []PoolStatus `json:"pools"`
	Leases []Lease      `json:"leases"`
	// Done is the number of job results held.
	Done uint64 `json:"done"`
}

// Status reads the queues, the leases and the number of results.
func (l *Lab) Status(ctx context.Context) (*Status, error) {
	var st Status
	cl := l.Jobs.ListConsumers(ctx)
	for ci := range cl.Info() {
		if ci.Config.FilterSubject == "" || len(ci.Config.FilterSubject) <= len(SubjectJobs) {
			continue
		}
		st.Pools = append(st.Pools, PoolStatus{Pool: ci.Config.FilterSubject[len(SubjectJobs):], Queued: ci.NumPending,
			Running: ci.NumAckPending, Redelivered: ci.NumRedelivered})
	}
	if err := cl.Err(); err != nil {
		return nil, err
	}
	sort.Slice(st.Pools, func(i, j int) bool { return st.Pools[i].Pool < st.Pools[j].Pool })
	keys, err := l.Leases.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	for k := range keys.Keys() {
		e, err := l.Leases.Get(ctx, k)
		if err != nil {
			continue // expired or released since listed
		}
		var ls Lease
		_ = json.Unmarshal(e.Value(), &ls)
		ls.Testbed, ls.Revision = k, e.Revision()
		st.Leases = append(st.Leases, ls)
	}
	sort.Slice(st.Leases, func(i, j int) bool { return st.Leases[i].Testbed < st.Leases[j].Testbed })
	// Count the keys: the bucket's message count would also count the
	// purge markers of resubmitted jobs.
	rk, err := l.Results.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	for range rk.Keys() {
		st.Done++
	}
	return &st, nil
}

// Result returns a job's stored result, or ok false if it has none yet.
func (l *Lab) Result(ctx context.Context, id string) (r *Result, ok bool, err error) {
	e, err := l.Results.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	r = new(Result)
	if err := json.Unmarshal(e.Value(), r); err != nil {
		return nil, false, fmt.Errorf("lab: result %s: %w", id, err)
	}
	return r, true, nil
}

// Wait waits until every job in ids has a result (or ctx ends) and returns
// them in the order of ids. progress, if set, is called once per result as
// it arrives.
func (l *Lab) Wait(ctx context.Context, ids []string, progress func(*Result)) ([]*Result, error) {
	got := make(map[string]*Result, len(ids))
	pending := make(map[string]bool, len(ids))
	for _, id := range ids {
		pending[id] = true
	}
	take := func(r *Result) {
		if pending[r.Job.ID] {
			delete(pending, r.Job.ID)
			got[r.Job.ID] = r
			if progress != nil {
				progress(r)
			}
		}
	}
	// Read the pending results now and every second, and watch for new
	// ones in between. Each read has its own timeout: a request whose
	// reply was lost to a server restart must not hold the loop. The
	// watcher is best effort (it cannot start while a cluster elects a
	// leader, and stops with a connection); the reads do not miss.
	poll := func() error {
		for id := range pending {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			r, ok, err := l.Result(rctx, id)
			cancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				return nil // read again at the next poll
			}
			if ok {
				take(r)
			}
		}
		return nil
	}
	// The watcher starts beside the polls: its creation may wait for a
	// reply lost to a restart.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	watcher := make(chan jetstream.KeyWatcher, 1)
	go func() {
		if w, err := l.Results.WatchAll(wctx, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes()); err == nil {
			watcher <- w
		}
	}()
	var upd <-chan jetstream.KeyValueEntry
	if err := poll(); err != nil {
		return nil, err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case w := <-watcher:
			defer w.Stop()
			upd = w.Updates()
		case e, ok := <-upd:
			if !ok {
				upd = nil // closed: the polls carry on
				continue
			}
			if e == nil {
				continue
			}
			var r Result
			if json.Unmarshal(e.Value(), &r) == nil {
				take(&r)
			}
		case <-tick.C:
			if err := poll(); err != nil {
				return nil, err
			}
		}
	}
	out := make([]*Result, len(ids))
	for i, id := range ids {
		out[i] = got[id]
	}
	return out, nil
}
