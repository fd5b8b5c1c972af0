package main

import (
	"bufio"
	"strings"
	"testing"
)

func TestReadYes(t *testing.T) {
	for in, want := range map[string]bool{"y\n": true, "YES\n": true, " yes \n": true, "\n": false, "n\n": false, "yep\n": false, "": false, "y": true} {
		got, err := readYes(bufio.NewReader(strings.NewReader(in)))
		if err != nil || got != want {
			t.Errorf("readYes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
