package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/netlumina/lumina/config"
	"github.com/netlumina/lumina/lab"
	"github.com/netlumina/lumina/store"
)

// lumina lab: a lab of testbeds on NATS JetStream (docs/lab.md).

// labCmdFlags: lumina lab; each subcommand parses its own flags.
type labCmdFlags struct{}

func (*labCmdFlags) define(*flag.FlagSet) {}

func (f *labCmdFlags) check(args []string) error {
	return checkSubcommand("lab", args, f.argWords(nil))
}

// argWords: lab's subcommands, for completion.
func (*labCmdFlags) argWords([]*command) []string {
	var w []string
	for _, sub := range labSubs {
		w = append(w, sub.name)
	}
	return w
}

// runLab is lumina lab: the subcommand args[0] (check found it).
func runLab(ctx context.Context, _ *labCmdFlags, args []string, stdout, stderr io.Writer) error {
	for _, sub := range labSubs {
		if sub.name == args[0] {
			if err := sub.fn(ctx, args[1:], stdout, stderr); !errors.Is(err, errHelp) {
				return err
			}
		}
	}
	return nil
}

// labHelp prints the subcommands' usage after lab's.
func labHelp(w io.Writer) {
	for _, sub := range labSubs {
		fmt.Fprintln(w)
		_ = sub.fn(context.Background(), []string{"-h"}, w, io.Discard)
	}
}

var labSubs = []struct {
	name string
	fn   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}{
	{"serve", labServe}, {"worker", labWorker}, {"submit", labSubmit}, {"status", labStatus}, {"wait", labWait}, {"run", labRun},
}

// labFlags is a lab subcommand's flag set; usage is its synopsis.
func labFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lumina lab "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: lumina lab %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// labConn holds the client flags every subcommand but serve and run takes.
type labConn struct {
	o        lab.ConnectOptions
	replicas int
	leaseTTL time.Duration
	ackWait  time.Duration
}

func addLabConn(fs *flag.FlagSet) *labConn {
	c := &labConn{}
	def := os.Getenv("NATS_URL")
	if def == "" {
		def = "nats://127.0.0.1:4222"
	}
	fs.StringVar(&c.o.URL, "nats", def, "NATS server `URL`s, comma-separated (default $NATS_URL or nats://127.0.0.1:4222; tls://... for TLS)")
	fs.StringVar(&c.o.Creds, "creds", "", "NATS user credentials `file`")
	fs.StringVar(&c.o.NKey, "nkey", "", "NATS NKey seed `file`")
	fs.StringVar(&c.o.CA, "tls-ca", "", "CA certificates `file` for the servers' certificates")
	fs.StringVar(&c.o.Cert, "tls-cert", "", "client certificate `file` (mutual TLS; with --tls-key)")
	fs.StringVar(&c.o.Key, "tls-key", "", "client key `file`")
	fs.IntVar(&c.replicas, "replicas", 1, "replicas of the lab's stream and buckets when this creates them (3 on a 3-server cluster)")
	fs.DurationVar(&c.leaseTTL, "lease-ttl", 30*time.Second, "a testbed lease expires this long after its last renewal (when this creates the lease bucket)")
	fs.DurationVar(&c.ackWait, "ack-wait", time.Minute, "a job without an ack or heartbeat this long is redelivered (when this creates the pool's consumer)")
	return c
}

func (c *labConn) open(ctx context.Context, name string) (*lab.Lab, func(), error) {
	if c.replicas < 1 || c.replicas > 5 {
		return nil, nil, usagef("--replicas must be 1..5, not %d", c.replicas)
	}
	if c.leaseTTL < time.Second || c.ackWait < time.Second {
		return nil, nil, usagef("--lease-ttl and --ack-wait must be at least 1s")
	}
	o := c.o
	o.Name = name
	nc, err := lab.Connect(o)
	if err != nil {
		return nil, nil, err
	}
	l, err := lab.Open(ctx, nc, lab.Options{Replicas: c.replicas, LeaseTTL: c.leaseTTL, AckWait: c.ackWait})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return l, nc.Close, nil
}

// labels is a repeatable --label k=v.
type labels map[string]string

func (l labels) String() string { return "" }
func (l labels) Set(s string) error {
	k, v, err := lab.ParseLabel(s)
	if err != nil {
		return err
	}
	l[k] = v
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }
func (l *stringList) Set(s string) error {
	if _, err := config.ParseSetting(s); err != nil {
		return err
	}
	*l = append(*l, s)
	return nil
}

func labServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := labFlags("serve", "[--listen HOST:PORT] [--store DIR] [--config nats.conf]", stderr)
	listen := fs.String("listen", "127.0.0.1:4222", "client `address` (0.0.0.0:4222 for a lab's workers on other machines)")
	store := fs.String("store", "lab-jetstream", "JetStream store `dir` (jobs, leases and results survive a restart in it)")
	name := fs.String("name", "", "server `name` (required and unique in a cluster)")
	cluster := fs.String("cluster", "", "cluster `name`: run as one server of a JetStream cluster")
	clusterListen := fs.String("cluster-listen", "127.0.0.1:6222", "cluster route `address`")
	routes := fs.String("routes", "", "comma-separated route `URLs` of the other servers (nats-route://host:6222)")
	config := fs.String("config", "", "nats-server configuration `file` (TLS, accounts, cluster); --listen, --name and the cluster flags are then ignored")
	logOn := fs.Bool("log", false, "the server's log on stderr")
	pos, err := parseSubFlags(fs, args, stdout)
	if err != nil {
		return helpOK(err)
	}
	if len(pos) > 0 {
		return usagef("lab serve: unexpected argument %q", pos[0])
	}
	var s interface {
		ClientURL() string
		Shutdown()
	}
	if *config != "" {
		srv, err := lab.ServerFromConfig(*config, *store, *logOn)
		if err != nil {
			return err
		}
		s = srv
	} else {
		host, port, err := splitListen(*listen)
		if err != nil {
			return usagef("lab serve: --listen: %v", err)
		}
		so := lab.ServerOptions{Host: host, Port: port, StoreDir: *store, Name: *name, Log: *logOn}
		if *cluster != "" {
			if *name == "" {
				return usagef("lab serve: --cluster needs --name")
			}
			so.ClusterName = *cluster
			if so.ClusterHost, so.ClusterPort, err = splitListen(*clusterListen); err != nil {
				return usagef("lab serve: --cluster-listen: %v", err)
			}
			for _, r := range strings.Split(*routes, ",") {
				if r = strings.TrimSpace(r); r != "" {
					so.Routes = append(so.Routes, r)
				}
			}
		}
		srv, err := lab.StartServer(so)
		if err != nil {
			return err
		}
		s = srv
	}
	fmt.Fprintf(stderr, "lumina lab: NATS JetStream at %s (store %s); Ctrl-C stops it\n", s.ClientURL(), *store)
	<-ctx.Done()
	s.Shutdown()
	return nil
}

func splitListen(s string) (string, int, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("port %q: want 0..65535", p)
	}
	if n == 0 {
		n = -1 // a free port
	}
	return h, n, nil
}

