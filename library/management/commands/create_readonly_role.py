"""Creates (or updates) the PostgreSQL role the agent API reads through: LOGIN, SELECT on the
tables the agent API reads and nothing else.

    manage.py create_readonly_role procmem_reader --password-env PROCMEM_READER_PASSWORD

Run it as the role that owns the tables (the one DATABASE_URL connects as), after `migrate`, and
again after migrations that add a table the agent API reads. The grants (`readonly_grants`) are an
allow-list: the served tables in full, and of `library_agent` and `auth_user` only the columns
the API reads (an agent's settings but not its model key; a user's id and user name, not the
password hash or e-mail). Sessions, tokens, the audit trail, raw agent sessions, lock-out records
and every table added later stay unreadable; an INSERT, UPDATE or DELETE through
READONLY_DATABASE_URL fails with "permission denied". The role also defaults to read-only
transactions (a second guard; the grants are the real one, since a session may change that setting).
"""

from __future__ import annotations

import os
import re

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connections, transaction
from psycopg import sql

from library.models import (
    Agent,
    CodingFileIndex,
    Intent,
    LoadRefusal,
    Namespace,
    Procedure,
    ProcedureRelease,
    ProcedureVersion,
    Rollout,
    VersionEmbedding,
)

ROLE_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def readonly_grants() -> list[tuple[str, list[str] | None]]:
    """(table, columns or None for every column) the agent API reads through the "readonly" alias:
    library/serving/active_set.py, library/serving/task_files.py, library/environments.py, library/selection.py and
    library/selectors.py. Built from the models, so a
    renamed table or column follows."""

    user = get_user_model()
    agent_columns = ["id", "name", "tools", "procedural_memory_enabled", "injection_cap", "namespace"]
    return [
        (Agent._meta.db_table, [Agent._meta.get_field(f).column for f in agent_columns]),
        (Namespace._meta.db_table, [Namespace._meta.get_field(f).column for f in ("id", "name")]),
        (Procedure._meta.db_table, None),
        (Intent._meta.db_table, None),
        (ProcedureVersion._meta.db_table, None),
        (LoadRefusal._meta.db_table, None),
        (VersionEmbedding._meta.db_table, None),
        # what a coding agent's sessions saw, per repository: source paths and identifiers only (file-index, taskFiles)
        (CodingFileIndex._meta.db_table, None),
        # what other environments and running rollouts serve (library/environments.py), not who decided or why
        (ProcedureRelease._meta.db_table, ["id", "procedure_id", "environment", "version_id"]),
        (Rollout._meta.db_table, ["id", "procedure_id", "version_id", "control_version_id", "share", "state"]),
        (user._meta.db_table, [user._meta.pk.column, user._meta.get_field(user.USERNAME_FIELD).column]),
    ]


def readonly_role_statements(
    *, role: str, password: str | None, database: str, schema: str, owner: str, exists: bool
) -> list[tuple[str, list]]:
    """The statements, with identifiers quoted by psycopg and the password passed as a literal."""

    r, db, sch, own = sql.Identifier(role), sql.Identifier(database), sql.Identifier(schema), sql.Identifier(owner)
    statements = []
    if exists:
        if password is not None:
            statements.append(sql.SQL("ALTER ROLE {} WITH LOGIN PASSWORD {}").format(r, sql.Literal(password)))
    else:
        statements.append(
            sql.SQL(
                "CREATE ROLE {} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION PASSWORD {}"
            ).format(r, sql.Literal(password) if password is not None else sql.SQL("NULL"))
        )
    statements += [
        sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(r),
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, r),
        sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sch, r),
        sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(sch, r),
        sql.SQL("REVOKE ALL ON ALL SEQUENCES IN SCHEMA {} FROM {}").format(sch, r),
        # earlier versions of this command granted every future table; take that back
        sql.SQL("ALTER DEFAULT PRIVILEGES FOR ROLE {} IN SCHEMA {} REVOKE SELECT ON TABLES FROM {}").format(
            own, sch, r
        ),
    ]
    for table, columns in readonly_grants():
        target = sql.SQL("{}.{}").format(sch, sql.Identifier(table))
        if columns is None:
            statements.append(sql.SQL("GRANT SELECT ON {} TO {}").format(target, r))
        else:
            statements.append(
                sql.SQL("GRANT SELECT ({}) ON {} TO {}").format(
                    sql.SQL(", ").join(map(sql.Identifier, columns)), target, r
                )
            )
    return statements


class Command(BaseCommand):
    help = "Creates or updates a PostgreSQL role with SELECT-only grants for READONLY_DATABASE_URL."

    def add_arguments(self, parser):
        parser.add_argument("role", help="role name, e.g. procmem_reader")
        parser.add_argument("--password-env", help="name of an environment variable holding the password")
        parser.add_argument("--no-password", action="store_true", help="no password (trust or certificate auth)")
        parser.add_argument("--database", default="default", help="the Django alias to connect through (an owner)")
        parser.add_argument("--schema", default="public")
        parser.add_argument("--print-sql", action="store_true", help="print the statements instead of running them")

    def handle(self, *args, role, password_env, no_password, database, schema, print_sql, **options):
        if not ROLE_RE.match(role):
            raise CommandError(f"role {role!r}: use lower-case letters, digits and _ (at most 63)")
        connection = connections[database]
        if connection.vendor != "postgresql":
            raise CommandError("create_readonly_role needs PostgreSQL (with SQLite there is no role to create)")
        if password_env:
            password = os.environ.get(password_env)
            if not password:
                raise CommandError(f"the environment variable {password_env} is empty or unset")
        elif no_password:
            password = None
        else:
            raise CommandError("give --password-env VAR (the password never goes on the command line) or --no-password")
        with transaction.atomic(using=database), connection.cursor() as cursor:
            cursor.execute("SELECT current_database(), current_user")
            dbname, owner = cursor.fetchone()
            cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
            exists = cursor.fetchone() is not None
            statements = readonly_role_statements(
                role=role, password=password, database=dbname, schema=schema, owner=owner, exists=exists
            )
            raw = connection.connection
            for statement in statements:
                text = statement.as_string(raw)
                if print_sql:
                    self.stdout.write(re.sub(r"PASSWORD '.*'", "PASSWORD '…'", text) + ";")
                else:
                    cursor.execute(text)
            if print_sql:
                transaction.set_rollback(True, using=database)
                return
        self.stdout.write(
            f"{'Updated' if exists else 'Created'} role {role}: SELECT on the {len(readonly_grants())} tables the agent API "
            f"reads in {dbname}.{schema}, nothing else. Set READONLY_DATABASE_URL=postgres://{role}:…@host:port/{dbname}"
        )
