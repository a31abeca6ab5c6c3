// Package main is a small valid program.
package main

import "fmt"

// greet returns a greeting.
func greet(name string) string {
	return fmt.Sprintf("hello, %s", name)
}

func main() {
	fmt.Println(greet("world"))
}
