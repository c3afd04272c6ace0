"""Search across procedures, versions (candidates among them) and comments.

PostgreSQL: full-text search on the stored, GIN-indexed documents (library/migrations/0006 and
reviews/migrations/0003 fill them by trigger). Words go through `websearch_to_tsquery('english')`
(stemmed, stop words dropped, "quoted phrases" and -exclusions as a search engine has them), so
"refunds over the limit" finds refund.over_limit. Identifiers in the query — dotted or underscored
names (`refund.over_limit`, `order_id`) and camelCase tool names (`createApproval`) — must match that
exact name: the documents carry every identifier of their text as one lexeme, and the query asks for
that lexeme as it is (`'createapproval'::tsquery`), so `createApproval` does not match
`createApprovalDraft`, and `refund.over_limit` does not match `refund.under_limit`. Ranked with
`ts_rank` (a query of names and ids only: newest first, every match holding them alike); the
page's rows are highlighted with `ts_headline`. The count stops at 1,000 ("1,000+"): pages go
that far, and a search that finds more is refined rather than paged through.

SQLite (the demo): every word must occur as a substring (case-insensitive, stop words and a plural
s dropped) and every identifier as a whole name somewhere in the id, the content or a comment; no
stemming beyond that, no ranking (newest first). Good enough for a demo's hundred versions.

Highlighting is escaped: the database marks matches with two private-use characters, the text is
HTML-escaped, and only then do the marks become <mark> elements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank
from django.db import connection
from django.db.models import F, Func, Q, QuerySet, TextField, Value
from django.db.models.functions import Cast, Concat
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from library.models import Agent, ProcedureVersion, Status

from .access import of_agents
from .models import Comment
from .selectors import QueueFilters, apply_filters

MAX_QUERY_CHARS = 200
MAX_TERMS = 12
# Comments matched per search whose versions join the results: enough for any real discussion, and
# a bound that keeps the version query an index scan.
MAX_COMMENT_MATCHES = 1000
# library/migrations/0006_review_day.py: how identifiers are stored in the documents
IDENTIFIER_LEXEME_PREFIX = "id:"
MARK_START, MARK_STOP = "\ue000", "\ue001"
IDENTIFIER_RE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)+|[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)$")
# Punctuation people put around a name they paste: `createApproval`, "refund.over_limit", (order_id),
_WRAPPING = "`'\"()[]{}<>,;:!?"
SQLITE_STOP_WORDS = frozenset(
    "a an and are as at be by for from has in is it of on or that the to was were with".split()
)


@dataclass(frozen=True)
class SearchTerms:
    text: str  # what the user typed, trimmed
    words: str  # the rest after identifiers are taken out, for the full-text query
    identifiers: tuple[str, ...]

    @property
    def is_empty(self) -> bool:
        return not (self.words.strip() or self.identifiers)


def parse_query(raw: str) -> SearchTerms:
    text = " ".join((raw or "").split())[:MAX_QUERY_CHARS]
    words, identifiers = [], []
    for token in text.split(" ")[: MAX_TERMS * 2]:
        bare = token.strip(_WRAPPING).rstrip(".")
        if bare and IDENTIFIER_RE.match(bare):
            if bare not in identifiers:
                identifiers.append(bare)
        elif token:
            words.append(token)
    return SearchTerms(text, " ".join(words), tuple(identifiers[:MAX_TERMS]))


class ExactLexeme(SearchQuery):
    """A tsquery of one lexeme exactly as given (no parsing, which would split `refund.over_limit`
    into `refund.over` and `limit`)."""

    def __init__(self, lexeme: str):
        super().__init__(lexeme)
        self.lexeme = lexeme

    def as_sql(self, compiler, connection, template=None, **extra_context):
        return "quote_literal(%s)::tsquery", [self.lexeme]


def _tsquery(terms: SearchTerms):
    query = None
    if terms.words.strip():
        query = SearchQuery(terms.words, search_type="websearch", config="english")
    for identifier in terms.identifiers:
        exact = ExactLexeme(IDENTIFIER_LEXEME_PREFIX + identifier.lower())
        query = exact if query is None else query & exact
    return query


def _sqlite_words(terms: SearchTerms) -> list[str]:
    """The words without stop words, a plural s dropped ("refunds" finds "refund")."""
    words = []
    for word in terms.words.split():
        word = word.strip(_WRAPPING).lstrip("-").lower()
        if word and word not in SQLITE_STOP_WORDS:
            words.append(word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word)
    return words


def _identifier_pattern(identifier: str) -> str:
    """The identifier as a whole name: not inside a longer name or dotted id."""
    return rf"(^|[^A-Za-z0-9_.]){re.escape(identifier)}($|[^A-Za-z0-9_])"


def _sqlite_condition(terms: SearchTerms) -> Q:
    """Every word as a substring, every identifier as a whole name (Django gives SQLite a REGEXP
    function), somewhere in the id, the content or a comment."""
    condition = Q()
    for identifier in terms.identifiers:
        pattern = _identifier_pattern(identifier)
        condition &= (
            Q(procedure__key__iexact=identifier)
            | Q(applies_when__iregex=pattern)
            | Q(content_text__iregex=pattern)
            | Q(pk__in=Comment.objects.filter(body__iregex=pattern).values("version_id"))
        )
    for word in _sqlite_words(terms):
        condition &= (
            Q(procedure__key__icontains=word)
            | Q(applies_when__icontains=word)
            | Q(content_text__icontains=word)
            | Q(pk__in=Comment.objects.filter(body__icontains=word).values("version_id"))
        )
    return condition


@dataclass(frozen=True)
class SearchFilters:
    queue: QueueFilters
    status: str = ""  # "" any, or a Status value

    @classmethod
    def from_query(cls, query) -> SearchFilters:
        status = query.get("status", "")
        return cls(QueueFilters.from_query(query), status if status in Status.values else "")

    def as_query(self, **override) -> dict[str, str]:
        values = self.queue.as_query()
        if self.status:
            values["status"] = self.status
        values.update({k: str(v) for k, v in override.items() if v not in (None, "")})
        return {k: v for k, v in values.items() if v}


@dataclass
class SearchHit:
    version: ProcedureVersion
    applies_when: SafeString
    steps: SafeString
    comments: list[tuple[Comment, SafeString]] = field(default_factory=list)


def matching_versions(user, terms: SearchTerms, filters: SearchFilters, *, visible_agents: QuerySet[Agent]):
    """(queryset of matching version ids in result order, the tsquery or None). Visible versions
    only; the queue's filters apply as on the queue."""
    qs = of_agents(ProcedureVersion.objects.all(), visible_agents)
    if filters.status:
        qs = qs.filter(status=filters.status)
    if filters.queue.agent:
        qs = qs.filter(procedure__agent__name=filters.queue.agent)
    if filters.queue.intent:
        qs = qs.filter(procedure__intent__name=filters.queue.intent)
    qs = apply_filters(qs, user, filters.queue)
    if terms.is_empty:
        return qs.none().values_list("pk", flat=True), None
    if connection.vendor != "postgresql":
        content = Concat(
            Cast("steps", TextField()),
            Value(" "),
            Cast("required_tools", TextField()),
            Value(" "),
            Cast("forbidden_actions", TextField()),
            output_field=TextField(),
        )
        qs = qs.annotate(content_text=content).filter(_sqlite_condition(terms))
        return qs.order_by("-created_at", "-id").values_list("pk", flat=True), None
    query = _tsquery(terms)
    # Versions whose comments match, as ids: an OR with a subquery would make PostgreSQL scan every
    # version; an OR with a short id list keeps both sides on their indexes.
    via_comments = list(
        of_agents(Comment.objects.filter(search_vector=query), visible_agents, through="version__procedure__agent")
        .order_by("-id")
        .values_list("version_id", flat=True)[:MAX_COMMENT_MATCHES]
    )
    condition = Q(search_vector=query)
    if via_comments:
        condition |= Q(pk__in=sorted(set(via_comments)))
    qs = qs.filter(condition)
    if not terms.words.strip():
        # Names and ids only: every match holds each of them, exactly, so none ranks above another
        # (ts_rank would score each the same); newest first, which an index on (created_at, id)
        # serves without scoring every match.
        return qs.order_by("-created_at", "-id").values_list("pk", flat=True), query
    qs = qs.annotate(rank=SearchRank(F("search_vector"), query))
    return qs.order_by("-rank", "-created_at", "-id").values_list("pk", flat=True), query


