package ci

import "testing"

func TestParseSizeAndDate(t *testing.T) {
	for in, want := range map[string]int64{"20GiB": 20 << 30, "500MB": 500e6, "1.5Ki": 1536, "7": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1GB", "3 parsecs"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q): no error", bad)
		}
	}
	if d, err := ParseDate("2024-06-01"); err != nil || d.Format("2006-01-02") != "2024-06-01" {
		t.Errorf("ParseDate = %v, %v", d, err)
	}
	if _, err := ParseDate("June"); err == nil {
		t.Error("ParseDate(June): no error")
	}
}
