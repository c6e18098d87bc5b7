package report

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
	"github.com/netlumina/lumina/roce"
	"github.com/netlumina/lumina/trace"
)

// TestSeqCollectorAddDecoded: AddDecoded of the frames the decoder read
// collects what Add collects, also once the plots are full (it parses
// only the frames it keeps).
func TestSeqCollectorAddDecoded(t *testing.T) {
	conns := tracetest.Conns(2, 10, model.VerbWrite)
	script := kindsWrite + " 1/0 1/1 1/A1 1/2c 1/2 1/A2 1/Ce 3 A5#4"
	for _, full := range []bool{false, true} {
		table := model.NewTable(conns)
		dec := model.Decoder{Parser: roce.Parser{MirrorPort: roce.DefaultMirrorPort}, MTU: tracetest.MTU, Mirror: true, Table: table}
		c, ref := NewSeqCollector(table, roce.DefaultMirrorPort), NewSeqCollector(table, roce.DefaultMirrorPort)
		tr, err := trace.NewReader(bytes.NewReader(tracetest.Build(t, conns, script, tracetest.Options{})))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			tp, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if full && i == 10 {
				c.full, ref.full = true, true
			}
			var p model.Pkt
			if dec.Decode(&tp, &p) {
				c.AddDecoded(&tp, &p, &dec, true)
				ref.Add(&tp, &p, true)
			}
		}
		if got, want := c.Plots(), ref.Plots(); !reflect.DeepEqual(got, want) {
			t.Errorf("full %v: AddDecoded plots differ from Add's:\n%+v\n%+v", full, got, want)
		}
	}
}
