package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/netlumina/lumina/internal/testutil"
)

func completionScript(t *testing.T, shell string) string {
	t.Helper()
	code, out, stderr := runCLI("completion", shell)
	if code != 0 || stderr != "" {
		t.Fatalf("lumina completion %s: exit %d, %q", shell, code, stderr)
	}
	return out
}

// TestCompletionContents: each script names every command and every flag
// of the table, and completes test files for run and validate.
func TestCompletionContents(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		s := completionScript(t, shell)
		for _, c := range commands {
			if !strings.Contains(s, c.name) {
				t.Errorf("%s script lacks command %s", shell, c.name)
			}
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.action.flags().define(fs)
			fs.VisitAll(func(f *flag.Flag) {
				spelled := map[string]string{"bash": "--" + f.Name, "zsh": "'--" + f.Name, "fish": "-l " + f.Name}[shell]
				if len(f.Name) == 1 {
					spelled = map[string]string{"bash": "-" + f.Name, "zsh": "'-" + f.Name + "[", "fish": "-s " + f.Name}[shell]
				}
				if !strings.Contains(s, spelled) {
					t.Errorf("%s script lacks %s's flag %s", shell, c.name, spelled)
				}
			})
		}
		for _, sc := range new(collieCmdFlags).subcommandFlags() {
			for _, f := range compFlags(sc.flags) {
				if !strings.Contains(s, f.name) {
					t.Errorf("%s script lacks collie %s's flag %s", shell, sc.name, f.name)
				}
			}
		}
		yaml := map[string]string{"bash": "_lumina_yaml", "zsh": `_files -g "*.(yaml|yml)"`, "fish": "(__lumina_yaml)"}[shell]
		if n := strings.Count(s, yaml); n < 2 {
			t.Errorf("%s script: %q %d times, want it for run and validate at least", shell, yaml, n)
		}
	}
	if s := completionScript(t, "fish"); !strings.Contains(s, "-l agent-certs -x -a '(__fish_complete_directories)'") ||
		!strings.Contains(s, "-l p4info -r -F") || !strings.Contains(s, "-l testbed -x") {
		t.Errorf("fish script: run's dir, file and word flags not completed as such")
	}
}

// TestCompletionSyntax: each script parses in its shell (bash -n, zsh -n,
// fish -n); a shell that is not installed skips the test (fails it under CI: scripts/test.sh installs zsh and fish).
func TestCompletionSyntax(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			bin := testutil.RequireTool(t, shell, shell)
			f := filepath.Join(t.TempDir(), "lumina."+shell)
			if err := os.WriteFile(f, []byte(completionScript(t, shell)), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "-n", f).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
}

