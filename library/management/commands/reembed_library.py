"""manage.py reembed_library: after EMBEDDING_BACKEND changed, embeds the library with the new model
(docs/selection.md, "Embedding backends"). Until it is done the select endpoint refuses (503)."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from library import embeddings
from library.formatting import count
from library.serving.active_set import clear_cache


class Command(BaseCommand):
    help = (
        "Embeds every servable procedure version (ACTIVE, APPROVED, CANDIDATE) that has no vector of the "
        "configured EMBEDDING_BACKEND yet, in committed batches: stopped, it resumes where it stopped."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=256, help="versions per committed batch (256)")
        parser.add_argument(
            "--check", action="store_true", help="only report how many versions are pending; exit 1 if any are"
        )

    def handle(self, *args, **options):
        key = embeddings.model_key()
        pending = embeddings.reembed_pending().count()
        if options["check"]:
            self.stdout.write(f"{count(pending, 'versions')} pending for {key}")
            if pending:
                raise SystemExit(1)
            return
        self.stdout.write(f"Embedding {count(pending, 'versions')} with {key}")
        started = time.monotonic()

        def progress(done: int, total: int) -> None:
            elapsed = time.monotonic() - started
            self.stdout.write(f"  {done}/{total} ({done / max(elapsed, 1e-9):.1f} versions/s)")
            self.stdout.flush()

        done = embeddings.reembed_library(batch_size=options["batch_size"], progress=progress)
        clear_cache()
        self.stdout.write(f"Done: {count(done, 'versions')} embedded with {key} in {time.monotonic() - started:.1f} s")
