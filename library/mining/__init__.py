"""The skeleton miner: the pure core (skeletons), its statistics (statistics), an agent's capture
settings (configuration), and the runs that feed the core from the database (runs)."""
