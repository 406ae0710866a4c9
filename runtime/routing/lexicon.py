"""The actions a request names, in Spanish and English (R6): language knowledge that lets word overlap
meet a tool whose verb is written in the other language ("cancel" = "cancelar"), whatever the business.

A word of a message counts for the lexical signal as every word of its group (`expand`); only the
message's words are expanded, the tools' words stay their own (`candidates._stems`). A translation
keeps the word's own ambiguity, no more. The groups of one business's things this file once held
("ticket" = "caso", "link" = "enlace", written for the support desk and the BFCL catalog) went in
issue 18: with them, the domains they were not written for scored worse, left out one at a time
(top-1 0.656 against 0.670, recall@3 0.841 against 0.857; datasets/README.md).
"""

from functools import lru_cache

from runtime.routing.words import word_stems

ACTION_GROUPS = [
    "consultar check",
    "buscar search",
    "abrir open",
    "agendar schedule",
    "cancelar cancel",
    "cambiar change",
    "actualizar update",
    "transferir transfer",
    "generar generate",
]


@lru_cache(maxsize=1)
def _groups() -> dict[frozenset[str], frozenset[str]]:
    """A word's stems (Spanish and English, `words.word_stems`) → the stems of its whole group. Keyed by
    both stems together: "case" shares the Spanish stem "cas" with "caso" but not its English one."""
    found = {}
    for group in ACTION_GROUPS:
        words = [word_stems(word) for word in group.split()]
        union = frozenset().union(*words)
        for word in words:
            found[word] = found.get(word, frozenset()) | union
    return found


def expand(words: list[frozenset[str]]) -> list[frozenset[str]]:
    """Each word's stems with those of its group's words (a word of no group stays as it is)."""
    groups = _groups()
    return [groups.get(word, word) | word for word in words]
