// Package attack holds the daemon's attack suite: tests that start the real
// oriond and try, as the security model (docs/security.md) says an attacker would, to
// make it write outside its allowed roots, widen its own reach, or stop
// serving. Each test is named for the finding it guards against.
//
// The suite talks raw JSON-RPC over the socket (rpc_test.go) rather than
// through the client package: malformed frames are part of the attack, and
// internal packages never import the client.
package attack
