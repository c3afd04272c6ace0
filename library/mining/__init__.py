"""The skeleton miner: the pure core (skeletons) and the runs that feed it from the database."""