// TestCompletionBash runs the bash script's function on command lines and
// checks what it offers.
func TestCompletionBash(t *testing.T) {
	bash := testutil.RequireTool(t, "bash", "bash")
	dir := t.TempDir()
	for _, f := range []string{"a.yaml", "b.yml", "c.txt", "t.pcap"} {
		write(t, dir, f, nil)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "lumina.bash")
	if err := os.WriteFile(script, []byte(completionScript(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string // the words, the last one being completed
		want string
	}{
		{"lumina ", "agent analyze collie completion decode diff dump export help init injector lab run validate version"},
		{"lumina ru", "run"},
		{"lumina run --tes", "--testbed"},
		{"lumina run -", "--agent-certs --agent-token-file --bfrt --device-config --format --intake-addr --intake-listen --memory-limit --p4info --pktgen-port --retries --rnic --seed --set --slowdown --testbed --tofino -o -q"},
		{"lumina run ", "a.yaml b.yml sub"},
		{"lumina validate --testbed sim ", "a.yaml b.yml sub"},
		{"lumina run --seed ", ""},
		{"lumina run -o ", "sub"},
		{"lumina decode ", "a.yaml b.yml c.txt lumina.bash sub t.pcap"},
		{"lumina completion ", "bash fish zsh"},
		{"lumina help v", "validate version"},
		{"lumina collie ", "check search"},
		{"lumina collie search --bud", "--budget"},
		{"lumina collie check --space ", "a.yaml b.yml c.txt lumina.bash sub t.pcap"},
		{"lumina collie check -", "--anomalies --format --space"},
		{"lumina init quick", "quickstart"},
		{"lumina version ", ""},
	} {
		words := strings.Split(tc.line, " ")
		prog := "source " + script + "\nCOMP_WORDS=(" + strings.Join(quoteAll(words), " ") + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "\n_lumina\nprintf '%s\\n' \"${COMPREPLY[@]}\" | sort -u | tr '\\n' ' '\n"
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "LC_ALL=C")
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != tc.want {
			t.Errorf("complete %q = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = "'" + w + "'"
	}
	return out
}

// TestCompletionFish asks fish what it completes (complete -C) with the
// script loaded.
func TestCompletionFish(t *testing.T) {
	fish := testutil.RequireTool(t, "fish", "fish")
	dir, home := t.TempDir(), t.TempDir()
	for _, f := range []string{"a.yaml", "c.txt"} {
		write(t, dir, f, nil)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(home, "lumina.fish")
	if err := os.WriteFile(script, []byte(completionScript(t, "fish")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, want string }{
		{"lumina ver", "version"},
		{"lumina run --tes", "--testbed"},
		{"lumina run ", "a.yaml sub/"},
		{"lumina completion ", "bash fish zsh"},
		{"lumina decode c", "c.txt"},
		{"lumina collie ", "check search"},
		{"lumina collie search --alg", "--algo"},
	} {
		prog := "source " + script + "; for c in (complete -C '" + tc.line + "'); echo $c; end"
		cmd := exec.Command(fish, "--no-config", "-c", prog)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "LC_ALL=C", "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home)
		out, err := cmd.CombinedOutput()
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if w, _, _ := strings.Cut(l, "\t"); w != "" {
				got = append(got, w)
			}
		}
		slices.Sort(got)
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("fish: complete -C %q = %q, %v; want %q\n%s", tc.line, got, err, tc.want, out)
		}
	}
}

// TestCompletionZsh runs the zsh script's function with zsh's completion
// functions stubbed to print their arguments: which command line gets
// which _arguments specs.
func TestCompletionZsh(t *testing.T) {
	zsh := testutil.RequireTool(t, "zsh", "zsh")
	script := filepath.Join(t.TempDir(), "_lumina")
	if err := os.WriteFile(script, []byte(completionScript(t, "zsh")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string
		want  []string // in the output
		not   []string
	}{
		{[]string{"lumina", ""}, []string{"_describe -t commands lumina command agent:host lumina components", "init:write a commented starting test"}, nil},
		{[]string{"lumina", "run", ""}, []string{"_arguments -S ", "--testbed=[override the testbed\\: sim, netns or remote", "-o[results dir", "-q[no progress lines on stderr]",
			"--p4info=[remote\\: P4Info file to push", ":p4info:_files", `*:test file:_files -g "*.(yaml|yml)"`}, []string{"--budget"}},
		{[]string{"lumina", "collie", ""}, []string{"compadd -- search check"}, []string{"_arguments"}},
		{[]string{"lumina", "collie", "search", "--b"}, []string{"--budget=[experiments", "-o[output dir"}, []string{"--anomalies"}},
		{[]string{"lumina", "collie", "check", ""}, []string{"--anomalies=[", "--space=["}, []string{"--budget"}},
		{[]string{"lumina", "completion", ""}, []string{"1:completion:(bash zsh fish)"}, nil},
	} {
		quoted := quoteAll(tc.words)
		prog := "compdef() { :; }\n_arguments() { print -r -- \"_arguments $*\"; }\n_describe() { print -r -- \"_describe $1 $2 $3 ${(P)4}\"; }\n" +
			"compadd() { print -r -- \"compadd $*\"; }\nsource " + script + "\nwords=(" + strings.Join(quoted, " ") + ")\nCURRENT=" +
			strconv.Itoa(len(tc.words)) + "\n_lumina\n"
		out, err := exec.Command(zsh, "-f", "-c", prog).CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", tc.words, err, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%q: output lacks %q:\n%s", tc.words, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(string(out), w) {
				t.Errorf("%q: output has %q:\n%s", tc.words, w, out)
			}
		}
	}
}
