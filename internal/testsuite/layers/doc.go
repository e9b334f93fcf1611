// Package layers holds the test that keeps the module's dependencies
// pointing one way: cmd → supervisor → lockstore → procstate → platform.
package layers
