#!/bin/sh
# The Verify command of the reviewed procedure django.migration_added v2 (see SKILL.md).
python manage.py makemigrations --check --dry-run && pytest -q
