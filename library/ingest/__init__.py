"""Session ingestion: the input formats, the streaming file reader, and the store service."""
