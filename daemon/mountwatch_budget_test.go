package daemon

import "testing"

// TestGroupBudgetLeavesHalf: the mount watch holds at most half of the
// user's fanotify groups, so other programs of root's keep the rest
// (fapolicyd or another tracer could otherwise get none), and no more
// than the maxWatched namespaces need.
func TestGroupBudgetLeavesHalf(t *testing.T) {
	for _, tc := range []struct{ limit, want int }{
		{128, 64},     // the kernel's default
		{0, 64},       // not known: the default assumed
		{-1, 64},      // not known
		{1, 0},        // nothing to spare
		{3, 1},        // rounded down
		{100000, 256}, // the groups maxWatched namespaces need
	} {
		if got := groupBudget(tc.limit); got != tc.want {
			t.Errorf("groupBudget(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}
