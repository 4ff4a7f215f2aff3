// A Go program for the symbolizer tests: two functions the compiler may not inline, whose
// runtime entry addresses it prints as "name 0xADDR" lines before "ready". Then it reads stdin
// until it closes; given the argument "burn", it also runs both functions meanwhile.
package main

import (
	"fmt"
	"os"
	"reflect"
)

var sink uint64

//go:noinline
func burnA(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += uint64(i) * 3
	}
	return s
}

//go:noinline
func burnB(n int) uint64 {
	var s uint64 = 1
	for i := 0; i < n; i++ {
		s ^= uint64(i) * 7
	}
	return s
}

func main() {
	fmt.Printf("main.burnA %#x\n", reflect.ValueOf(burnA).Pointer())
	fmt.Printf("main.burnB %#x\n", reflect.ValueOf(burnB).Pointer())
	fmt.Println("ready")
	if len(os.Args) > 1 && os.Args[1] == "burn" {
		go func() {
			for {
				sink += burnA(1000) + burnB(1000)
			}
		}()
	}
	buf := make([]byte, 64)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return
		}
	}
}
