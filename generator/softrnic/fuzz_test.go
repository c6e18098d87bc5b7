package softrnic

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParsePersonality checks that ParsePersonality never panics, that
// every error names the file, and that every personality it accepts is
// valid and survives a Marshal/Parse round trip.
func FuzzParsePersonality(f *testing.F) {
	for _, name := range Personalities() {
		p, err := LoadPersonality(name)
		if err != nil {
			f.Fatal(err)
		}
		b, err := yaml.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add([]byte("base: " + name + "\nname: mine\n"))
	}
	for _, s := range []string{
		"", "base: CX5\nnak-generation-delay: 1.1us\n", "base: nope\n", "line-rate-gbps: 0\n",
		"bogus: 1\n", "adaptive: [{intervals: [], max-retries: 1}]\n", "cnp-scope: per-port\n",
		"nak-generation-delay: -1s\n", "min-timeout-exp: 40\n",
		"base: cx4\nrnr-wait-factor: 2.5\nodp-dup-read-delay: 1ms\n", "rnr-wait-factor: .nan\n", "odp-page-fault: 500 us\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePersonality("f.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml:") {
				t.Fatalf("ParsePersonality error %q does not name the file", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted personality is invalid: %v", err)
		}
		b, err := yaml.Marshal(p)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		q, err := ParsePersonality("g.yaml", b)
		if err != nil {
			t.Fatalf("ParsePersonality of a marshalled personality: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip differs:\n%+v\n%+v\n%s", p, q, b)
		}
	})
}
