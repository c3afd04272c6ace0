"""What procmem knows about coding agents: activity classes of shell commands and tool calls, and
their targets generalised to placeholders with a role (pure Python, no Django)."""
