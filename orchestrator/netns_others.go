//go:build !linux

package orchestrator

import (
	"context"
	"fmt"

	"github.com/netlumina/lumina/config"
)

// AgentBinary is the lumina executable the netns testbed starts as agents.
var AgentBinary = ""

func runNetns(ctx context.Context, t *config.Test, repeat int, dir string, progress func(string)) (*collected, error) {
	return nil, fmt.Errorf("%w: netns needs Linux", ErrTestbed)
}
