package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// terminalConfirm asks on the terminal whether to go on, default no; it is
// nil when stdin or stderr is not a terminal: nobody can be asked, and a
// live rollout then needs --yes.
func terminalConfirm(cmd *cobra.Command) func(preview string) (bool, error) {
	if !term.IsTerminal(int(os.Stdin.Fd())) || !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	return func(preview string) (bool, error) {
		fmt.Fprint(cmd.OutOrStdout(), preview)
		fmt.Fprint(os.Stderr, "Go on and roll out this cluster? [y/N] ")
		answer := make(chan bool, 1)
		go func() {
			yes, _ := readYes(bufio.NewReader(os.Stdin))
			answer <- yes
		}()
		select {
		case yes := <-answer:
			return yes, nil
		case <-cmd.Context().Done():
			// Ctrl-C at the prompt is a no.
			return false, cmd.Context().Err()
		}
	}
}

// readYes reads one answer: y or yes (any case) is yes, anything else,
// an empty line included, is no.
func readYes(r *bufio.Reader) (bool, error) {
	line, err := r.ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}
