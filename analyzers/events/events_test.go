package events

import (
	"fmt"
	"github.com/netlumina/lumina/roce"
	"slices"
	"testing"

	"github.com/netlumina/lumina/analyzers/internal/tracetest"
	"github.com/netlumina/lumina/analyzers/model"
)

func TestEvents(t *testing.T) {
	ev := func(dir, typ string, psn uint32, f func(*model.Event)) model.Event {
		var et roce.Event
		if err := et.UnmarshalText([]byte(typ)); err != nil {
			t.Fatal(err)
		}
		e := model.Event{Conn: 0, Direction: dir, PSN: psn, Iter: 1, Type: et}
		if f != nil {
			f(&e)
		}
		return e
	}
	tests := []struct {
		name   string
		script string
		events []model.Event
		u      int64
		want   []string
		res    model.Verdict
	}{
		{name: "measurements only", script: "0 1 @5000 2d 3 4 2o 5 5+ 5+",
			want: []string{"data delay 2 #1 hold 5000 pred 1 ", "data reorder 2 #1 hold 5300 depth 2 pred 1 ", "data duplicate 5 #1 copies 2 "},
			res:  model.Skip},
		{name: "as configured", script: "0 1 @5000 2d 3 4 2o 5 5+ 5+ A5 A5+",
			events: []model.Event{
				ev("", "delay", 2, func(e *model.Event) { e.DelayNs = 5000 }),
				ev("", "reorder", 2, func(e *model.Event) { e.Overtakers = 2 }),
				ev("", "duplicate", 5, func(e *model.Event) { e.Copies = 2 }),
				ev("response", "duplicate", 5, func(e *model.Event) { e.Copies = 1 })},
			want: []string{"data delay 2 #1 hold 5000 pred 1 pass", "data reorder 2 #1 hold 5300 depth 2 pred 1 pass",
				"data duplicate 5 #1 copies 2 pass", "response duplicate 5 #1 copies 1 pass"},
			res: model.Pass},
		{name: "delay short, within U", script: "0 @4950 1d",
			events: []model.Event{ev("", "delay", 1, func(e *model.Event) { e.DelayNs = 5000 })}, u: 100,
			want: []string{"data delay 1 #1 hold 4950 pred 0 inconclusive"}, res: model.Inconclusive},
		{name: "delay short", script: "0 @4000 1d",
			events: []model.Event{ev("", "delay", 1, func(e *model.Event) { e.DelayNs = 5000 })}, u: 100,
			want: []string{"data delay 1 #1 hold 4000 pred 0 fail"}, res: model.Fail},
		{name: "a copy missing", script: "0 0+ 1",
			events: []model.Event{ev("", "duplicate", 0, func(e *model.Event) { e.Copies = 2 })},
			want:   []string{"data duplicate 0 #1 copies 1 fail"}, res: model.Fail},
		{name: "reorder released by max hold", script: "0 2 @20000 1o",
			events: []model.Event{ev("", "reorder", 1, func(e *model.Event) { e.Overtakers = 3; e.MaxHoldNs = 20000 })},
			want:   []string{"data reorder 1 #1 hold 20100 depth 1 pred 0 pass"}, res: model.Pass},
		{name: "reorder too shallow", script: "0 2 1o",
			events: []model.Event{ev("", "reorder", 1, func(e *model.Event) { e.Overtakers = 3; e.MaxHoldNs = 20000 })},
			want:   []string{"data reorder 1 #1 hold 200 depth 1 pred 0 fail"}, res: model.Fail},
		{name: "not configured", script: "0 1d", events: []model.Event{},
			want: []string{"data delay 1 #1 hold 100 pred 0 fail"}, res: model.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conns := tracetest.Conns(1, 0, model.VerbWrite)
			tab, pkts := tracetest.Script(t, conns, tt.script)
			a := New(tab, Options{Events: tt.events, UncertaintyNs: tt.u})
			for i := range pkts {
				a.Observe(&pkts[i])
			}
			r := a.Finish()
			var got []string
			for _, e := range r.Events {
				s := fmt.Sprintf("%s %s %d #%d ", e.Direction, e.Type, e.PSN, e.Occurrence)
				if e.HoldNs != nil {
					s += fmt.Sprintf("hold %d ", *e.HoldNs)
				}
				if e.Depth != nil {
					s += fmt.Sprintf("depth %d ", *e.Depth)
				}
				if e.Copies != nil {
					s += fmt.Sprintf("copies %d ", *e.Copies)
				} else {
					s += fmt.Sprintf("pred %d ", e.PredIndex)
				}
				got = append(got, s+string(e.Verdict))
			}
			if !slices.Equal(got, tt.want) || r.Verdict != tt.res {
				t.Errorf("got %q, verdict %s (%s)\nwant %q, %s", got, r.Verdict, r.Reason, tt.want, tt.res)
			}
		})
	}
}

func TestNoEvents(t *testing.T) {
	conns := tracetest.Conns(1, 0, model.VerbWrite)
	tab, pkts := tracetest.Script(t, conns, "0 1x 2 N1 1 2 A2")
	a := New(tab, Options{})
	for i := range pkts {
		a.Observe(&pkts[i])
	}
	if r := a.Finish(); r.Verdict != "" || r.Events != nil {
		t.Errorf("Finish() = %+v, want the zero Result", r)
	}
}
