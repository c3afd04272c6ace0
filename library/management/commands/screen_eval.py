"""manage.py screen_eval: the policy screen's recall and false-positive rate on the labelled set
(library/policy/screen_set.py, docs/safety.md), per split and language; --show lists what it missed and
what it flagged wrongly."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from library.policy.rules import POLICY_VERSION
from library.policy.screen_set import LANGUAGES, SPLITS, load_screen_set, measure_screen


class Command(BaseCommand):
    help = "Measures the policy screen on the labelled set of harmful paraphrases and benign near-misses."

    def add_arguments(self, parser):
        parser.add_argument(
            "--set",
            default="",
            help="a JSON Lines file of {id, lang, label, category, split, text} (default: the whole set)",
        )
        parser.add_argument(
            "--split", default="", help="the split of a file whose rows name none (a set measured on its own)"
        )
        parser.add_argument(
            "--show", action="store_true", help="list the harmful texts missed and the benign ones flagged"
        )

    def handle(self, *args, **options):
        try:
            rows = load_screen_set(Path(options["set"]) if options["set"] else None, split=options["split"] or None)
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        tallies, missed, flagged = measure_screen(rows)
        self.stdout.write(f"policy {POLICY_VERSION}, {len(rows)} texts")
        self.stdout.write(f"{'':12} {'recall':>16} {'false positives':>18}")
        splits = [split for split in SPLITS if split in tallies]
        for key in (
            "all",
            "development",
            *splits,
            *LANGUAGES,
            *(f"{split}/{lang}" for split in splits for lang in LANGUAGES),
        ):
            tally = tallies.get(key)
            if tally is None:
                continue
            self.stdout.write(
                f"{key:12} {tally.caught:>4}/{tally.harmful:<4} {tally.recall:5.2f}   {tally.flagged:>4}/{tally.benign:<4} {tally.false_positive_rate:5.2f}"
            )
        if options["show"]:
            for row in missed:
                self.stdout.write(f"missed  {row['id']:8} {row['category']:24} {row['text']}")
            for row in flagged:
                self.stdout.write(f"flagged {row['id']:8} {','.join(row['found']):24} {row['text']}")
