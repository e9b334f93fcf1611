// Package layers holds the tests of the module's shape: dependencies
// point one way (cmd → supervisor → lockstore → procstate → platform),
// every package has one exported API on every OS, and no non-test file
// grows past 500 lines.
package layers
