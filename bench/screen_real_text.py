"""The policy screen (library/policy/rules.py) on real text nobody on this project wrote: how many texts
get a finding. Every finding on this text is a false positive unless reading it shows an attack, so
a change to the screen's lexicons or frames is checked here before it lands (docs/safety.md).

The texts (public_data/ in the repository, or SHARED_DATA_DIR; README there), each cut into sentences or lines:

- `tau2`: the tau2-bench airline and retail task instructions (reason for the call, what the
  customer knows and does not know, how they behave);
- `tau-system`: the airline policy the tau-bench agent was given (its system prompt), line by line;
- `tau-user`, `tau-agent`: what the customers and the GPT-4o agent said in the 200 airline sessions;
- `swe-task`: the SWE-bench Django sessions' task prompt (the PR description and the instructions
  to the agent), line by line;
- `swe-thought`, `swe-command`: what the coding agent thought and the shell command it ran, for
  each step of the 231 sessions;
- with --outputs also `tau-tool` (the tools' JSON results) and `swe-output` (the commands' output),
  which are mostly data and code;
- with --locales also `po-<lang>`: the translations (msgstr) of the installed packages' gettext
  catalogues (Django's admin, auth and contrib apps, django-guardian …) in the screen's languages
  other than English, the only real text here in Chinese and Japanese: interface strings about
  permissions, passwords, deleting, superusers and approvals, written by the projects' translators.

    PYTHONPATH=clients/python:. .venv/bin/python bench/screen_real_text.py [--show] [--outputs]
        [--locales] [--save FILE] [--against FILE]

--show lists every text with a finding (source, categories, excerpt, text); --save writes the
findings as JSON Lines; --against FILE lists only the findings that FILE (an earlier --save, e.g.
of main) does not have: the new findings a change brings, each to be read."""

from __future__ import annotations

import argparse
import json
import re
import sys
import sysconfig
import tarfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "clients" / "python")]

from library.policy.rules import screen_text  # noqa: E402
from public_data import data_root  # noqa: E402


