"""Agent Skills into procmem: reading skill folders and archives safely (sources), mapping a
SKILL.md to a version's content (mapping), importing through the write gate (importing), and
whether a description makes the skill trigger (trigger)."""
