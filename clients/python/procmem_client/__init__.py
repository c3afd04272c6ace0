"""The agent-side procmem client: no Django, Celery, psycopg or torch.

- `procmem_client.rendering`: THE renderer (the text an agent's instruction receives);
- `procmem_client.ranking`: THE ranker (pure Python + numpy; the model only with the extra);
- `procmem_client.client`: the HTTP client and the Google ADK instruction provider.
"""

from .client import ProcmemClient, ProcmemError, session_record
from .rendering import estimate_tokens, render_block, render_procedure, render_procedures

__all__ = ["ProcmemClient", "ProcmemError", "estimate_tokens", "render_block", "render_procedure", "render_procedures", "session_record"]
