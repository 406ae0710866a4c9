"""The cheap check's cascade and its index off the turn path (R6, P4): a clear-cut message is
decided by the cheap signals (USE, stems, verb kinds) without the costly e5 encoder; an unsure
one reads e5 too. The catalog's vectors are built by a Celery task queued after a sync; a turn
that finds them missing proceeds unrouted at once instead of waiting."""

import pickle

import pytest
from django.core.cache import cache

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.routing import candidates, encoder
from runtime.routing.candidates import catalog_index
from runtime.routing.gate import check
from runtime.routing.index_store import QUEUED_KEY, _key, live_cards, ready_index
from runtime.routing.route import route_message
from runtime.tasks import routing_index_build
from tests.runtime.runtime_support import register_soporte
from tests.runtime.test_routing_check import CARDS, CASE, OPEN_CASE, conversation
from tests.support.mcp_servers import serve_asgi


def e5_calls_for(*texts):
    index = catalog_index(CARDS)
    check(index, conversation("necesito ayuda con algo"))  # loads both encoders and the small-talk phrases
    before = encoder.calls["e5"]
    result = check(index, conversation(*texts))
    return encoder.calls["e5"] - before, result


@pytest.mark.parametrize("text, tool", [("Hola, buenas tardes", None),
                                        ("quiero abrir un caso, mi lavadora no enciende", OPEN_CASE),
                                        ("cuál es el estado de mi caso 12345", CASE)])
def test_a_clear_cut_message_does_not_read_e5(text, tool):
    """R6, P4: small talk, a plain question no tool is for and a plain request are decided by the cheap
    signals alone."""
    calls, result = e5_calls_for(text)
    assert calls == 0
    assert result.needs_tool == (tool is not None)
    if tool:
        assert result.best == tool


@pytest.mark.parametrize("texts", [("necesito ayuda con algo",), ("tengo una pregunta sobre mi cuenta",),
                                   ("busco un router", "Tenemos 2. ¿Algo más?", "¿y en rojo?")])
def test_an_unsure_message_reads_e5(texts):
    """R6: a message the cheap gate is not sure about, or one that leans on the previous ones, reads e5."""
    calls, _result = e5_calls_for(*texts)
    assert calls >= 1


@pytest.fixture
def soporte_synced(alpha):
    with serve_asgi(build_app(SupportDesk())) as url:
        register_soporte(alpha, url)
        with alpha.schema():
            cache.delete_many([_key(card) for card in live_cards()] + [QUEUED_KEY])
        # and the indexes this process assembled already (a test of the same catalog before this one)
        with candidates._cache_lock:
            candidates._cache.clear()
        yield alpha


def test_a_turn_does_not_wait_for_the_index_and_the_task_builds_it(soporte_synced):
    """R6, P4: without the catalog's vectors the message goes unrouted at once (no encoder call)
    and a build is queued once; after the task, the same message is checked against the index."""
    with soporte_synced.schema():
        cards = live_cards()
        before = dict(encoder.calls)
        route, record = route_message(cards=cards, conversation=[{"role": "user", "content": "busco un router"}],
                                      endpoint=None)
        assert route is None and record["gate"]["reason"] == "index not ready"
        assert encoder.calls == before
        assert cache.get(QUEUED_KEY) is not None  # the build was queued, and will not be queued again meanwhile
        assert ready_index(cards) is None

        routing_index_build()
        index = ready_index(cards)
        assert index is not None and [card.name for card in index.cards] == [card.name for card in cards]
        assert check(index, [{"role": "user", "content": "¿tienen routers disponibles?"}]).best == "soporte__buscar_producto"
        assert cache.get(QUEUED_KEY) is None


@pytest.mark.parametrize("routing", [True, False])
def test_a_sync_that_changes_the_catalog_queues_the_index_build_only_where_routing_is_on(
        alpha, settings, django_capture_on_commit_callbacks, routing):
    """R6: a new catalog version queues `routing_index_build` once its transaction commits (the
    tools half signals it; the runtime listens); where routing is off nothing is queued."""
    settings.ASIXTO_ROUTING = routing
    with serve_asgi(build_app(SupportDesk())) as url, django_capture_on_commit_callbacks(execute=False) as callbacks:
        register_soporte(alpha, url)
    queued = [callback for callback in callbacks
              if getattr(getattr(callback, "__self__", None), "name", None) == routing_index_build.name]
    assert len(queued) == (1 if routing else 0)


def test_stored_vectors_are_data_and_a_planted_pickle_is_built_again(soporte_synced, tmp_path):
    """Issue 19 H1: a tool's stored vectors are numpy arrays read with pickles refused; a pickle
    planted in their key runs nothing, reads as missing, and the next build replaces it."""
    from runtime.routing import candidates
    from tests.test_cache import Planted

    marker = tmp_path / "ran"
    with soporte_synced.schema():
        cards = live_cards()
        routing_index_build()
        raw = cache._cache.get_client(write=True)
        raw.set(cache.make_and_validate_key(_key(cards[0])), pickle.dumps(Planted(str(marker))))
        cache.set(_key(cards[1]), pickle.dumps(Planted(str(marker))))  # as bytes the serializer keeps
        with candidates._cache_lock:
            candidates._cache.clear()
        cache.delete(QUEUED_KEY)
        assert ready_index(cards) is None and not marker.exists()
        routing_index_build()
        assert ready_index(cards) is not None and not marker.exists()
