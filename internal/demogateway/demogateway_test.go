package demogateway

import (
	"slices"
	"testing"
)

func TestHermesWords(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"gateway"}, nil},
		{[]string{"gateway", "run", "-token", "x"}, []string{"-token", "x"}},
		{[]string{"-p", "work", "gateway", "restart"}, nil},
		{[]string{"--profile=work", "gateway", "-home", "/h"}, []string{"-home", "/h"}},
		{[]string{"-exit-after", "1s"}, []string{"-exit-after", "1s"}},
		{[]string{"-p"}, nil},
	}
	for _, tt := range tests {
		if got := hermesWords(tt.in); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("hermesWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
