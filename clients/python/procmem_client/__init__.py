"""The agent-side procmem client: no Django, Celery, psycopg or torch.

- `procmem_client.rendering`: THE renderer (the text an agent's instruction receives);
- `procmem_client.ranking`: THE ranker (pure Python + numpy; the model only with the extra);
- `procmem_client.client`: the HTTP client, the Google ADK instruction provider and recall for coding agents;
- `procmem_client.protocol`: the API's requests and answers as the sync and async clients both speak them;
- `procmem_client.coding`: coding procedures' roles, producer → consumer graph, exact terms, recall pointer.
"""

from .client import ProcmemClient, ProcmemError, RecallSession, session_record
from .rendering import estimate_tokens, render_block, render_procedure, render_procedures

__all__ = [
    "ProcmemClient",
    "ProcmemError",
    "RecallSession",
    "estimate_tokens",
    "render_block",
    "render_procedure",
    "render_procedures",
    "session_record",
]
