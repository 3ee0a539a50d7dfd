package thousands

import "testing"

func TestInt(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {59_999, "59,999"},
		{100_000, "100,000"}, {1_234_567, "1,234,567"}, {-1000, "-1,000"}, {-999, "-999"},
	} {
		if got := Int(tc.n); got != tc.want {
			t.Errorf("Int(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := Float(5294681.6); got != "5,294,682" {
		t.Errorf("Float = %q", got)
	}
}
