// Package testlab builds test laboratories out of Linux network namespaces
// for lumina's tests: NewRemote stands in for a remote testbed on this
// machine, with namespaces as the machines, a management bridge between
// them and this one, and real `lumina agent` / `lumina injector` processes
// that the orchestrator reaches over TCP with TLS and a token, exactly as it
// would real hosts.
//
// Everything a lab creates is removed when the test ends: its processes by
// PID (SIGTERM, then SIGKILL after 5 s) and its namespaces (with their
// interfaces). A lab needs root and iproute2; NewRemote skips the test with
// an actionable reason otherwise (internal/testutil.RequireNetns).
//
// Labs in different test processes (go test runs packages in parallel) get
// different management subnets: each claims 10.254.N.0/24 with a lock file
// in the temporary directory that it holds for its lifetime, so two labs
// never route the same addresses.
package testlab
