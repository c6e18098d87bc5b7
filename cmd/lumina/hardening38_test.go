package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Regression tests for issue #38 (hardening, second pass).

// runBounded runs lumina with args and fails the test if it has not
// returned after 20 s: a read that blocks (a FIFO) fails the test instead
// of hanging it.
func runBounded(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		c, o, e := runCLICtx(ctx, args...)
		done <- result{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(20 * time.Second):
		t.Fatalf("lumina %s still running after 20 s", strings.Join(args, " "))
		return 0, "", ""
	}
}

// analyzeRunDir writes a lumina run directory under dir: config.yaml,
// report.json and the sample trace.
func analyzeRunDir(t *testing.T, dir string) string {
	t.Helper()
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	pcap, err := os.ReadFile(filepath.Join("..", "..", "examples", "traces", "write-drop.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, run, "trace.pcap", pcap)
	write(t, run, "config.yaml", []byte("name: x\n"))
	write(t, run, "report.json", []byte(`{"schema": "lumina.report/v1"}`))
	return run
}

// publicRunDir writes a public Lumina result directory under dir (its
// config.yml, and repeat 0 with pcap-result/trace.pcap and the
// requester's counter dumps) and returns the repeat's directory.
func publicRunDir(t *testing.T, dir string) string {
	t.Helper()
	rep := filepath.Join(dir, "public", "0")
	for _, d := range []string{"pcap-result", "rdma-result"} {
		if err := os.MkdirAll(filepath.Join(rep, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pcap, err := os.ReadFile(filepath.Join("..", "..", "examples", "traces", "write-drop.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(rep, "pcap-result"), "trace.pcap", pcap)
	write(t, filepath.Dir(rep), "config.yml", []byte("name: x\naggregate-pcap-filename: trace.pcap\n"))
	write(t, filepath.Join(rep, "rdma-result"), "requester_counter_start.yml", []byte("hw-counters: {out_of_sequence: 0}\n"))
	write(t, filepath.Join(rep, "rdma-result"), "requester_counter_finish.yml", []byte("hw-counters: {out_of_sequence: 1}\n"))
	return rep
}

// Point 5: every file lumina analyze, diff, validate and collie search
// read whole is a regular file of bounded size: a link to /dev/zero (read
// until memory runs out before) and a FIFO (blocked for ever before) are
// refused at once, naming the file, exit 1.
func TestBoundedReads(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skipf("no /dev/zero: %v", err)
	}
	for _, tc := range []struct {
		name string
		// setup prepares the inputs in tmp and returns the file to replace
		// and the arguments.
		setup func(t *testing.T, tmp string) (string, []string)
		// inDir: the file is inside a result directory, where a link is
		// not followed at all (point 8).
		inDir bool
	}{
		{"validate", func(t *testing.T, tmp string) (string, []string) {
			return filepath.Join(tmp, "test.yaml"), []string{"validate", filepath.Join(tmp, "test.yaml")}
		}, false},
		{"validate-personality", func(t *testing.T, tmp string) (string, []string) {
			write(t, tmp, "test.yaml", []byte("requester:\n  nic: {personality: p.yaml}\n"))
			return filepath.Join(tmp, "p.yaml"), []string{"validate", filepath.Join(tmp, "test.yaml")}
		}, false},
		{"analyze-counters", func(t *testing.T, tmp string) (string, []string) {
			run := analyzeRunDir(t, tmp)
			return filepath.Join(run, "counters.json"), []string{"analyze", run}
		}, true},
		{"analyze-report", func(t *testing.T, tmp string) (string, []string) {
			run := analyzeRunDir(t, tmp)
			return filepath.Join(run, "report.json"), []string{"analyze", run}
		}, true},
		{"analyze-trace", func(t *testing.T, tmp string) (string, []string) {
			return filepath.Join(tmp, "t.pcap"), []string{"analyze", filepath.Join(tmp, "t.pcap")}
		}, false},
		{"analyze-meta", func(t *testing.T, tmp string) (string, []string) {
			run := analyzeRunDir(t, tmp)
			return filepath.Join(tmp, "meta.json"), []string{"analyze", "--meta", filepath.Join(tmp, "meta.json"), run}
		}, false},
		{"analyze-public-counters", func(t *testing.T, tmp string) (string, []string) {
			rep := publicRunDir(t, tmp)
			return filepath.Join(rep, "rdma-result", "requester_counter_start.yml"), []string{"analyze", rep}
		}, true},
		{"diff-report", func(t *testing.T, tmp string) (string, []string) {
			writeFakeSuite(t, filepath.Join(tmp, "base"), "cx5", 3000, "qp")
			writeFakeSuite(t, filepath.Join(tmp, "new"), "cx5", 3000, "qp")
			return filepath.Join(tmp, "base", "fast", "0", "report.json"), []string{"diff", filepath.Join(tmp, "base"), filepath.Join(tmp, "new")}
		}, false},
		{"diff-suite", func(t *testing.T, tmp string) (string, []string) {
			writeFakeSuite(t, filepath.Join(tmp, "new"), "cx5", 3000, "qp")
			return filepath.Join(tmp, "suite.json"), []string{"diff", filepath.Join(tmp, "suite.json"), filepath.Join(tmp, "new")}
		}, false},
		{"collie-anomalies", func(t *testing.T, tmp string) (string, []string) {
			write(t, tmp, "space.yaml", nil)
			return filepath.Join(tmp, "anomalies.json"), []string{"collie", "check", "--space", filepath.Join(tmp, "space.yaml"), "--anomalies", filepath.Join(tmp, "anomalies.json")}
		}, false},
		{"collie-space", func(t *testing.T, tmp string) (string, []string) {
			return filepath.Join(tmp, "space.yaml"), []string{"collie", "search", "--space", filepath.Join(tmp, "space.yaml"), "--engine", "model", "-o", filepath.Join(tmp, "out"), "-q"}
		}, false},
	} {
		for _, kind := range []struct{ name, msg string }{{"dev-zero", "not a regular file (a character device)"}, {"fifo", "not a regular file (a FIFO)"}} {
			msg := kind.msg
			if tc.inDir && kind.name == "dev-zero" {
				msg = "a symbolic link, not followed"
			}
			t.Run(tc.name+"/"+kind.name, func(t *testing.T) {
				tmp := t.TempDir()
				bad, args := tc.setup(t, tmp)
				os.Remove(bad)
				var err error
				if kind.name == "fifo" {
					err = syscall.Mkfifo(bad, 0o644)
				} else {
					err = os.Symlink("/dev/zero", bad)
				}
				if err != nil {
					t.Fatal(err)
				}
				code, stdout, stderr := runBounded(t, args...)
				if out := stdout + stderr; code != 1 || !strings.Contains(out, bad) || !strings.Contains(out, msg) {
					t.Errorf("lumina %s with %s a %s: exit %d, output %q; want exit 1 naming the file, %q",
						strings.Join(args, " "), bad, kind.name, code, out, msg)
				}
			})
		}
	}
}

// Point 8: a link in a result directory someone else made is not
// followed, and no error quotes the bytes of the file it points to (the
// trace error printed "magic 0x726f6f74", "root" of /etc/shadow).
func TestResultDirLinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the file to replace by a link and the directory
		// to analyze.
		setup func(t *testing.T, tmp string) (string, string)
	}{
		{"public-trace", func(t *testing.T, tmp string) (string, string) {
			rep := publicRunDir(t, tmp)
			return filepath.Join(rep, "pcap-result", "trace.pcap"), rep
		}},
		{"public-config", func(t *testing.T, tmp string) (string, string) {
			rep := publicRunDir(t, tmp)
			return filepath.Join(filepath.Dir(rep), "config.yml"), rep
		}},
		{"public-counters", func(t *testing.T, tmp string) (string, string) {
			rep := publicRunDir(t, tmp)
			return filepath.Join(rep, "rdma-result", "requester_counter_finish.yml"), rep
		}},
		{"public-pcap-dir", func(t *testing.T, tmp string) (string, string) {
			rep := publicRunDir(t, tmp)
			// pcap-result -> a directory outside the result directory whose
			// trace.pcap is a plain file (as /etc and its shadow are).
			other := filepath.Join(tmp, "other")
			if err := os.Rename(filepath.Join(rep, "pcap-result"), other); err != nil {
				t.Fatal(err)
			}
			write(t, other, "trace.pcap", []byte("root:$6$salt$hash:19000:0:99999:7:::\n"))
			if err := os.Symlink(other, filepath.Join(rep, "pcap-result")); err != nil {
				t.Fatal(err)
			}
			write(t, tmp, "unused", nil) // the file the test links to the secret
			return filepath.Join(tmp, "unused"), rep
		}},
		{"run-trace", func(t *testing.T, tmp string) (string, string) {
			run := analyzeRunDir(t, tmp)
			return filepath.Join(run, "trace.pcap"), run
		}},
		{"run-config", func(t *testing.T, tmp string) (string, string) {
			run := analyzeRunDir(t, tmp)
			return filepath.Join(run, "config.yaml"), run
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			secret := filepath.Join(tmp, "shadow")
			write(t, tmp, "shadow", []byte("root:$6$salt$hash:19000:0:99999:7:::\n"))
			link, dir := tc.setup(t, tmp)
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(secret, link); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runBounded(t, "analyze", dir)
			want := "lumina: " + link + ": a symbolic link, not followed (lumina analyze reads no links in a result directory; copy the file in)\n"
			if tc.name == "public-pcap-dir" {
				want = "lumina: " + filepath.Join(dir, "pcap-result") + ": a symbolic link, not followed (lumina analyze reads no links in a result directory)\n"
			}
			if code != 1 || stderr != want {
				t.Errorf("lumina analyze %s with %s -> %s: exit %d, stderr %q; want exit 1, %q", dir, link, secret, code, stderr, want)
			}
			for _, leak := range []string{"root", "0x726f6f74", "salt"} {
				if strings.Contains(stdout+stderr, leak) {
					t.Errorf("lumina analyze output quotes the linked file (%q):\n%s%s", leak, stdout, stderr)
				}
			}
		})
	}
}

// Point 7: lumina analyze never overwrites a run's record (-o naming a run
// directory, or a test directory whose repeats it would write into;
// --html naming a record file: usage errors, exit 2, nothing written), and
// never writes through a link planted where its output goes (the link and
// its target are left as they were; exit 1).
func TestAnalyzeOutputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the arguments and the files that must be left
		// unchanged.
		setup    func(t *testing.T, tmp string) ([]string, []string)
		wantCode int
		wantErr  string // in stderr; $TMP is tmp
	}{
		{name: "-o run dir", setup: func(t *testing.T, tmp string) ([]string, []string) {
			run := analyzeRunDir(t, tmp)
			return []string{"analyze", "-o", run, run}, []string{filepath.Join(run, "report.json")}
		}, wantCode: 2, wantErr: "lumina: -o $TMP/run: a run directory (it holds the run's config.yaml and report.json); lumina analyze never overwrites a run's record: give another directory\n"},
		{name: "-o test dir", setup: func(t *testing.T, tmp string) ([]string, []string) {
			test := filepath.Join(tmp, "test")
			run := analyzeRunDir(t, tmp)
			if err := os.MkdirAll(test, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(run, filepath.Join(test, "0")); err != nil {
				t.Fatal(err)
			}
			return []string{"analyze", "-o", test, test}, []string{filepath.Join(test, "0", "report.json")}
		}, wantCode: 2, wantErr: "lumina: -o $TMP/test/0: a run directory"},
		{name: "--html run report", setup: func(t *testing.T, tmp string) ([]string, []string) {
			run := analyzeRunDir(t, tmp)
			write(t, run, "report.html", []byte("the run's page"))
			return []string{"analyze", "--html", filepath.Join(run, "report.html"), run}, []string{filepath.Join(run, "report.html")}
		}, wantCode: 2, wantErr: "lumina: --html $TMP/run/report.html: a file of a run's record"},
		{name: "-o planted link", setup: func(t *testing.T, tmp string) ([]string, []string) {
			run := analyzeRunDir(t, tmp)
			out := filepath.Join(tmp, "out")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, tmp, "victim.txt", []byte("victim"))
			if err := os.Symlink(filepath.Join(tmp, "victim.txt"), filepath.Join(out, "report.html")); err != nil {
				t.Fatal(err)
			}
			return []string{"analyze", "-o", out, run}, []string{filepath.Join(tmp, "victim.txt")}
		}, wantCode: 1, wantErr: "lumina: write $TMP/out/report.html: a symbolic link, not followed\n"},
		{name: "--html planted link", setup: func(t *testing.T, tmp string) ([]string, []string) {
			run := analyzeRunDir(t, tmp)
			write(t, tmp, "victim.txt", []byte("victim"))
			if err := os.Symlink(filepath.Join(tmp, "victim.txt"), filepath.Join(tmp, "page.html")); err != nil {
				t.Fatal(err)
			}
			return []string{"analyze", "--html", filepath.Join(tmp, "page.html"), run}, []string{filepath.Join(tmp, "victim.txt")}
		}, wantCode: 1, wantErr: "lumina: write $TMP/page.html: a symbolic link, not followed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			args, keep := tc.setup(t, tmp)
			before := map[string]string{}
			for _, f := range keep {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				before[f] = string(b)
			}
			code, _, stderr := runBounded(t, args...)
			stderr = strings.ReplaceAll(stderr, tmp, "$TMP")
			if code != tc.wantCode || !strings.HasPrefix(stderr, tc.wantErr) {
				t.Errorf("lumina %s: exit %d, stderr %q; want exit %d, %q", strings.Join(args, " "), code, stderr, tc.wantCode, tc.wantErr)
			}
			for f, b := range before {
				if got, _ := os.ReadFile(f); string(got) != b {
					t.Errorf("%s = %.80q after lumina %s, want it unchanged: %.80q", f, got, strings.Join(args, " "), b)
				}
			}
		})
	}
}
