// Package protocol holds the wire contract between oriond and its clients:
// JSON-RPC method names, params and results, notifications, application
// error codes and the WritePlanTool_begin function definition.
//
// It does no I/O. The daemon and every client import it, so a change here is
// a change to the public protocol: add fields, never rename them.
package protocol

//go:generate go run ../internal/cmd/protots -out ../client/node/src/protocol.ts

// Version is the protocol version reported by daemon.status. It changes only
// when an existing method changes incompatibly.
const Version = 1
