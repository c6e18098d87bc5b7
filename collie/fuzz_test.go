package collie

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseSpace checks that ParseSpace never panics, that every error
// wraps ErrSpace, and that every space it accepts only draws and mutates
// workloads it validates itself.
func FuzzParseSpace(f *testing.F) {
	for _, name := range []string{"space.yaml", "app-rpc.yaml", "lumina-events.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "examples", "collie", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "max_traffics: 1\n", "qp_types: [UD]\nmtu: {values: [1024]}\n",
		"wq_depth: {min: 1, max: 8}\nwqe_batch: {min: 1, max: 128}\n",
		"max_traffics: 1\nmessage_sizes: {min: 1024, max: 8192, max_len: 1}\nevents: {slots: 2, messages: 3}\n",
		"num_qpz: {min: 1}\n", "directions: [sideways]\n", "qp_types: [XRC]\n", "qp_types: [UD]\nopcodes: [READ]\n",
		"num_qps: {min: 10, max: 5}\n", "wq_depth: {min: 1, max: 4}\nwqe_batch: {min: 8, max: 16}\n",
		"events: {slots: 1, types: [explode]}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sp, err := ParseSpace(data)
		if err != nil {
			if sp != nil {
				t.Fatalf("ParseSpace returned a Space and an error")
			}
			if !errors.Is(err, ErrSpace) {
				t.Fatalf("ParseSpace error %v does not wrap ErrSpace", err)
			}
			return
		}
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 8 {
			w := sp.Random(r)
			if err := sp.Validate(w); err != nil {
				t.Fatalf("draw %d: Validate(%s) = %v", i, w.Key(), err)
			}
			m := sp.Mutate(r, w)
			if err := sp.Validate(m); err != nil {
				t.Fatalf("draw %d: Validate(Mutate(%s) = %s) = %v", i, w.Key(), m.Key(), err)
			}
		}
	})
}
