"""An agent's own settings, changed by its admins (the settings groups and their service), and the rate
limits of its API."""
