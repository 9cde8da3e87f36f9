// Package main is the smallest guest BuildWasm builds in its test.
package main

func main() {}
