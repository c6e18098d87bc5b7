//go:build !verbs || !linux || !cgo

package verbs

import (
	"errors"
	"strings"
	"testing"

	"github.com/netlumina/lumina/generator"
)

func TestOpenNotBuilt(t *testing.T) {
	d, err := Open(Config{})
	if d != nil || !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "go build -tags verbs") {
		t.Fatalf("Open = %v, %v, want ErrNotBuilt", d, err)
	}
	var dev generator.Device = (*Device)(nil)
	if err := dev.NewQP().Connect(generator.ConnectAttr{}); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("stub QP Connect = %v", err)
	}
}
