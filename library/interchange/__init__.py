"""Procedures as files: export and import of an agent's library as JSON files kept under code review
(procedure_files), and the checks that no file can stop an import (file_checks)."""
