"""The agent-facing JSON API under /api/v1/: its URLs, views, the sessions endpoint, the OpenAPI
document, and the bearer tokens that authenticate agents."""
