//go:build !race

package daemon

const poisonServed = false
