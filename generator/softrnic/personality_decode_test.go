package softrnic

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Issue #35, point 5: "12 us" was reported as `unknown unit " \xc2\xb5s"`
// (the us → µs rewrite, then time's byte escapes). The message quotes the
// text as written and names the units.
func TestParseDuration(t *testing.T) {
	const units = "want a duration: a number and a unit (ns, us, µs, ms, s, m, h) with no space between, such as 1.1us, 150us or 0.2s; got "
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "1.1us", want: 1100 * time.Nanosecond},
		{in: "3µs", want: 3 * time.Microsecond},
		{in: "150us", want: 150 * time.Microsecond},
		{in: "0.537s", want: 537 * time.Millisecond},
		{in: "0", want: 0},
		{in: "-1s", want: -time.Second}, // Validate refuses it, at its key
		{in: "12 us", wantErr: units + `"12 us"; did you mean "12us"?`},
		{in: "12 µs", wantErr: units + `"12 µs"; did you mean "12µs"?`},
		{in: "12", wantErr: units + `"12"`},
		{in: "12 parsecs", wantErr: units + `"12 parsecs"`},
		{in: "soon", wantErr: units + `"soon"`},
		{in: "123456789012345678901234567890123456789µs and more", wantErr: units + `"123456789012345678901234567890123456789"...`}, // cut before the µ, not inside it
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("ParseDuration(%q) = %v, %v; want error %s", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

// Issue #35, point 5: every problem in a personality file is reported at
// FILE:LINE:COL of its node, all of them, sorted.
func TestParsePersonalityErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       string
	}{
		{"typo key", "base: cx5\nnak-reaction-dealy: 12us\n",
			`f.yaml:2:1: unknown key "nak-reaction-dealy" at top level`},
		{"duration", "base: cx5\nname: fw2\nnak-reaction-delay: 12 us\n",
			`f.yaml:3:21: nak-reaction-delay: want a duration: a number and a unit (ns, us, µs, ms, s, m, h) with no space between, such as 1.1us, 150us or 0.2s; got "12 us"; did you mean "12us"?`},
		{"base", "base: cx9\n", `f.yaml:1:7: base: unknown personality "cx9": want "cx4", "cx5", "cx6" or "spec"`},
		{"scope", "cnp-scope: per-prot\n", `f.yaml:1:12: cnp-scope: want "per-qp", "per-port", "per-dest-ip" or "per-ip-pair", got "per-prot"`},
		{"number", "line-rate-gbps: fast\n", `f.yaml:1:17: line-rate-gbps: want a number, got "fast"`},
		{"uint8", "min-timeout-exp: 300\n", `f.yaml:1:18: min-timeout-exp: want an integer 0..255, got "300"`},
		{"range at key", "name: x\nline-rate-gbps: 0\n", `f.yaml:2:17: line-rate-gbps 0 out of range (0, 1600]`},
		{"negative at key", "qp-start-jitter: 1us\nstorm-watchdog: -1ms\n", `f.yaml:2:17: storm-watchdog: -1ms is negative; delays must not be negative`},
		{"thresholds at first key given", "rx-buffer-bytes: 1000\n", `f.yaml:1:18: rx thresholds: want rx-xon-bytes (86048) <= rx-xoff-bytes (95264) <= rx-buffer-bytes (1000)`},
		{"nested", "adaptive:\n  - {intervals: [1ms, 2 ms], max-retrys: 3}\n",
			"f.yaml:2:23: intervals[1]: want a duration: a number and a unit (ns, us, µs, ms, s, m, h) with no space between, such as 1.1us, 150us or 0.2s; got \"2 ms\"; did you mean \"2ms\"?\n" +
				`f.yaml:2:30: unknown key "max-retrys" in adaptive[0]`},
		{"base not a name", "base: [cx5]\n", `f.yaml:1:7: base: want "cx4", "cx5", "cx6" or "spec", got a list`},
		{"stage", "adaptive:\n  - {max-retries: 3}\n", `f.yaml:2:5: adaptive[0]: needs intervals or t-tr-factors, and max-retries >= 0`},
		{"duplicate", "storm-watchdog: 1ms\nstorm-watchdog: 2ms\n", `f.yaml:2:1: duplicate key "storm-watchdog" at top level (first at 1:1)`},
		{"odp duration", "base: cx4\nodp-page-fault: 500 us\n",
			`f.yaml:2:17: odp-page-fault: want a duration: a number and a unit (ns, us, µs, ms, s, m, h) with no space between, such as 1.1us, 150us or 0.2s; got "500 us"; did you mean "500us"?`},
		{"odp negative", "odp-rnr-nak-delay: 140us\nodp-dup-read-delay: -80us\n", `f.yaml:2:21: odp-dup-read-delay: -80µs is negative; delays must not be negative`},
		{"rnr factor type", "rnr-wait-factor: thrice\n", `f.yaml:1:18: rnr-wait-factor: want a number, got "thrice"`},
		{"rnr factor range", "name: x\nrnr-wait-factor: 1001\n", `f.yaml:2:18: rnr-wait-factor 1001 out of range [0, 4]`},
		{"rnr factor negative", "rnr-wait-factor: -0.5\n", `f.yaml:1:18: rnr-wait-factor -0.5 out of range [0, 4]`},
		{"rnr factor NaN", "rnr-wait-factor: .nan\n", `f.yaml:1:18: rnr-wait-factor NaN out of range [0, 4]`},
		{"odp page fault range", "odp-page-fault: 1h\n", `f.yaml:1:17: odp-page-fault 1h0m0s out of range: at most 10ms`},
		{"odp nak delay range", "odp-rnr-nak-delay: 11ms\n", `f.yaml:1:20: odp-rnr-nak-delay 11ms out of range: at most 10ms`},
		{"odp dup delay range", "odp-dup-read-delay: 10.001ms\n", `f.yaml:1:21: odp-dup-read-delay 10.001ms out of range: at most 10ms`},
		{"not a mapping", "- cx5\n", `f.yaml:1:1: a personality file: want a mapping, got a list`},
		{"syntax", "base: [cx5\n", `f.yaml:1:1: YAML syntax error: did not find expected ',' or ']'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePersonality("f.yaml", []byte(tc.data))
			if err == nil || err.Error() != tc.want {
				t.Errorf("ParsePersonality(%q) error =\n%v\nwant\n%s", tc.data, err, tc.want)
			}
			if err != nil && !errors.Is(err, ErrInvalidPersonality) {
				t.Errorf("ParsePersonality(%q) error %v is not ErrInvalidPersonality", tc.data, err)
			}
		})
	}
	// base with no value is the default, spec.
	if p, err := ParsePersonality("f.yaml", []byte("base:\nline-rate-gbps: 40\n")); err != nil || p.Name != "spec" || p.LineRateGbps != 40 {
		t.Errorf("ParsePersonality(base: null) = %+v, %v; want spec at 40 Gb/s", p, err)
	}
	// What the file gives, a merge key included, lands on top of its base.
	p, err := ParsePersonality("dir/fw2.yaml", []byte("x: &d {nak-reaction-delay: 20us}\nbase: cx5\n<<: *d\nqp-start-jitter: 0s\n"))
	if err == nil {
		t.Fatalf("unknown key x accepted: %+v", p)
	}
	p, err = ParsePersonality("dir/fw2.yaml", []byte("base: cx5\n<<: {nak-reaction-delay: 20us, cnp-scope: per-qp}\ncnp-scope: per-port\n"))
	if err != nil || p.Name != "cx5" || time.Duration(p.NakReactionDelay) != 20*time.Microsecond || p.CNPScope != CNPPerPort || p.TxPipelinePackets != 70 {
		t.Errorf("ParsePersonality(merge) = %+v, %v; want name cx5 (the base's), nak-reaction-delay 20µs, cnp-scope per-port, cx5's 70 tx-pipeline-packets", p, err)
	}
}

// TestPersonalityDoc checks that docs/personality.md's key tables list
// every key, and the builtins' values, as the code has them.
func TestPersonalityDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/personality.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{} // key → cells after it
	for _, l := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[strings.Trim(cells[0], "`")] = cells[1:]
	}
	format := func(key string, v reflect.Value) string {
		switch x := v.Interface().(type) {
		case Duration:
			return time.Duration(x).String()
		case []AdaptiveStage:
			if len(x) == 0 {
				return "none"
			}
			return fmt.Sprintf("%d stages", len(x))
		}
		if key == "description" {
			return "text"
		}
		return fmt.Sprint(v.Interface())
	}
	keys, idx := yamlKeys(reflect.TypeFor[Personality]())
	for _, k := range keys {
		cells, ok := rows[k]
		if !ok {
			t.Errorf("docs/personality.md has no row for key %q", k)
			continue
		}
		for i, name := range []string{"spec", "cx4", "cx5", "cx6"} {
			p, _ := LoadPersonality(name)
			if want := format(k, reflect.ValueOf(p).Field(idx[k])); len(cells) < 6 || cells[1+i] != want {
				t.Errorf("docs/personality.md: %s's %s = %q, want %q", name, k, cells[min(1+i, len(cells)-1)], want)
			}
		}
	}
	stageKeys, _ := yamlKeys(reflect.TypeFor[AdaptiveStage]())
	for _, k := range stageKeys {
		if _, ok := rows[k]; !ok {
			t.Errorf("docs/personality.md has no row for adaptive key %q", k)
		}
	}
	// Every key row of the page is a key.
	for k := range rows {
		if _, ok := idx[k]; !ok && !slices.Contains(stageKeys, k) && !slices.Contains(Personalities(), k) {
			t.Errorf("docs/personality.md documents %q, which is not a key", k)
		}
	}
	// The example is the file it shows, and loads.
	file := "../../examples/personality/cx5-fw2.yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			body = append(body, l)
		}
	}
	if !strings.Contains(string(doc), "```yaml\n"+strings.Join(body, "\n")+"\n```") {
		t.Errorf("docs/personality.md does not show %s as it is:\n%s", file, strings.Join(body, "\n"))
	}
	if p, err := LoadPersonality(file); err != nil || p.Name != "cx5-fw2" || time.Duration(p.NakReactionDelay) != 40*time.Microsecond {
		t.Errorf("LoadPersonality(%s) = %+v, %v", file, p, err)
	}
}
