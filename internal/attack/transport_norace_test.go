//go:build !race

package attack

const raceBuild = false
