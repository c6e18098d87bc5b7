package lab

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

type nopStore struct{}

func (nopStore) Store(context.Context, JobSpec, string, Attempt) error { return nil }

// BenchmarkJobs is the embedded server's job throughput with a no-op test
// (jobs/s, one worker on one testbed: each job is a lease acquisition and
// renewals, a fetch, a result record, an ack and a lease release), against
// the reference of the bare JetStream work queue in the same run (publish,
// fetch, ack of as many messages).
func BenchmarkJobs(b *testing.B) {
	b.Run("jetstream-queue", func(b *testing.B) {
		b.ReportAllocs()
		s := startServer(b, ServerOptions{StoreDir: b.TempDir()})
		nc := connect(b, s.ClientURL())
		ctx := context.Background()
		js, _ := jetstream.New(nc)
		st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q"}, Retention: jetstream.WorkQueuePolicy})
		if err != nil {
			b.Fatal(err)
		}
		c, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		t0 := time.Now()
		for i := range b.N {
			if _, err := js.Publish(ctx, "q", []byte("job"), jetstream.WithMsgID(fmt.Sprint(i))); err != nil {
				b.Fatal(err)
			}
		}
		for n := 0; n < b.N; {
			batch, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			for m := range batch.Messages() {
				if err := m.DoubleAck(ctx); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "jobs/s")
	})
	b.Run("lab-noop", func(b *testing.B) {
		b.ReportAllocs()
		s := startServer(b, ServerOptions{StoreDir: b.TempDir()})
		l := openLab(b, connect(b, s.ClientURL()), Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		jobs := make([]JobSpec, b.N)
		ids := make([]string, b.N)
		for i := range jobs {
			id := JobID("noop", nil, "p", nil, i)
			jobs[i], ids[i] = JobSpec{ID: id, Test: "noop", Pool: "p", Repeat: i}, id
		}
		w := &Worker{Lab: l, Name: "w", Pool: "p", Testbed: SimTestbed("tb"), Store: nopStore{}, WorkDir: b.TempDir(),
			Run: func(context.Context, JobSpec, *Testbed, string) Outcome {
				return Outcome{Repeats: []RepeatOutcome{{Valid: true}}}
			}}
		done := make(chan error, 1)
		b.ResetTimer()
		t0 := time.Now()
		go func() { done <- w.Serve(ctx) }()
		if err := l.Submit(ctx, jobs); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Wait(ctx, ids, nil); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "jobs/s")
		b.StopTimer()
		cancel()
		<-done
	})
}
