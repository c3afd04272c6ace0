"""What an agent is served: the active set (load-time checks, ETag, selection), the sets the other
environments and running rollouts serve (environment_sets), the served set as Agent Skills (skills),
and the measurements of selection on labelled queries (selection_eval) and of whether a skill's
description alone makes it chosen (skill_trigger)."""
