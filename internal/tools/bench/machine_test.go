//go:build linux

package main

import (
	"strings"
	"testing"
)

// TestHostSpeed checks that the host's speed is measured and said.
func TestHostSpeed(t *testing.T) {
	h := measureHostSpeed()
	if h.create <= 0 || h.unlink <= 0 || h.syscall <= 0 {
		t.Fatalf("measureHostSpeed() = %+v, want every cost measured", h)
	}
	if s := h.String(); !strings.Contains(s, "an empty file created in") {
		t.Errorf("String() = %q", s)
	}
	if s := (hostSpeed{}).String(); s != "not measured" {
		t.Errorf("zero hostSpeed says %q, want \"not measured\"", s)
	}
}
