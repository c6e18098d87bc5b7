package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Bounds, never expectations: every wait below ends as soon as its outcome
// is there, and fails only past these.
const (
	boundSuite = 3 * time.Minute
	boundReady = time.Minute
)

// quickstart is the cheap test the fault tests run (a sim run of well under
// a second).
var quickstart = filepath.Join("..", "examples", "quickstart.yaml")

func TestMain(m *testing.M) {
	if os.Getenv("LUMINA_LAB_TEST_WORKER") != "" {
		os.Exit(helperWorker())
	}
	os.Exit(m.Run())
}

// helperWorker is the test binary re-executed as a worker whose one job
// hangs until the process is killed: a worker that dies mid-job.
func helperWorker() int {
	nc, err := Connect(ConnectOptions{URL: os.Getenv("LUMINA_LAB_TEST_URL")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	ctx := context.Background()
	l, err := Open(ctx, nc, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	w := &Worker{Lab: l, Name: "victim", Pool: os.Getenv("LUMINA_LAB_TEST_POOL"), Testbed: SimTestbed(os.Getenv("LUMINA_LAB_TEST_TESTBED")),
		Store: DirStore{Root: os.Getenv("LUMINA_LAB_TEST_ROOT")}, WorkDir: DefaultWorkDir(os.Getenv("LUMINA_LAB_TEST_ROOT")),
		Run: func(ctx context.Context, job JobSpec, tb *Testbed, outDir string) Outcome {
			<-ctx.Done() // until killed
			return Outcome{Error: "cancelled"}
		}, Log: os.Stderr}
	if err := w.Serve(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func startServer(t testing.TB, o ServerOptions) *server.Server {
	t.Helper()
	if o.Port == 0 {
		o.Port = -1
	}
	s, err := StartServer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := Connect(ConnectOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// testOptions: short enough that a dead worker's job and lease come back
// within seconds, long enough that a loaded machine renews in time.
var testOptions = Options{LeaseTTL: 5 * time.Second, AckWait: 6 * time.Second}

func openLab(t testing.TB, nc *nats.Conn, o Options) *Lab {
	t.Helper()
	var l *Lab
	var err error
	deadline := time.Now().Add(boundReady)
	for { // a fresh cluster elects its JetStream leader first
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l, err = Open(ctx, nc, o)
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// bench tracks what the workers of one test do: how many attempts run on
// a testbed at once (never more than one), and every attempt.
type bench struct {
	mu       sync.Mutex
	busy     map[string]string // testbed → job running on it
	overlaps []string
	runs     map[string]int // job → attempts that ran
}

func newBench() *bench { return &bench{busy: map[string]string{}, runs: map[string]int{}} }

func (b *bench) wrap(run RunFunc) RunFunc {
	return func(ctx context.Context, job JobSpec, tb *Testbed, outDir string) Outcome {
		b.mu.Lock()
		if other, ok := b.busy[tb.Name]; ok {
			b.overlaps = append(b.overlaps, fmt.Sprintf("testbed %s: job %s started while job %s ran", tb.Name, job.ID, other))
		}
		b.busy[tb.Name] = job.ID
		b.runs[job.ID]++
		b.mu.Unlock()
		out := run(ctx, job, tb, outDir)
		b.mu.Lock()
		delete(b.busy, tb.Name)
		b.mu.Unlock()
		return out
	}
}

// workers runs one in-process worker per entry of testbeds (names may
// repeat: standby workers of one testbed) until the test ends.
func (b *bench) workers(t testing.TB, l *Lab, pool, root string, testbeds ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, tb := range testbeds {
		w := &Worker{Lab: l, Name: fmt.Sprintf("w%d", i), Pool: pool, Testbed: SimTestbed(tb), Store: DirStore{Root: root},
			WorkDir: DefaultWorkDir(root), Run: b.wrap(RunTest)}
		if testing.Verbose() {
			w.Log = os.Stderr
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Serve(ctx); err != nil {
				t.Errorf("worker %s: %v", w.Name, err)
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func submit(t testing.TB, l *Lab, pool string, n int, labels map[string]string) []string {
	t.Helper()
	jobs, err := Jobs([]string{quickstart}, pool, labels, n, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Submit(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

func wait(t testing.TB, l *Lab, ids []string) []*Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), boundSuite)
	defer cancel()
	res, err := l.Wait(ctx, ids, nil)
	if err != nil {
		st, _ := l.Status(context.Background())
		t.Fatalf("waiting for %d jobs: %v (status %+v)", len(ids), err, st)
	}
	return res
}

// until polls cond (bounded by boundSuite).
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(boundSuite)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", boundSuite, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkResults asserts the outcome of a suite of quickstart jobs: every
// job's result passed and is held exactly once (one directory, named by
// its id, with one run of the test, whose report.json says what the
// result says); every trace is byte-identical (the sim is deterministic);
// the attempts of one testbed held its lease in disjoint revision ranges.
func checkResults(t *testing.T, root string, ids []string, res []*Result) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		dirs = append(dirs, e.Name())
	}
	want := append([]string(nil), ids...)
	sort.Strings(want)
	if strings.Join(dirs, " ") != strings.Join(want, " ") {
		t.Fatalf("results root holds %d entries %v, want the %d job ids", len(dirs), dirs, len(want))
	}
	var trace0 []byte
	byTestbed := map[string][]Attempt{}
	for i, r := range res {
		if r.Job.ID != ids[i] {
			t.Fatalf("result %d is job %s, want %s", i, r.Job.ID, ids[i])
		}
		if !r.Outcome.Passed() || len(r.Outcome.Repeats) != 1 {
			t.Fatalf("job %s: %+v, want one passed repeat", r.Job.ID, r.Outcome)
		}
		dir := filepath.Join(root, "jobs", r.Job.ID)
		runs, _ := filepath.Glob(filepath.Join(dir, "*", "*", "report.json"))
		if len(runs) != 1 || runs[0] != filepath.Join(dir, "quickstart", "0", "report.json") {
			t.Fatalf("job %s holds runs %v, want exactly quickstart/0", r.Job.ID, runs)
		}
		var rep struct {
			Valid bool `json:"valid"`
		}
		b, err := os.ReadFile(runs[0])
		if err != nil || json.Unmarshal(b, &rep) != nil || !rep.Valid {
			t.Fatalf("job %s: report.json: %v valid=%v", r.Job.ID, err, rep.Valid)
		}
		var rec jobRecord
		if b, err := os.ReadFile(filepath.Join(dir, "job.json")); err != nil || json.Unmarshal(b, &rec) != nil {
			t.Fatalf("job %s: job.json: %v", r.Job.ID, err)
		}
		if rec.Job.ID != r.Job.ID || rec.Attempt.Delivery != r.Attempt.Delivery || rec.Attempt.Worker != r.Attempt.Worker {
			t.Fatalf("job %s: job.json holds attempt %+v, the result attempt %+v", r.Job.ID, rec.Attempt, r.Attempt)
		}
		trace, err := os.ReadFile(filepath.Join(dir, "quickstart", "0", "trace.pcap"))
		if err != nil {
			t.Fatal(err)
		}
		if trace0 == nil {
			trace0 = trace
		} else if !bytes.Equal(trace, trace0) {
			t.Fatalf("job %s: trace.pcap differs from the first job's", r.Job.ID)
		}
		byTestbed[r.Attempt.Testbed] = append(byTestbed[r.Attempt.Testbed], r.Attempt)
	}
	for tb, ats := range byTestbed {
		sort.Slice(ats, func(i, j int) bool { return ats[i].LeaseAcquired < ats[j].LeaseAcquired })
		for i, a := range ats {
			if a.LeaseAcquired == 0 || a.LeaseReleased < a.LeaseAcquired {
				t.Fatalf("testbed %s: attempt %+v: lease revisions out of order", tb, a)
			}
			if i > 0 && a.LeaseAcquired <= ats[i-1].LeaseReleased {
				t.Fatalf("testbed %s: %s acquired the lease at revision %d while %s held it (%d..%d)",
					tb, a.Worker, a.LeaseAcquired, ats[i-1].Worker, ats[i-1].LeaseAcquired, ats[i-1].LeaseReleased)
			}
		}
	}
	// Only a killed worker leaves its run behind.
	left, _ := filepath.Glob(filepath.Join(DefaultWorkDir(root), "*", "*"))
	for _, p := range left {
		if filepath.Base(filepath.Dir(p)) != "victim" {
			t.Fatalf("work directory left with %s", p)
		}
	}
}

func (b *bench) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.overlaps) > 0 {
		t.Fatalf("two runs on one testbed at once: %v", b.overlaps)
	}
}

// 3 workers on 2 sim testbeds run 60 jobs.
func TestLabSixtyJobs(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, ServerOptions{StoreDir: filepath.Join(dir, "js")})
	l := openLab(t, connect(t, s.ClientURL()), testOptions)
	root := filepath.Join(dir, "results")
	ids := submit(t, l, "p", 60, map[string]string{"firmware": "22.39"})
	if len(ids) != 60 {
		t.Fatalf("%d jobs, want 60", len(ids))
	}
	// The same submission again is the same jobs: deduplicated.
	if again := submit(t, l, "p", 60, map[string]string{"firmware": "22.39"}); strings.Join(again, " ") != strings.Join(ids, " ") {
		t.Fatal("a second identical submission gave other job ids")
	}
	if st, err := l.Status(context.Background()); err != nil || len(st.Pools) != 1 || st.Pools[0].Queued != 60 || st.Done != 0 {
		t.Fatalf("status after submitting twice: %+v %v, want 60 queued, none done", st, err)
	}
	b := newBench()
	b.workers(t, l, "p", root, "tbA", "tbA", "tbB")
	res := wait(t, l, ids)
	checkResults(t, root, ids, res)
	b.check(t)
	used := map[string]bool{}
	for _, r := range res {
		used[r.Attempt.Testbed] = true
		if r.Job.Labels["firmware"] != "22.39" {
			t.Fatalf("job %s lost its label: %v", r.Job.ID, r.Job.Labels)
		}
	}
	if !used["tbA"] || !used["tbB"] {
		t.Fatalf("testbeds used: %v, want both", used)
	}
	st, err := l.Status(context.Background())
	if err != nil || st.Done != 60 || st.Pools[0].Queued != 0 || st.Pools[0].Running != 0 {
		t.Fatalf("final status %+v %v: want 60 done, none queued or running", st, err)
	}
}

// A worker killed with SIGKILL mid-job: its lease expires, the job runs
// again on another worker, and the results hold it once.
func TestLabWorkerKilled(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, ServerOptions{StoreDir: filepath.Join(dir, "js")})
	l := openLab(t, connect(t, s.ClientURL()), testOptions)
	root := filepath.Join(dir, "results")
	ids := submit(t, l, "p", 60, nil)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LUMINA_LAB_TEST_WORKER=1", "LUMINA_LAB_TEST_URL="+s.ClientURL(),
		"LUMINA_LAB_TEST_POOL=p", "LUMINA_LAB_TEST_TESTBED=tbA", "LUMINA_LAB_TEST_ROOT="+root)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	var held Lease
	var heldRev uint64
	until(t, "the worker subprocess runs a job", func() bool {
		e, err := l.Leases.Get(context.Background(), "tbA")
		if err != nil {
			return false
		}
		_ = json.Unmarshal(e.Value(), &held)
		heldRev = e.Revision()
		return held.Worker == "victim" && held.Job != ""
	})
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = true
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("worker subprocess: %v, want killed; stderr:\n%s", err, stderr.String())
	}

	b := newBench()
	b.workers(t, l, "p", root, "tbA", "tbA", "tbB")
	res := wait(t, l, ids)
	checkResults(t, root, ids, res)
	b.check(t)
	for _, r := range res {
		if r.Attempt.Worker == "victim" {
			t.Fatalf("job %s has a result from the killed worker", r.Job.ID)
		}
		if r.Attempt.Testbed == "tbA" && r.Attempt.LeaseAcquired <= heldRev {
			t.Fatalf("job %s: %s took tbA at revision %d, before the killed worker's lease (revision %d) expired",
				r.Job.ID, r.Attempt.Worker, r.Attempt.LeaseAcquired, heldRev)
		}
		if r.Job.ID == held.Job && r.Attempt.Delivery < 2 {
			t.Fatalf("the killed worker's job %s: delivery %d, want a redelivery", r.Job.ID, r.Attempt.Delivery)
		}
	}
	if b.runs[held.Job] == 0 {
		t.Fatal("the killed worker's job did not run again")
	}
}

// The server restarted mid-suite (same store, same port): no job lost.
func TestLabServerRestart(t *testing.T) {
	dir := t.TempDir()
	so := ServerOptions{StoreDir: filepath.Join(dir, "js"), Port: freePort(t)}
	s := startServer(t, so)
	l := openLab(t, connect(t, s.ClientURL()), testOptions)
	root := filepath.Join(dir, "results")
	ids := submit(t, l, "p", 60, nil)
	b := newBench()
	b.workers(t, l, "p", root, "tbA", "tbA", "tbB")
	until(t, "20 jobs done", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.runs) >= 20
	})
	s.Shutdown()
	s.WaitForShutdown()
	var err error
	deadline := time.Now().Add(boundReady)
	for { // the port may take a moment to be free again
		s, err = StartServer(so)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	res := wait(t, l, ids)
	checkResults(t, root, ids, res)
	b.check(t)
}

// A 3-server cluster losing one server (the jobs stream's leader) mid-suite
// completes the suite.
func TestLabClusterLosesServer(t *testing.T) {
	dir := t.TempDir()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var servers []*server.Server
	var urls []string
	for i := range 3 {
		var routes []string
		for j, p := range ports {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
			}
		}
		s := startServer(t, ServerOptions{StoreDir: filepath.Join(dir, fmt.Sprint("js", i)), Name: fmt.Sprint("s", i),
			ClusterName: "lab", ClusterPort: ports[i], Routes: routes})
		servers = append(servers, s)
		urls = append(urls, s.ClientURL())
	}
	o := testOptions
	o.Replicas = 3
	l := openLab(t, connect(t, strings.Join(urls, ",")), o)
	root := filepath.Join(dir, "results")
	ids := submit(t, l, "p", 60, nil)
	b := newBench()
	b.workers(t, l, "p", root, "tbA", "tbA", "tbB")
	until(t, "20 jobs done", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.runs) >= 20
	})
	info, err := l.Jobs.Info(context.Background())
	if err != nil || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("jobs stream cluster info %+v: %v, want a leader and 2 replicas", info, err)
	}
	stopped := false
	for _, s := range servers {
		if s.Name() == info.Cluster.Leader {
			s.Shutdown()
			stopped = true
		}
	}
	if !stopped {
		t.Fatalf("no server is the stream leader %q", info.Cluster.Leader)
	}
	res := wait(t, l, ids)
	checkResults(t, root, ids, res)
	b.check(t)
}
