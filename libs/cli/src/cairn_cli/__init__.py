"""The `cairn` command line: every SDK operation, operator commands, workflows, the Claude Code hook."""
