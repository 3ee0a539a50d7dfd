package passbook

import "testing"

// The values are Kafka's own murmur2 test vectors (clients' UtilsTest).
func TestMurmur2_KafkaVectors(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		if got := murmur2([]byte(tc.key)); got != tc.want {
			t.Errorf("murmur2(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

func TestValidTopicName(t *testing.T) {
	for _, name := range []string{"orders", "a.b_c-d", "X1"} {
		if err := ValidTopicName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "../x", "a/b", "has space", "ünïcode", string(make([]byte, 250))} {
		if err := ValidTopicName(name); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
}
