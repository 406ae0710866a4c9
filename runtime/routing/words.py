"""Words of a message as the cheap check compares them (R6): pure functions, Spanish and English.

`normalise` turns chat text and voice transcripts into one form: lower case, accents folded
("módem" = "modem"), punctuation gone, and the fillers of speech ("eh", "este", "o sea", "mmm")
dropped where they are fillers. `terms` gives the content words of a text as stems (stop words
out, a plural folded, a prefix kept), so "routers" meets "router" and "devolución" meets
"devolver". `stems` gives, for each content word, its Snowball stems in Spanish and in English
(a word of either language meets the tool's words: "cámaras" → "camar", "tickets" → "ticket").
"""

import re
import threading
import unicodedata
from functools import lru_cache

import snowballstemmer

# Fillers of spoken Spanish and English. "este"/"pues"/"bueno" are fillers only where speech
# hesitates (the start of the message, or next to another filler), so they are handled apart.
FILLERS = {"eh", "ehh", "ehhh", "em", "emm", "mm", "mmm", "hmm", "hm", "uh", "um", "umm", "ah", "aja", "aha", "erm"}
SOFT_FILLERS = {"este", "pues", "bueno", "osea", "o sea", "like", "so", "well", "okay so", "ok so", "si", "aló", "alo"}
STOPWORDS = set("""
a al algo alguien algun alguna alguno algunos ante antes asi aun aunque bien cada como con contra cual cuales
cuando de del desde donde dos el ella ellas ello ellos en entre era eres es esa esas ese eso esos esta estaba
estan estar estas este esto estos estoy fue fueron ha hace hacer han has hasta hay he la las le les lo los mas
me mi mis mucho muy nada ni no nos nosotros nuestro o otra otro para pero poco por porque puede puedo que quien
se sea ser si sin sobre solo son soy su sus tambien tan te tengo tiene ti tu tus un una uno unos usted ustedes
ya yo eh este pues bueno favor hola quiero quisiera queria quería necesito necesitaria podria podrias puedes
saber gustaria me mi por tienen tienes hay dame dime ver
about after all also am an and any are as at be been but by can could did do does for from get got had has have
he her here him his how i if in into is it its just me my no not now of on or our out please she so some than
that the their them then there these they this to too up us was we were what when where which who why will with
would you your want wanna need like know tell let lets hi
""".split())
_WORD = re.compile(r"[a-z0-9ñ]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def fold(text: str) -> str:
    """Lower case without accents (ñ kept: "año" is not "ano")."""
    text = text.lower().replace("ñ", "\0")
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text.replace("\0", "ñ")


def tokens(text: str) -> list[str]:
    return _WORD.findall(fold(text))


def normalise(text: str) -> str:
    """The message as words, fillers of speech removed: "eh este ¿tienen routers?" → "tienen routers"."""
    words = [w for w in tokens(text) if w not in FILLERS]
    joined = " ".join(words)
    # Soft fillers only at the start (where a speaker hesitates), repeatedly: "bueno este pues quería…"
    changed = True
    while changed and words:
        changed = False
        for filler in sorted(SOFT_FILLERS, key=len, reverse=True):
            if joined == filler:
                break
            if joined.startswith(filler + " "):
                joined = joined[len(filler) + 1:]
                changed = True
                break
    return joined


def stem(word: str) -> str:
    """A cheap stem good enough to compare: plural folded, then the first five letters."""
    if len(word) > 4 and word.endswith("es") and not word.endswith(("ces", "ses")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s"):
        word = word[:-1]
    return word[:5]


def terms(text: str) -> list[str]:
    """Content stems of `text`, in order (repeats kept: the caller decides how to count)."""
    return [stem(w) for w in tokens(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


_SPANISH = snowballstemmer.stemmer("spanish")
_ENGLISH = snowballstemmer.stemmer("english")
_stem_lock = threading.Lock()  # Snowball stemmer objects keep state between calls


@lru_cache(maxsize=20000)
def word_stems(word: str) -> frozenset[str]:
    """The Spanish and the English Snowball stem of one folded word (often the same)."""
    with _stem_lock:
        return frozenset((_SPANISH.stemWord(word), _ENGLISH.stemWord(word)))


def stems(text: str) -> list[frozenset[str]]:
    """Content words of `text`, each as its set of stems, without repeats, in order."""
    seen = []
    for word in tokens(text):
        if word not in STOPWORDS and (len(word) > 1 or word.isdigit()):
            found = word_stems(word)
            if found not in seen:
                seen.append(found)
    return seen


def name_words(name: str) -> str:
    """`consultar_caso` → "consultar caso"; `Events_3_FindEvents` → "Events Find Events"."""
    spaced = _CAMEL.sub(" ", name.replace("__", " ").replace("_", " ").replace(".", " "))
    return " ".join(w for w in spaced.split() if not w.isdigit())