class JsonText(Func):
    """The text of a JSON list of strings, space-joined (library/migrations/0006_review_day.py)."""

    function = "procmem_json_text"
    output_field = TextField()


def highlight(text: str, identifiers: tuple[str, ...] = (), words: tuple[str, ...] = ()) -> SafeString:
    """`text` (which may already carry match marks from ts_headline) with identifiers and words
    marked, HTML-escaped, then the marks turned into <mark>."""
    text = text or ""
    for needle in identifiers:
        text = re.sub(
            rf"(?<![A-Za-z0-9_.]){re.escape(needle)}(?![A-Za-z0-9_])",
            lambda m: MARK_START + m.group(0) + MARK_STOP,
            text,
            flags=re.IGNORECASE,
        )
    for needle in words:
        text = re.sub(re.escape(needle), lambda m: MARK_START + m.group(0) + MARK_STOP, text, flags=re.IGNORECASE)
    return mark_safe(escape(text).replace(MARK_START, "<mark>").replace(MARK_STOP, "</mark>"))


HIT_FIELDS = (
    "number",
    "status",
    "quarantined",
    "applies_when",
    "steps",
    "procedure__key",
    "procedure__agent__name",
    "procedure__intent__name",
)


def search_hits(pks: list[int], terms: SearchTerms, query) -> list[SearchHit]:
    """The page's rows with highlighted appliesWhen, steps and matching comments (two queries)."""
    rows = (
        ProcedureVersion.objects.filter(pk__in=pks)
        .select_related("procedure__agent", "procedure__intent")
        # what a hit shows (templates/reviews/search.html): building 25 whole versions and agents
        # decoded some 350 JSON fields a page
        .only(*HIT_FIELDS)
        .order_by()
    )
    comments = Comment.objects.filter(version_id__in=pks).select_related("author", "thread").order_by("id")
    words: tuple[str, ...] = ()
    if query is not None:
        options = {"config": "english", "start_sel": MARK_START, "stop_sel": MARK_STOP, "highlight_all": False}
        rows = rows.annotate(
            hl_when=SearchHeadline("applies_when", query, max_words=40, min_words=20, **options),
            hl_steps=SearchHeadline(JsonText("steps"), query, max_fragments=2, fragment_delimiter=" … ", **options),
        )
        comments = comments.filter(search_vector=query).annotate(
            hl_body=SearchHeadline("body", query, max_fragments=2, fragment_delimiter=" … ", **options)
        )
    else:
        words = tuple(_sqlite_words(terms))
        needles = [*terms.identifiers, *words]
        condition = Q()
        for needle in filter(None, needles):
            condition |= Q(body__icontains=needle)
        comments = comments.filter(condition) if needles else comments.none()
    patterns = [re.compile(_identifier_pattern(i), re.IGNORECASE) for i in terms.identifiers]
    by_pk = {}
    for row in rows:
        when = getattr(row, "hl_when", row.applies_when)
        steps = getattr(row, "hl_steps", None)
        # ts_headline cannot see identifiers (they are lexemes of their own): show the steps that
        # name one, numbered, instead of the headline's first words
        named = [
            f"{n}. {step}"
            for n, step in enumerate(row.steps or [], start=1)
            if any(p.search(str(step)) for p in patterns)
        ]
        if named:
            steps = " · ".join(named)
        elif steps is None:
            steps = " · ".join(str(s) for s in row.steps or [])
        by_pk[row.pk] = SearchHit(
            row, highlight(when, terms.identifiers, words), highlight(steps, terms.identifiers, words)
        )
    for comment in comments[: 3 * len(pks)]:
        hit = by_pk.get(comment.version_id)
        if hit is not None and len(hit.comments) < 3:
            hit.comments.append(
                (comment, highlight(getattr(comment, "hl_body", comment.body), terms.identifiers, words))
            )
    return [by_pk[pk] for pk in pks if pk in by_pk]
