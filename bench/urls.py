"""The app's URLs plus the comparison views of the benchmarks."""

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

from procmem_site.urls import urlpatterns as app_urlpatterns

_same_size_body: bytes = b""


def trivial(request: HttpRequest) -> JsonResponse:
    """The floor: a JSON view that touches no database."""
    return JsonResponse({"ok": True})


def same_size(request: HttpRequest) -> HttpResponse:
    """Static bytes as large as the active set (set by BENCH_SAME_SIZE_FILE): what moving the body
    costs without any of the work."""
    global _same_size_body
    if not _same_size_body:
        import os

        with open(os.environ["BENCH_SAME_SIZE_FILE"], "rb") as handle:
            _same_size_body = handle.read()
    return HttpResponse(_same_size_body, content_type="application/json")


urlpatterns = [path("bench/trivial", trivial), path("bench/same-size", same_size), *app_urlpatterns]


def embed_only(request: HttpRequest) -> JsonResponse:
    """The floor as the server sees it: embed the task, in the serving process, behind the same
    middleware, and nothing else."""
    from library import embeddings

    vector = embeddings.embed([request.GET.get("task", "")])[0]
    return JsonResponse({"dimensions": int(vector.shape[0])})


urlpatterns.insert(0, path("bench/embed", embed_only))
