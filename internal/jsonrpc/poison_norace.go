//go:build !race

package jsonrpc

const poisonBodies = false
