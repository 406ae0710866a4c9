"""The routing check's encodings are kept by their texts (P4): a message read again (a follow-up
ranks the previous request again; "hola" recurs across customers) runs neither encoder again, and
is decided exactly as the first time."""

from runtime.routing import encoder
from runtime.routing.candidates import catalog_index
from runtime.routing.gate import check
from tests.runtime.test_routing_check import CARDS, conversation


class Counted:
    """An encoder model (the third-party object), counting the calls that reach it."""

    def __init__(self, model, names):
        self.model, self.calls = model, 0
        for name in names:
            setattr(self, name, self._counting(getattr(model, name)))

    def _counting(self, method):
        def counted(*args, **kwargs):
            self.calls += 1
            return method(*args, **kwargs)

        return counted


def test_a_message_checked_again_is_not_encoded_again_and_is_decided_alike(monkeypatch):
    """P4: the second check of the same conversation reaches neither USE nor e5 (an unsure message
    reads both the first time) and gives the same decision, candidates and scores."""
    index = catalog_index(CARDS)
    check(index, conversation("Hola"))  # loads both encoders and the small-talk phrases
    use, e5 = Counted(encoder._load("use"), ["encode"]), Counted(encoder._load("e5"), ["query", "passage"])
    monkeypatch.setitem(encoder._models, "use", use)
    monkeypatch.setitem(encoder._models, "e5", e5)
    texts = ("busco un router", "Tenemos 2. ¿Algo más?", "tengo una pregunta sobre mi cuenta")
    first = check(index, conversation(*texts))
    read_first = (use.calls, e5.calls)
    again = check(index, conversation(*texts))
    assert read_first[0] >= 1 and read_first[1] >= 1  # it was read with both
    assert (use.calls, e5.calls) == read_first  # not again
    assert again == first


def test_with_the_cache_off_every_check_encodes(monkeypatch, settings):
    settings.ASIXTO_ENCODING_CACHE = 0
    index = catalog_index(CARDS)
    check(index, conversation("Hola"))
    use = Counted(encoder._load("use"), ["encode"])
    monkeypatch.setitem(encoder._models, "use", use)
    check(index, conversation("hola, quisiera saber el estado de mi caso"))
    once = use.calls
    check(index, conversation("hola, quisiera saber el estado de mi caso"))
    assert once >= 1 and use.calls == 2 * once
