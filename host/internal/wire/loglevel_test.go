package wire

import "testing"

func TestLogRank(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level string
		rank  int
		ok    bool
	}{
		{"debug", 0, true},
		{"warning", 3, true},
		{"emergency", 7, true},
		{"Warning", 0, false},
		{"", 0, false},
	} {
		rank, ok := LogRank(tc.level)
		if rank != tc.rank || ok != tc.ok {
			t.Errorf("LogRank(%q) = %d, %v; want %d, %v", tc.level, rank, ok, tc.rank, tc.ok)
		}
	}
}
