"""The skeleton miner. The pure core: skeletons (what a skeleton is, the first reading), groups (the
groups tested, the gate's choice), within (followers vs the other sessions within tasks), evidence
(feature contrast, backtest, argument and condition tests), arguments (which values a step may
name), drafting (the draft and the run report), evidence_statistics (the estimators). mining_runs
feeds the core from the database (coding_runs for a coding agent's family miner); model_draft lets a
model word a draft (off by default)."""
