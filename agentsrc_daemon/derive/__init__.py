"""Derivation: reads, edits and commands from tool calls (pure), and project roots."""
