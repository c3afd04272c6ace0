"""The demo data of `make demo` and `manage.py seed_demo`: users, agent, procedures, sessions, cases."""
