//go:build !linux

package orchestrator

import "fmt"

// AgentBinary is the lumina executable the netns testbed starts as agents.
var AgentBinary = ""

func newNetnsBed() (testbed, error) {
	return nil, fmt.Errorf("%w: netns needs Linux", ErrTestbed)
}
