package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDocs keeps README.md and docs/*.md true. It collects every command
// the docs show in fenced code blocks (lines starting with "lumina " or
// "go run ./cmd/lumina ", "$ " prefixed in ```console blocks) and
//
//   - checks that every flag a command or usage synopsis names exists
//     (`lumina help CMD` lists it);
//   - runs, with the built lumina and in doc order, every command that is neither a
//     synopsis (it has "[" or "|") nor in docSkips (each with its reason),
//     in a scratch directory per page whose examples/ is the repository's
//     (so results/, out/ and /tmp/... paths land in the scratch directory);
//   - checks the exit status the doc gives ("# exit N" or "exits N" in the
//     line's comment; 0 otherwise);
//   - in ```console blocks, checks the lines quoted after a command appear
//     in its output in that order and adjacent, "..." standing for any
//     lines (a command with no lines after it is not checked for output);
//   - checks the numbers the docs quote that are deterministic on sim
//     (docChecks: verdicts, packet and pause counts, medians, watchdog
//     times), nothing that depends on the machine's speed or load.
//
// Everything runs on the sim testbed without root: about 18 s (27 s under
// -race: the commands run in the built, uninstrumented binary).
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the docs' commands (about 15 s); not in -short")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		files = append(files, filepath.Join("docs", filepath.Base(f)))
	}
	d := &docRun{top: t, root: root, pages: map[string]string{}, work: map[string]string{}}
	var cmds []*docCmd
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		d.pages[f] = string(data)
		cmds = append(cmds, parseDocCommands(f, string(data))...)
	}
	if len(cmds) < 20 {
		t.Fatalf("found %d commands in the docs, want at least 20: is the parser broken?", len(cmds))
	}
	d.cmds = cmds

	used := make([]bool, len(docSkips))
	for _, c := range cmds {
		t.Run(fmt.Sprintf("%s:%d", c.file, c.line), func(t *testing.T) {
			d.checkFlags(t, c)
			if c.synopsis() {
				return // a usage synopsis: flags checked, nothing to run
			}
			for i, s := range docSkips {
				if s.file == c.file && strings.HasPrefix(c.text, s.prefix) {
					used[i] = true
					t.Skipf("lumina %s: %s", c.text, s.reason)
				}
			}
			d.run(t, c)
		})
	}
	for i, s := range docSkips {
		if !used[i] {
			t.Errorf("docSkips entry %s %q matches no command in the docs: remove it", s.file, s.prefix)
		}
	}
	for _, ck := range docChecks {
		t.Run("quote/"+ck.name, func(t *testing.T) {
			for _, f := range ck.needs {
				if d.work[f] == "" {
					t.Fatalf("the commands of %s did not run", f)
				}
			}
			ck.check(t, d)
		})
	}
}

// docSkips are the commands of the docs TestDocs does not run, and why.
// An entry matches the commands of its page that start with prefix (the
// text after "lumina "); an entry that matches nothing fails the test.
var docSkips = []struct{ file, prefix, reason string }{
	{"docs/regression.md", "run -o base/ SUITE_DIR/", "a template: SUITE_DIR stands for the user's folder (the recipe on the same page runs these commands on examples/regression)"},
	{"docs/regression.md", "run -o new/ SUITE_DIR/", "a template: SUITE_DIR stands for the user's folder"},
	{"docs/regression.md", "diff base/ new/", "a template: base/ and new/ come from the template runs above it"},
	{"docs/collie.md", "collie search --engine 'exec:", "needs the user's ./run-on-testbed.sh and a hardware testbed"},
	{"docs/tofino.md", "run --testbed remote", "the remote testbed: needs agents on hosts with RNICs and a P4Runtime switch"},
	{"docs/tofino.md", "injector --port", "needs root and the interfaces veth1/veth2, and serves until stopped"},
	{"docs/analyze.md", "run -q -o big length.yaml", "1.05 M packets (and the page's 10.5 M and 31.5 M) for a memory measurement, which is not asserted"},
}

// docCmd is one command shown in a doc's fenced code block.
type docCmd struct {
	file    string   // page, relative to the repository root
	line    int      // 1-based line of the command's first line
	text    string   // the command after "lumina ", comment and "\" continuations removed
	comment string   // the line's "# ..." comment, without "#"
	output  []string // ```console: the lines quoted after the command
	console bool

	ran            bool
	code           int
	stdout, stderr string
}

func (c *docCmd) synopsis() bool { return strings.ContainsAny(c.text, "[|") }

// wantCode is the exit status the doc gives: "exit N" or "exits N" in the
// comment, else 0.
func (c *docCmd) wantCode() int {
	if m := regexp.MustCompile(`\bexits? (\d+)`).FindStringSubmatch(c.comment); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// parseDocCommands returns the lumina commands of page's fenced code blocks.
func parseDocCommands(file, page string) []*docCmd {
	var out []*docCmd
	var cur *docCmd // the console command whose output lines follow
	inBlock, console := false, false
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		trim := strings.TrimSpace(lines[i])
		if strings.HasPrefix(trim, "```") {
			inBlock = !inBlock
			console = inBlock && strings.TrimPrefix(trim, "```") == "console"
			cur = nil
			continue
		}
		if !inBlock {
			continue
		}
		start := i
		for strings.HasSuffix(trim, `\`) && i+1 < len(lines) {
			i++
			trim = strings.TrimSpace(strings.TrimSuffix(trim, `\`)) + " " + strings.TrimSpace(lines[i])
		}
		if console {
			rest, isCmd := strings.CutPrefix(trim, "$ ")
			if !isCmd {
				if cur != nil {
					cur.output = append(cur.output, strings.TrimRight(lines[i], " "))
				}
				continue
			}
			trim, cur = rest, nil
		}
		text, ok := strings.CutPrefix(trim, "lumina ")
		if !ok {
			text, ok = strings.CutPrefix(trim, "go run ./cmd/lumina ")
		}
		if !ok {
			continue
		}
		c := &docCmd{file: file, line: start + 1, console: console}
		c.text, c.comment = splitComment(text)
		out = append(out, c)
		if console {
			cur = c
		}
	}
	return out
}

// splitComment splits a shell line at its first " #" outside quotes.
func splitComment(s string) (cmd, comment string) {
	quote := rune(0)
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' '):
			return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:])
		}
	}
	return strings.TrimSpace(s), ""
}

// shellFields splits a command line into words, honouring '...' and "...".
func shellFields(s string) []string {
	var out []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// docRun is the state of one TestDocs run.
type docRun struct {
	top   *testing.T // TestDocs itself: owns the scratch directories
	root  string
	pages map[string]string // page → its text
	work  map[string]string // page → its scratch directory, once a command ran there
	cmds  []*docCmd
	help  map[string]string // command → `lumina help COMMAND` output
}

// checkFlags checks that every flag c names is one of its command's.
func (d *docRun) checkFlags(t *testing.T, c *docCmd) {
	words := shellFields(c.text)
	if len(words) == 0 {
		t.Fatalf("%s:%d: an empty lumina command", c.file, c.line)
	}
	name := words[0]
	if d.help == nil {
		d.help = map[string]string{}
	}
	h, ok := d.help[name]
	if !ok {
		code, out, errOut := runIn(t, "", "help", name)
		if code != 0 {
			t.Fatalf("%s:%d: lumina help %s: exit %d, %s", c.file, c.line, name, code, errOut)
		}
		h, d.help[name] = out, out
	}
	for _, w := range words[1:] {
		if w == "--" {
			break
		}
		w = strings.Trim(w, "[]")
		if !strings.HasPrefix(w, "-") || w == "-" {
			continue
		}
		f, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(f) + `\b`).MatchString(h) {
			t.Errorf("%s:%d: lumina %s: flag -%s is not in `lumina help %s`", c.file, c.line, c.text, f, name)
		}
	}
}

// runIn runs the built lumina with args in dir ("": the test's) and
// returns its exit status and output.
func runIn(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, luminaBin, args...)
	cmd.Dir = dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("lumina %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// scratch returns page's scratch directory: examples/ is the repository's.
func (d *docRun) scratch(t *testing.T, page string) string {
	if w := d.work[page]; w != "" {
		return w
	}
	w := d.top.TempDir() // not t's: it outlives the subtest
	if err := os.Symlink(filepath.Join(d.root, "examples"), filepath.Join(w, "examples")); err != nil {
		t.Fatal(err)
	}
	d.work[page] = w
	return w
}

// run runs c in its page's scratch directory and checks its exit status
// and quoted output.
func (d *docRun) run(t *testing.T, c *docCmd) {
	w := d.scratch(t, c.file)
	args := shellFields(c.text)
	for i, a := range args {
		if rest, ok := strings.CutPrefix(a, "/tmp/"); ok {
			args[i] = filepath.Join(w, "tmp", rest)
		}
	}
	c.code, c.stdout, c.stderr = runIn(t, w, args...)
	c.ran = true
	if want := c.wantCode(); c.code != want {
		t.Errorf("lumina %s: exit %d, want %d (the doc's %q)\nstdout:\n%s\nstderr:\n%s", c.text, c.code, want, c.comment, c.stdout, c.stderr)
	}
	if len(c.output) > 0 {
		if err := matchQuoted(c.output, c.stdout); err != nil {
			t.Errorf("lumina %s: %v\nstdout:\n%s", c.text, err, c.stdout)
		}
	}
}

// matchQuoted checks that the lines of want appear in got in order and
// adjacent; a "..." line stands for any number of lines, and without one
// at the start (end) the quote starts (ends) got.
func matchQuoted(want []string, got string) error {
	for len(want) > 0 && want[len(want)-1] == "" {
		want = want[:len(want)-1]
	}
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	var groups [][]string
	groups = append(groups, nil)
	for _, l := range want {
		if strings.TrimSpace(l) == "..." {
			groups = append(groups, nil)
			continue
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], l)
	}
	pos := 0
	for gi, g := range groups {
		if len(g) == 0 {
			continue
		}
		at := -1
		for s := pos; s+len(g) <= len(lines); s++ {
			if slices.Equal(lines[s:s+len(g)], g) {
				at = s
				break
			}
			if gi == 0 {
				break // no "..." before: the quote starts the output
			}
		}
		if at < 0 {
			return fmt.Errorf("the quoted lines\n%s\nare not in the output (in order, after line %d)", strings.Join(g, "\n"), pos)
		}
		pos = at + len(g)
	}
	if len(groups[len(groups)-1]) > 0 && pos != len(lines) {
		return fmt.Errorf("the output goes on after the quoted lines (line %d of %d); end the quote with ...", pos, len(lines))
	}
	return nil
}

// cmd returns the command of page whose first words are prefix, after it
// ran.
func (d *docRun) cmd(t *testing.T, page, prefix string) *docCmd {
	t.Helper()
	for _, c := range d.cmds {
		if c.file == page && (c.text == prefix || strings.HasPrefix(c.text, prefix+" ")) {
			if !c.ran {
				t.Fatalf("%s: lumina %s did not run", page, c.text)
			}
			return c
		}
	}
	t.Fatalf("%s shows no command starting with %q", page, prefix)
	return nil
}

// lumina runs lumina in page's scratch directory and returns its stdout;
// wantCode -1 accepts any exit status.
func (d *docRun) lumina(t *testing.T, page string, wantCode int, args ...string) string {
	t.Helper()
	code, out, errOut := runIn(t, d.work[page], args...)
	if wantCode >= 0 && code != wantCode {
		t.Fatalf("lumina %s: exit %d, want %d\n%s", strings.Join(args, " "), code, wantCode, errOut)
	}
	return out
}

// quote returns the submatches of re in page (squeezed to single spaces),
// which must match exactly once.
func (d *docRun) quote(t *testing.T, page, re string) []string {
	t.Helper()
	text := strings.Join(strings.Fields(d.pages[page]), " ")
	ms := regexp.MustCompile(re).FindAllStringSubmatch(text, -1)
	if len(ms) != 1 {
		t.Fatalf("%s: %d matches of %q, want 1", page, len(ms), re)
	}
	return ms[0][1:]
}

// find returns the first submatch of re in s.
func find(t *testing.T, what, s, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%s: no match of %q in\n%s", what, re, s)
	}
	return m[1]
}

// sameAtPrecision reports whether got, rounded to the decimals of the
// doc's number doc (commas allowed), reads as doc.
func sameAtPrecision(doc string, got float64) bool {
	doc = strings.ReplaceAll(doc, ",", "")
	dec := 0
	if i := strings.IndexByte(doc, '.'); i >= 0 {
		dec = len(doc) - i - 1
	}
	want, err := strconv.ParseFloat(doc, 64)
	if err != nil {
		return false
	}
	// Half a unit of the last digit either way: 8.045 reads as 8.04 or 8.05.
	return math.Abs(got-want) <= 0.5*math.Pow10(-dec)*(1+1e-9)
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// docCheck checks numbers a page quotes against the runs of its commands.
type docCheck struct {
	name  string
	needs []string // pages whose commands must have run
	check func(t *testing.T, d *docRun)
}

var docChecks = []docCheck{
	{"README/examples-verdicts", []string{"README.md"}, checkExampleVerdicts},
	{"run.md/netns-table-sim-column", []string{"README.md"}, checkNetnsTableSim},
	{"regression.md/cx5-cx4", []string{"docs/regression.md"}, checkRegressionCX4},
	{"regression.md/cx5-cx6-and-seed", []string{"docs/regression.md"}, checkRegressionCX6},
	{"reorder-cx5.yaml/comment", []string{"README.md"}, checkReorderComment},
	{"hardware.md/rnic-default", nil, checkRNICDefault},
}

// checkExampleVerdicts: README says `lumina run examples/` exits 1
// because exactly the two timeout examples fail their timeout check, and
// every other example passes.
func checkExampleVerdicts(t *testing.T, d *docRun) {
	d.quote(t, "README.md", "the two timeout examples \\(`timeout-adaptive.yaml`, `timeout-non-adaptive.yaml`\\) reproduce NICs whose retransmission timeout misses the spec's bound, so their `timeout` check fails; every other example passes")
	c := d.cmd(t, "README.md", "run examples/")
	yamls, _ := filepath.Glob(filepath.Join(d.root, "examples", "*.yaml"))
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(\S+) repeat 0: (.*) → `).FindAllStringSubmatch(c.stdout, -1) {
		got[m[1]] = m[2]
	}
	if len(got) != len(yamls) {
		t.Errorf("lumina run examples/: %d results, want one per examples/*.yaml (%d)\n%s", len(got), len(yamls), c.stdout)
	}
	for name, v := range got {
		want := "valid, all checks pass"
		if strings.HasPrefix(name, "timeout-") {
			want = "valid, FAILED: timeout"
		}
		if v != want {
			t.Errorf("lumina run examples/: %s: %q, want %q", name, v, want)
		}
	}
}

// checkNetnsTableSim: the sim column of run.md's netns table (sim is the
// same on every machine; the netns columns are measurements).
func checkNetnsTableSim(t *testing.T, d *docRun) {
	const page = "docs/run.md"
	analyze := func(ex string) string {
		out := d.lumina(t, "README.md", 0, "analyze", filepath.Join("results", ex, "0"))
		txt, err := os.ReadFile(filepath.Join(d.work["README.md"], "results", ex, "0", "report.txt"))
		if err != nil {
			t.Fatal(err)
		}
		return out + string(txt)
	}
	pfcFrames := func(ex string) (n, injected int) {
		out := d.lumina(t, "README.md", 0, "decode", filepath.Join("results", ex, "0", "trace.pcap"))
		for l := range strings.Lines(out) {
			if strings.Contains(l, " PFC ") {
				n++
				if strings.Contains(l, "event=pause") {
					injected++
				}
			}
		}
		return n, injected
	}
	toHost := `port 1 \(requester\) prio 3: .* to host \d+ frames \((\d+) xoff`
	goodput := `generator +pass +.* ([\d.]+) Gb/s goodput`

	q := d.quote(t, page, "all pass; (\\d+) PFC frames, all injected; reaction ([\\d,]+) ns; goodput ([\\d.]+) Gb/s")
	out := analyze("pause-reaction")
	n, inj := pfcFrames("pause-reaction")
	if num(t, q[0]) != float64(n) || n != inj {
		t.Errorf("pause-reaction: %d PFC frames, %d injected; run.md says %s, all injected", n, inj, q[0])
	}
	for i, re := range []struct {
		re    string
		scale float64
	}{{`max reaction ([\d.]+)µs`, 1000}, {goodput, 1}} {
		if got := num(t, find(t, "pause-reaction", out, re.re)) * re.scale; !sameAtPrecision(q[i+1], got) {
			t.Errorf("pause-reaction: %s gives %v, run.md says %s", re.re, got, q[i+1])
		}
	}

	q = d.quote(t, page, "all pass; responder (\\d+) XOFFs at ([\\d.]+) Gb/s into its pipeline, switch → requester (\\d+); goodput ([\\d.]+) Gb/s")
	out = analyze("slow-receiver")
	for i, re := range []string{`port 2 \(responder\) prio 3: from host \d+ frames \((\d+) xoff`, `slow receiver: .* received at ([\d.]+) Gb/s`, toHost, goodput} {
		if got := num(t, find(t, "slow-receiver", out, re)); !sameAtPrecision(q[i], got) {
			t.Errorf("slow-receiver: %s gives %v, run.md says %s", re, got, q[i])
		}
	}

	q = d.quote(t, page, "all pass; no PFC frame; goodput ([\\d.]+) Gb/s")
	out = analyze("slow-receiver-hugepages")
	if n, _ := pfcFrames("slow-receiver-hugepages"); n != 0 {
		t.Errorf("slow-receiver-hugepages: %d PFC frames, run.md says none", n)
	}
	if got := num(t, find(t, "slow-receiver-hugepages", out, goodput)); !sameAtPrecision(q[0], got) {
		t.Errorf("slow-receiver-hugepages: goodput %v, run.md says %s", got, q[0])
	}

	q = d.quote(t, page, "all pass; switch storm ([\\d.]+) ms, NIC stops ([\\d.]+) ms, restore ([\\d.]+) ms, (\\d+) pauses to the requester")
	out = analyze("pfc-storm")
	for i, re := range []string{`watchdog switch-storm at ([\d.]+)ms`, `watchdog nic at ([\d.]+)ms`, `watchdog switch-restore at ([\d.]+)ms`, toHost} {
		if got := num(t, find(t, "pfc-storm", out, re)); !sameAtPrecision(q[i], got) {
			t.Errorf("pfc-storm: %s gives %v, run.md says %s", re, got, q[i])
		}
	}
}

// diffJSON is the part of `lumina diff --format json` the checks read.
type diffJSON struct {
	Tests []struct {
		Name       string `json:"name"`
		Quantities []struct {
			Name       string  `json:"name"`
			BaseMedian float64 `json:"base_median"`
			NewMedian  float64 `json:"new_median"`
			Shift      float64 `json:"shift"`
			RelShift   float64 `json:"rel_shift"`
			Status     string  `json:"status"`
		} `json:"quantities"`
	} `json:"tests"`
	Findings []struct {
		Test    string `json:"test"`
		Kind    string `json:"kind"`
		Class   string `json:"class"`
		Subject string `json:"subject"`
		Base    string `json:"base"`
		New     string `json:"new"`
	} `json:"findings"`
}

func (d *docRun) diff(t *testing.T, base, new string) diffJSON {
	t.Helper()
	w := d.work["docs/regression.md"]
	out := d.lumina(t, "docs/regression.md", -1, "diff", "--format", "json", filepath.Join(w, "tmp", "reg", base), filepath.Join(w, "tmp", "reg", new))
	var j diffJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("diff %s %s: %v", base, new, err)
	}
	return j
}

// quantity returns test's quantity q: its medians, shift, relative shift
// and status.
func (j diffJSON) quantity(t *testing.T, test, q string) (base, new, shift, rel float64, status string) {
	t.Helper()
	for _, tt := range j.Tests {
		if tt.Name != test {
			continue
		}
		for _, x := range tt.Quantities {
			if x.Name == q {
				return x.BaseMedian, x.NewMedian, x.Shift, x.RelShift, x.Status
			}
		}
	}
	t.Fatalf("diff: no quantity %s in test %s", q, test)
	return
}

var unitScale = map[string]float64{"ns": 1, "µs": 1e3, "ms": 1e6, "Gb/s": 1, "": 1}

// checkRegressionCX4: regression.md's cx5 → cx4 table names exactly the
// regressions `lumina diff` finds, with their medians.
func checkRegressionCX4(t *testing.T, d *docRun) {
	const page = "docs/regression.md"
	text := d.pages[page]
	start := strings.Index(text, "**cx5 → cx4** flags exactly these ten regressions")
	if start < 0 {
		t.Fatal("regression.md: no cx5 → cx4 table")
	}
	end := strings.Index(text[start:], "\n\n|")
	table := text[start+end+2:]
	table = table[:strings.Index(table, "\n\n")]
	row := regexp.MustCompile("^\\| (\\S+) \\| `(\\w+)` \\| ([\\d.]+) ?(ns|µs|ms|Gb/s)? → ([\\d.]+) (ns|µs|ms|Gb/s) \\|")
	j := d.diff(t, "base", "cx4")
	want := map[string]bool{}
	for l := range strings.Lines(table) {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		want[m[1]+"/"+m[2]] = true
		bu := m[4]
		if bu == "" {
			bu = m[6]
		}
		base, new, _, _, _ := j.quantity(t, m[1], m[2])
		if !sameAtPrecision(m[3], base/unitScale[bu]) || !sameAtPrecision(m[5], new/unitScale[m[6]]) {
			t.Errorf("regression.md: %s %s: %s %s → %s %s, lumina diff gives %v → %v (%s)", m[1], m[2], m[3], bu, m[5], m[6], base/unitScale[bu], new/unitScale[m[6]], m[6])
		}
	}
	if len(want) != 10 {
		t.Errorf("regression.md: the cx5 → cx4 table has %d rows, want the ten regressions", len(want))
	}
	got := map[string]bool{}
	for _, f := range j.Findings {
		if f.Class != "regression" {
			t.Errorf("diff base cx4: finding %+v, want only regressions", f)
		}
		got[f.Test+"/"+f.Subject] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("diff base cx4: regressions %v, regression.md's table %v", keys(got), keys(want))
	}
	// "Not flagged: nack_generation_ns of fast-retx (+130 ns, +11.8% ...),
	// READ's nack_reaction_ns (+140 ns, +12.8%, ...), the timeouts (+2 ns on
	// 242.9 ms)."
	q := d.quote(t, page, "Not flagged: `nack_generation_ns` of `fast-retx` \\(\\+(\\d+) ns, \\+([\\d.]+)%.*READ's `nack_reaction_ns` \\(\\+(\\d+) ns, \\+([\\d.]+)%, `small`\\), the timeouts \\(\\+(\\d+) ns on ([\\d.]+) ms\\)")
	for i, x := range []struct{ test, q string }{{"fast-retx", "nack_generation_ns"}, {"read", "nack_reaction_ns"}} {
		_, _, shift, rel, status := j.quantity(t, x.test, x.q)
		if !sameAtPrecision(q[2*i], shift) || !sameAtPrecision(q[2*i+1], rel*100) || status != "small" {
			t.Errorf("%s %s: shift %v ns (%v%%, %s), regression.md says +%s ns, +%s%%, small", x.test, x.q, shift, rel*100, status, q[2*i], q[2*i+1])
		}
	}
	base, _, shift, _, _ := j.quantity(t, "timeout", "timeout_interval_ns")
	if !sameAtPrecision(q[4], shift) || !sameAtPrecision(q[5], base/1e6) {
		t.Errorf("timeout: shift %v ns on %v ms, regression.md says +%s ns on %s ms", shift, base/1e6, q[4], q[5])
	}
	// The recipe's comments: exit 1 with ten regressions.
	c := d.cmd(t, page, "diff --html /tmp/reg/cx4.html")
	if !strings.Contains(c.stdout, "REGRESSION: 10 regressions, 0 changes, 0 improvements") {
		t.Errorf("lumina %s: want 10 regressions, got\n%s", c.text, c.stdout)
	}
}

// checkRegressionCX6: cx5 → cx6 flags exactly two changes in cnp-pacing
// (the scope, cnps_observed 6 → 2); another seed finds nothing; cx6 → cx4
// shows the ten regressions and the scope change.
func checkRegressionCX6(t *testing.T, d *docRun) {
	const page = "docs/regression.md"
	q := d.quote(t, page, "flags exactly two changes in `cnp-pacing`: `cnp-scope` ([a-z, -]+) → ([a-z-]+) .* `cnps_observed` (\\d+) → (\\d+)")
	j := d.diff(t, "base", "cx6")
	if len(j.Findings) != 2 {
		t.Fatalf("diff base cx6: %d findings, regression.md says two: %+v", len(j.Findings), j.Findings)
	}
	for _, f := range j.Findings {
		if f.Test != "cnp-pacing" || f.Class != "change" {
			t.Errorf("diff base cx6: %+v, want changes in cnp-pacing", f)
		}
		if f.Kind == "cnp-scope" && (f.Base != q[0] || f.New != q[1]) {
			t.Errorf("diff base cx6: scope %s → %s, regression.md says %s → %s", f.Base, f.New, q[0], q[1])
		}
	}
	base, new, _, _, _ := j.quantity(t, "cnp-pacing", "cnps_observed")
	if !sameAtPrecision(q[2], base) || !sameAtPrecision(q[3], new) {
		t.Errorf("cnps_observed %v → %v, regression.md says %s → %s", base, new, q[2], q[3])
	}
	for _, x := range []struct{ prefix, want string }{
		{"diff /tmp/reg/base /tmp/reg/cx6", "no regression: 0 regressions, 2 changes, 0 improvements"},
		{"diff /tmp/reg/base /tmp/reg/base2", "no regression: 0 regressions, 0 changes, 0 improvements"},
		{"diff /tmp/reg/cx6 /tmp/reg/cx4", "REGRESSION: 10 regressions, 2 changes, 0 improvements"},
	} {
		if c := d.cmd(t, page, x.prefix); !strings.Contains(c.stdout, x.want) {
			t.Errorf("lumina %s (# %s): want %q in\n%s", c.text, c.comment, x.want, c.stdout)
		}
	}
}

// checkReorderComment: what examples/reorder-cx5.yaml's comment says the
// trace shows: per message (10 packets), NAKs for PSN 3 and PSN 4, and
// PSNs 4..9 sent twice, nothing else resent.
func checkReorderComment(t *testing.T, d *docRun) {
	yaml, err := os.ReadFile(filepath.Join(d.root, "examples", "reorder-cx5.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	comment := strings.Join(strings.Fields(strings.ReplaceAll(string(yaml), "#", "")), " ")
	for _, s := range []string{"NAKs the held PSN (sequence error) when PSN 4 arrives first", "NAKs PSN 4 when PSN 5 arrives", "resends PSNs 4..9", "one fast-retransmitted gap per message (at PSN 4), all checks pass"} {
		if !strings.Contains(comment, s) {
			t.Fatalf("reorder-cx5.yaml's comment no longer says %q: update this check", s)
		}
	}
	out := d.lumina(t, "README.md", 0, "decode", "--format", "jsonl", filepath.Join("results", "reorder-cx5", "0", "trace.pcap"))
	var naks []int
	sent := map[int]int{}
	ipsn := -1
	for l := range strings.Lines(out) {
		var p struct {
			Opcode string `json:"opcode"`
			PSN    int    `json:"psn"`
			AETH   *struct {
				Type string `json:"type"`
			} `json:"aeth"`
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatal(err)
		}
		if ipsn < 0 {
			ipsn = p.PSN
		}
		switch {
		case p.Opcode == "RC_ACKNOWLEDGE" && p.AETH != nil && p.AETH.Type == "nak":
			naks = append(naks, p.PSN-ipsn)
		case strings.HasPrefix(p.Opcode, "RC_RDMA_WRITE"):
			sent[p.PSN-ipsn]++
		}
	}
	if want := []int{3, 4, 13, 14, 23, 24}; !slices.Equal(naks, want) {
		t.Errorf("reorder-cx5: NAKs for relative PSNs %v, want %v (the comment)", naks, want)
	}
	for psn := range 30 {
		want := 1
		if psn%10 >= 4 {
			want = 2
		}
		if sent[psn] != want {
			t.Errorf("reorder-cx5: relative PSN %d sent %d times, want %d (the comment)", psn, sent[psn], want)
		}
	}
	c := d.lumina(t, "README.md", 0, "analyze", filepath.Join("results", "reorder-cx5", "0"))
	if n := strings.Count(c, " gap fast:"); n != 3 || !strings.Contains(c, "result: PASS") {
		t.Errorf("reorder-cx5: %d fast-retransmitted gaps, want 3, and PASS:\n%s", n, c)
	}
}

// checkRNICDefault: hardware.md says the remote testbed drives real NICs
// (--rnic verbs) by default.
func checkRNICDefault(t *testing.T, d *docRun) {
	d.quote(t, "docs/hardware.md", "takes `--rnic verbs` \\(the default\\) or `--rnic softrnic`")
	_, out, _ := runIn(t, "", "help", "run")
	if !regexp.MustCompile(`-rnic string\n.*\(default "verbs"\)`).MatchString(out) {
		t.Errorf("lumina help run: --rnic's default is not verbs:\n%s", out)
	}
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// TestParseDocCommands: the commands TestDocs finds in a page: plain and
// "go run" forms, comments, "\" continuations, console blocks with their
// quoted output; commands outside code blocks are prose, not commands.
func TestParseDocCommands(t *testing.T) {
	page := "Run `lumina run x.yaml` in prose.\n" +
		"```sh\n" +
		"# a comment line\n" +
		"lumina run -o out/ examples/   # exits 1, see below\n" +
		"go run ./cmd/lumina collie search --engine 'exec:a b' \\\n" +
		"    --budget 9 -o out/hw\n" +
		"lumina decode [--format text|jsonl] FILE\n" +
		"```\n" +
		"```console\n" +
		"$ lumina decode t.pcap\n" +
		"...\n" +
		"4 0.1 line # with a hash\n" +
		"$ cat x\n" +
		"not output\n" +
		"$ lumina help\n" +
		"```\n"
	got := parseDocCommands("p.md", page)
	type row struct {
		line      int
		text      string
		comment   string
		output    []string
		synopsis  bool
		wantCode  int
		shellArgs int
	}
	want := []row{
		{4, "run -o out/ examples/", "exits 1, see below", nil, false, 1, 4},
		{5, "collie search --engine 'exec:a b' --budget 9 -o out/hw", "", nil, false, 0, 8},
		{7, "decode [--format text|jsonl] FILE", "", nil, true, 0, 4},
		{10, "decode t.pcap", "", []string{"...", "4 0.1 line # with a hash"}, false, 0, 2},
		{15, "help", "", nil, false, 0, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("parseDocCommands found %d commands, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		c := got[i]
		g := row{c.line, c.text, c.comment, c.output, c.synopsis(), c.wantCode(), len(shellFields(c.text))}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("command %d = %+v, want %+v", i, g, w)
		}
	}
	if f := shellFields("collie search --engine 'exec:a b' -o x"); f[3] != "exec:a b" {
		t.Errorf("shellFields: %q, want 'exec:a b' as one word", f)
	}
}

// TestMatchQuoted: quoted output lines must appear in order and adjacent;
// "..." stands for any lines; without it at an end the quote is anchored
// there.
func TestMatchQuoted(t *testing.T) {
	out := "a\nb\nc\nd\n"
	for _, tc := range []struct {
		name string
		want []string
		ok   bool
	}{
		{"all", []string{"a", "b", "c", "d"}, true},
		{"middle", []string{"...", "b", "c", "..."}, true},
		{"gap", []string{"...", "b", "...", "d"}, true},
		{"not adjacent", []string{"...", "b", "d"}, false},
		{"not from the start", []string{"b", "c", "..."}, false},
		{"not to the end", []string{"...", "b", "c"}, false},
		{"out of order", []string{"...", "c", "...", "b", "..."}, false},
		{"missing", []string{"...", "x", "..."}, false},
		{"trailing blank", []string{"...", "d", ""}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := matchQuoted(tc.want, out); (err == nil) != tc.ok {
				t.Errorf("matchQuoted(%q) = %v, want ok %v", tc.want, err, tc.ok)
			}
		})
	}
}