def _data_dir() -> Path:
    return data_root()


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(`#*-])")
_FENCE = re.compile(r"```(?:bash|sh)\n(.*?)```", re.DOTALL)
LONGEST = 2000  # characters: longer units (file dumps, tracebacks) are cut, they are data not steps


def sentences(text: str) -> Iterator[str]:
    """The lines of `text`, each cut into sentences; blank ones dropped."""
    for line in text.splitlines():
        for sentence in _SENTENCE_END.split(line.strip()):
            if sentence.strip():
                yield sentence.strip()[:LONGEST]


def tau2_texts(data: Path) -> Iterator[tuple[str, str]]:
    for name in ("tau2_airline_tasks.json", "tau2_retail_tasks.json"):
        for task in json.loads((data / "taubench" / name).read_text()):
            instructions = (task.get("user_scenario") or {}).get("instructions") or {}
            for key in ("reason_for_call", "known_info", "unknown_info", "task_instructions"):
                for sentence in sentences(str(instructions.get(key) or "")):
                    yield "tau2", sentence


def taubench_texts(data: Path, *, outputs: bool) -> Iterator[tuple[str, str]]:
    for session in json.loads((data / "taubench" / "gpt-4o-airline.json").read_text()):
        for message in session["traj"]:
            role, content = message.get("role"), message.get("content") or ""
            source = {"system": "tau-system", "user": "tau-user", "assistant": "tau-agent", "tool": "tau-tool"}.get(
                role
            )
            if source == "tau-tool" and not outputs:
                continue
            if source:
                for sentence in sentences(content):
                    yield source, sentence


def swebench_texts(data: Path, *, outputs: bool) -> Iterator[tuple[str, str]]:
    with tarfile.open(data / "swebench" / "gemini-3-pro-django-trajs.tar.gz", "r:*") as archive:
        for member in archive:
            if not member.name.endswith(".traj.json"):
                continue
            messages = json.load(archive.extractfile(member))["messages"]
            for index, message in enumerate(messages):
                role, content = message.get("role"), message.get("content") or ""
                if role in {"system"} or (role == "user" and index == 1):
                    yield from (("swe-task", sentence) for sentence in sentences(content))
                elif role == "assistant":
                    commands = _FENCE.findall(content)
                    yield from (("swe-thought", sentence) for sentence in sentences(_FENCE.sub(" ", content)))
                    yield from (("swe-command", command.strip()[:LONGEST]) for command in commands if command.strip())
                elif role == "user" and outputs:
                    yield "swe-output", content[:LONGEST]


# gettext locale directories of the screen's languages other than English
LOCALES = {"de": "de", "fr": "fr", "es": "es", "zh_Hans": "zh", "zh_Hant": "zh", "ja": "ja", "ru": "ru"}
_PO_STRING = re.compile(r'^(msgid|msgid_plural|msgstr(?:\[\d+\])?)?\s*"(.*)"\s*$')
_PO_PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%[sd]|\{\w*\}")


def po_messages(text: str) -> Iterator[str]:
    """The translations (msgstr) of a .po file's text, the header and untranslated ones left out."""
    key, value, entry = "", [], {}
    for line in [*text.splitlines(), ""]:
        match = _PO_STRING.match(line.strip())
        if match and match.group(1):
            if key:
                entry[key] = "".join(value)
            key, value = match.group(1), [match.group(2)]
        elif match:
            value.append(match.group(2))
        else:
            if key:
                entry[key] = "".join(value)
            if entry.get("msgid"):
                for name, message in entry.items():
                    if name.startswith("msgstr") and message:
                        yield (
                            message.encode("latin-1", "backslashreplace").decode("unicode_escape").replace("\\n", "\n")
                        )
            key, value, entry = "", [], {}


def locale_texts() -> Iterator[tuple[str, str]]:
    """The installed packages' translations into the screen's languages, sentence by sentence, with
    %(name)s placeholders taken out."""
    packages = Path(sysconfig.get_paths()["purelib"])
    for directory, lang in LOCALES.items():
        for path in sorted(packages.glob(f"**/locale/{directory}/LC_MESSAGES/*.po")):
            for message in po_messages(path.read_text(encoding="utf-8", errors="replace")):
                for sentence in sentences(_PO_PLACEHOLDER.sub("X", message)):
                    yield f"po-{lang}", sentence


def real_texts(*, outputs: bool = False, locales: bool = False) -> list[tuple[str, str]]:
    """(source, text) pairs, each pair once, in a stable order."""
    data = _data_dir()
    seen: set[tuple[str, str]] = set()
    texts = []
    extra = locale_texts() if locales else ()
    for pair in (
        *tau2_texts(data),
        *taubench_texts(data, outputs=outputs),
        *swebench_texts(data, outputs=outputs),
        *extra,
    ):
        if pair not in seen:
            seen.add(pair)
            texts.append(pair)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="list every text with a finding")
    parser.add_argument("--outputs", action="store_true", help="also the tools' and commands' output")
    parser.add_argument("--locales", action="store_true", help="also the installed packages' translations (po-<lang>)")
    parser.add_argument("--save", type=Path, help="write the findings as JSON Lines")
    parser.add_argument("--against", type=Path, help="list only findings this earlier --save lacks")
    args = parser.parse_args()

    texts = real_texts(outputs=args.outputs, locales=args.locales)
    started = time.perf_counter()
    found = []
    for source, text in texts:
        findings = screen_text(text, "text")
        if findings:
            found.append(
                {
                    "source": source,
                    "categories": sorted({f.category for f in findings}),
                    "excerpt": findings[0].excerpt,
                    "text": text,
                }
            )
    elapsed = time.perf_counter() - started

    totals, flagged = Counter(source for source, _ in texts), Counter(row["source"] for row in found)
    for source in totals:
        print(f"{source:12} {flagged[source]:5} of {totals[source]:6} texts have a finding")
    print(
        f"{'all':12} {len(found):5} of {len(texts):6} texts have a finding; "
        f"{1000 * elapsed / max(1, len(texts)):.2f} ms per text"
    )
    by_category = Counter(category for row in found for category in row["categories"])
    if by_category:
        print("by category:", ", ".join(f"{category} {count}" for category, count in by_category.most_common()))

    listed = found
    if args.against:
        before = {(row["source"], row["text"]) for row in map(json.loads, args.against.read_text().splitlines()) if row}
        listed = [row for row in found if (row["source"], row["text"]) not in before]
        print(f"new against {args.against}: {len(listed)}")
    if args.show or args.against:
        for row in listed:
            print(f"\n[{row['source']}] {', '.join(row['categories'])}: …{row['excerpt']}…\n    {row['text'][:400]}")
    if args.save:
        args.save.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in found))


if __name__ == "__main__":
    main()
