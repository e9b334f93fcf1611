package main

import (
	"github.com/spf13/cobra"

	"github.com/hermes-agent/hermes-supervisor/internal/demogateway"
)

func newDemoGatewayCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:                demogateway.Command + " [flags]",
		Short:              "Run the built-in demo gateway (for demos and tests)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := demogateway.Main(args, g.getenv, cmd.ErrOrStderr()); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
}