// helpOK turns errHelp into a clean exit.
func helpOK(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

func labWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := labFlags("worker", "--testbed FILE --pool NAME [--results DIR] [--nats URL]", stderr)
	c := addLabConn(fs)
	tbFile := fs.String("testbed", "", "testbed `file` (YAML: name, testbed: sim|netns|remote, nic, set, remote; docs/lab.md); required")
	pool := fs.String("pool", "", "the pool whose jobs this worker runs; required")
	results := fs.String("results", "lab-results", "results root `dir`: jobs/<job-id>/<test>/<repeat>/")
	name := fs.String("name", "", "worker `name` (default host:pid)")
	maxJobs := fs.Int("max-jobs", 0, "stop after `n` jobs (0: until interrupted)")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	pos, err := parseSubFlags(fs, args, stdout)
	if err != nil {
		return helpOK(err)
	}
	if len(pos) > 0 {
		return usagef("lab worker: unexpected argument %q", pos[0])
	}
	if *tbFile == "" || *pool == "" {
		return usagef("lab worker needs --testbed FILE and --pool NAME")
	}
	if err := lab.ValidPool(*pool); err != nil {
		return usagef("lab worker: %v", err)
	}
	if *maxJobs < 0 {
		return usagef("lab worker: --max-jobs must be >= 0")
	}
	tb, err := lab.LoadTestbed(*tbFile)
	if err != nil {
		return err
	}
	if *name == "" {
		h, _ := os.Hostname()
		*name = fmt.Sprintf("%s:%d", h, os.Getpid())
	}
	l, closeFn, err := c.open(ctx, "lumina lab worker "+*name)
	if err != nil {
		return err
	}
	defer closeFn()
	w := &lab.Worker{Lab: l, Name: *name, Pool: *pool, Testbed: tb, Store: labStore(*results, false),
		WorkDir: lab.DefaultWorkDir(*results), Log: stderr, MaxJobs: *maxJobs}
	if *quiet {
		w.Log = nil
	}
	fmt.Fprintf(stderr, "lumina lab: worker %s on testbed %s (%s), pool %s, results under %s\n", *name, tb.Name, tb.Testbed, *pool, *results)
	if err := w.Serve(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

// labStore is the results store of a worker: the Parquet tables (runs,
// losses) under root (docs/lab.md), then the directories. The Parquet
// store goes first: the DirStore moves runDir away.
func labStore(root string, flat bool) lab.ResultStore {
	return lab.Stores{parquetStore{root: root, flat: flat}, lab.DirStore{Root: root, Flat: flat}}
}

// parquetStore adds a job's repeats to the Parquet results store at root
// (store.AddResults); the rows' dir column names where the DirStore that
// follows keeps them.
type parquetStore struct {
	root string
	flat bool
}

func (p parquetStore) Store(_ context.Context, job lab.JobSpec, runDir string, at lab.Attempt) error {
	base := p.root
	if !p.flat {
		base = lab.DirStore{Root: p.root}.JobDir(job.ID)
	}
	_, err := store.AddResults(p.root, store.Job{ID: job.ID, Test: job.Test, Testbed: at.Testbed, NIC: at.NIC,
		Labels: job.Labels, Time: at.Finished, RepeatSet: job.Repeat, Worker: at.Worker, Delivery: int(at.Delivery),
		DirBase: base}, runDir)
	return err
}

func labSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := labFlags("submit", "SUITE... --pool NAME [--label K=V]... [--repeats N] [--nats URL]", stderr)
	c := addLabConn(fs)
	pool := fs.String("pool", "", "the testbed pool that runs the jobs; required")
	lbl := labels{}
	fs.Var(lbl, "label", "`K=V` label of every job (repeatable), e.g. firmware=22.39")
	repeats := fs.Int("repeats", 1, "repeat sets: each test file is `n` jobs")
	var set stringList
	fs.Var(&set, "set", "`PATH=VALUE` override of every test (repeatable; as lumina run --set, docs/run.md), applied on the worker before its testbed file's")
	pos, err := parseSubFlags(fs, args, stdout)
	if err != nil {
		return helpOK(err)
	}
	if len(pos) == 0 {
		return usagef("lab submit needs at least one test file or folder")
	}
	if *pool == "" {
		return usagef("lab submit needs --pool NAME")
	}
	if *repeats < 1 || *repeats > lab.MaxRepeats {
		return usagef("lab submit: --repeats must be 1..%d, not %d", lab.MaxRepeats, *repeats)
	}
	files, err := lab.SuiteFiles(pos)
	if err != nil {
		return usagef("lab submit: %v", err)
	}
	jobs, err := lab.JobsWith(files, *pool, lbl, set, *repeats, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return &usageError{"lab submit: invalid test files; nothing was submitted"}
	}
	l, closeFn, err := c.open(ctx, "lumina lab submit")
	if err != nil {
		return err
	}
	defer closeFn()
	if err := l.Submit(ctx, jobs); err != nil {
		return err
	}
	for _, j := range jobs {
		fmt.Fprintln(stdout, j.ID)
		fmt.Fprintf(stderr, "lumina lab: %s: %s repeat set %d → pool %s\n", j.ID, j.File, j.Repeat, j.Pool)
	}
	return nil
}

func labStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := labFlags("status", "[--json] [--nats URL]", stderr)
	c := addLabConn(fs)
	asJSON := fs.Bool("json", false, "print the status as JSON")
	pos, err := parseSubFlags(fs, args, stdout)
	if err != nil {
		return helpOK(err)
	}
	if len(pos) > 0 {
		return usagef("lab status: unexpected argument %q", pos[0])
	}
	l, closeFn, err := c.open(ctx, "lumina lab status")
	if err != nil {
		return err
	}
	defer closeFn()
	st, err := l.Status(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.MarshalIndent(st, "", "  ")
		_, err := fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	fmt.Fprintf(stdout, "jobs done: %d\n", st.Done)
	for _, p := range st.Pools {
		fmt.Fprintf(stdout, "pool %s: %d queued, %d running (%d redelivered)\n", p.Pool, p.Queued, p.Running, p.Redelivered)
	}
	if len(st.Leases) == 0 {
		fmt.Fprintln(stdout, "no testbed leased")
	}
	for _, ls := range st.Leases {
		job := "idle"
		if ls.Job != "" {
			job = "running job " + ls.Job
		}
		fmt.Fprintf(stdout, "testbed %s: leased to %s since %s, %s\n", ls.Testbed, ls.Worker, ls.Since.Format(time.RFC3339), job)
	}
	return nil
}

func labWait(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := labFlags("wait", "JOB... [--junit FILE] [--timeout D] [--nats URL]", stderr)
	c := addLabConn(fs)
	junit := fs.String("junit", "", "write the verdicts as JUnit XML to `file` (Jenkins, GitLab)")
	timeout := fs.Duration("timeout", 0, "give up after this long (0: wait until every job has a result)")
	pos, err := parseSubFlags(fs, args, stdout)
	if err != nil {
		return helpOK(err)
	}
	if len(pos) == 0 {
		return usagef("lab wait needs job ids (as lab submit prints them)")
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	l, closeFn, err := c.open(ctx, "lumina lab wait")
	if err != nil {
		return err
	}
	defer closeFn()
	res, err := l.Wait(ctx, pos, func(r *lab.Result) { printResult(stdout, r, "") })
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("lab wait: not every job finished within %v", *timeout)
	}
	if err != nil {
		return err
	}
	return finishResults(res, *junit)
}

// finishResults writes the JUnit file if asked and is errSilent unless
// every job passed.
func finishResults(res []*lab.Result, junit string) error {
	if junit != "" {
		if err := writeJUnit(junit, res); err != nil {
			return err
		}
	}
	for _, r := range res {
		if !r.Outcome.Passed() {
			return errSilent
		}
	}
	return nil
}

// printResult prints a job's repeats as lumina run's status lines, each
// directory under root (the job's directory if root is "").
func printResult(w io.Writer, r *lab.Result, root string) {
	where := fmt.Sprintf("job %s on %s", r.Job.ID, r.Attempt.Testbed)
	if r.Outcome.Error != "" {
		fmt.Fprintf(w, "%s: ERROR (%s) [%s]\n", r.Job.Test, r.Outcome.Error, where)
	}
	for _, rep := range r.Outcome.Repeats {
		status := "valid, all checks pass"
		switch {
		case !rep.Valid:
			status = "INVALID (not analyzed: " + rep.Reason + ")"
		case len(rep.Failed) > 0:
			status = "valid, FAILED: " + strings.Join(rep.Failed, ", ")
		}
		if rep.Valid && len(rep.Inconclusive) > 0 {
			status += " (inconclusive: " + strings.Join(rep.Inconclusive, ", ") + ")"
		}
		dir := filepath.Join("jobs", r.Job.ID, filepath.FromSlash(rep.Dir))
		if root != "" {
			dir = filepath.Join(root, filepath.FromSlash(rep.Dir))
		}
		fmt.Fprintf(w, "%s repeat %d: %s → %s [%s]\n", r.Job.Test, rep.Repeat, status, dir, where)
	}
}

// JUnit XML as Jenkins' and GitLab's JUnit readers take it: one testcase
// per job repeat, a failure element for a failed or invalid one.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitFailure `xml:"failure,omitempty"`
	Error   *junitFailure `xml:"error,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(path string, res []*lab.Result) error {
	bySuite := map[string]*junitSuite{}
	var names []string
	for _, r := range res {
		sname := "lumina lab pool " + r.Job.Pool
		s := bySuite[sname]
		if s == nil {
			s = &junitSuite{Name: sname}
			bySuite[sname] = s
			names = append(names, sname)
		}
		var lbl []string
		for k, v := range r.Job.Labels {
			lbl = append(lbl, k+"="+v)
		}
		sort.Strings(lbl)
		class := r.Job.Test
		if len(lbl) > 0 {
			class += "[" + strings.Join(lbl, ",") + "]"
		}
		secs := fmt.Sprintf("%.3f", r.Attempt.Finished.Sub(r.Attempt.Started).Seconds())
		detail := fmt.Sprintf("job %s, %s, repeat set %d, testbed %s, worker %s", r.Job.ID, r.Job.File, r.Job.Repeat, r.Attempt.Testbed, r.Attempt.Worker)
		if r.Outcome.Error != "" || len(r.Outcome.Repeats) == 0 {
			msg := r.Outcome.Error
			if msg == "" {
				msg = "no repeat ran"
			}
			s.Tests++
			s.Errors++
			s.Cases = append(s.Cases, junitCase{Class: class, Name: fmt.Sprintf("%s set %d", r.Job.Test, r.Job.Repeat), Time: secs,
				Error: &junitFailure{Message: msg, Text: detail}})
			continue
		}
		for _, rep := range r.Outcome.Repeats {
			c := junitCase{Class: class, Name: fmt.Sprintf("%s set %d repeat %d", r.Job.Test, r.Job.Repeat, rep.Repeat), Time: secs}
			switch {
			case !rep.Valid:
				c.Failure = &junitFailure{Message: "invalid run: " + rep.Reason, Text: detail}
			case len(rep.Failed) > 0:
				c.Failure = &junitFailure{Message: "failed checks: " + strings.Join(rep.Failed, ", "), Text: detail}
			}
			s.Tests++
			if c.Failure != nil {
				s.Failures++
			}
			s.Cases = append(s.Cases, c)
		}
	}
	var doc junitSuites
	for _, n := range names {
		doc.Suites = append(doc.Suites, *bySuite[n])
	}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}

func labRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := labFlags("run", "[-o DIR] [--parallel N] SUITE...", stderr)
	out := fs.String("o", "results", "results `dir`: DIR/<test>/<repeat>/ as lumina run -o DIR writes them")
	parallel := fs.Int("parallel", 1, "sim testbeds (one worker each) running jobs at once")
	lbl := labels{}
	fs.Var(lbl, "label", "`K=V` label of every job (repeatable)")
	var set stringList
	fs.Var(&set, "set", "`PATH=VALUE` override of every test (repeatable; as lumina run --set)")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	pos, err := parseSubFlags(fs, args, stdout)
	if err != nil {
		return helpOK(err)
	}
	if len(pos) == 0 {
		return usagef("lab run needs at least one test file or folder")
	}
	if *parallel < 1 || *parallel > 64 {
		return usagef("lab run: --parallel must be 1..64, not %d", *parallel)
	}
	files, err := lab.SuiteFiles(pos)
	if err != nil {
		return usagef("lab run: %v", err)
	}
	jobs, err := lab.JobsWith(files, "local", lbl, set, 1, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return &usageError{"lab run: invalid test files; nothing was run"}
	}
	seen := map[string]string{}
	for _, j := range jobs {
		if f, ok := seen[j.Test]; ok {
			return usagef("lab run: %s and %s are both test %q: their results would share %s", f, j.File, j.Test, filepath.Join(*out, j.Test))
		}
		seen[j.Test] = j.File
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	storeDir, err := os.MkdirTemp("", "lumina-lab-js-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(storeDir)
	srv, err := lab.StartServer(lab.ServerOptions{Port: -1, StoreDir: storeDir})
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	nc, err := lab.Connect(lab.ConnectOptions{URL: srv.ClientURL(), Name: "lumina lab run"})
	if err != nil {
		return err
	}
	defer nc.Close()
	l, err := lab.Open(ctx, nc, lab.Options{})
	if err != nil {
		return err
	}
	if err := l.Submit(ctx, jobs); err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	workDir := filepath.Join(*out, ".lab-work")
	defer os.RemoveAll(workDir)
	errs := make(chan error, *parallel)
	for i := range *parallel {
		w := &lab.Worker{Lab: l, Name: fmt.Sprintf("local-%d", i), Pool: "local", Testbed: lab.SimTestbed(fmt.Sprintf("sim-%d", i)),
			Store: labStore(*out, true), WorkDir: workDir, Log: stderr}
		if *quiet {
			w.Log = nil
		}
		go func() { errs <- w.Serve(wctx) }()
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	res, err := l.Wait(ctx, ids, func(r *lab.Result) { printResult(stdout, r, *out) })
	stop()
	for range *parallel {
		if werr := <-errs; werr != nil && err == nil {
			err = werr
		}
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		return err
	}
	return finishResults(res, "")
}
