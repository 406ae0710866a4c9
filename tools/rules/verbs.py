"""Verb vocabulary shared by the name (C1), annotation (C5) and _meta (C6) rules.

Tool names and `com.asixto/verb` phrases are Spanish or English. Words are
compared without accents ("añadir" == "anadir"), lower-cased.
"""

import re
import unicodedata

# Verbs that change state somewhere. A tool whose name or verb starts with one
# of these cannot honestly declare readOnlyHint: true (C5).
WRITE_VERBS = frozenset(
    """
    crear abrir registrar actualizar modificar cambiar cancelar eliminar borrar
    enviar mover agendar pagar reservar programar reprogramar asignar reasignar
    cerrar anular aprobar rechazar confirmar guardar editar agregar anadir
    insertar subir cobrar facturar reembolsar transferir activar desactivar
    suspender bloquear desbloquear renovar inscribir suscribir desuscribir
    marcar escalar archivar publicar notificar solicitar radicar emitir
    despachar retirar vincular desvincular asociar reiniciar restablecer
    configurar establecer fijar capturar quitar remover completar calificar
    comentar iniciar finalizar terminar procesar ejecutar autorizar
    liberar importar revocar purgar otorgar invitar renombrar fusionar aplicar
    comprar vender pedir liquidar abonar depositar retener descontar
    create add insert open register update modify change edit set cancel delete
    remove erase destroy send post submit move schedule reschedule book reserve
    pay charge refund transfer assign reassign close approve reject confirm save
    upload write put patch activate deactivate suspend block unblock renew
    enroll subscribe unsubscribe mark escalate archive publish notify request
    issue dispatch ship link unlink reset configure start stop finish
    complete process execute run authorize release import purge revoke grant
    invite rename merge apply purchase buy sell void drop wipe terminate toggle commit push
    """.split()
)

# The subset that destroys or undoes something: these should declare
# destructiveHint: true, or the tool is classified one level too low (M7).
DESTRUCTIVE_VERBS = frozenset(
    """
    cancelar eliminar borrar anular quitar remover revocar purgar desvincular
    desactivar desuscribir reembolsar
    cancel delete remove erase destroy purge revoke void drop wipe terminate
    unlink deactivate unsubscribe refund
    """.split()
)

READ_VERBS = frozenset(
    """
    consultar buscar listar obtener ver mostrar verificar validar revisar
    calcular cotizar leer descargar contar comparar recomendar sugerir traer
    conocer rastrear localizar encontrar filtrar estimar simular previsualizar
    averiguar resumir explicar describir identificar detectar analizar
    get list search find fetch read show view lookup look check verify validate
    query count describe calculate quote compare recommend suggest track locate
    estimate preview retrieve browse explore inspect download summarize explain
    identify detect analyze analyse echo
    """.split()
)

# Verbs whose effect depends on what they act on ("convert_time" reads, "convert_lead" writes):
# they lead a name as verbs (C1, C6) but are evidence of neither reading nor writing (C5).
OTHER_VERBS = frozenset(
    """
    convertir traducir formatear generar transformar codificar decodificar devolver imprimir comprimir
    navegar muestrear anotar
    convert translate format parse render generate transform encode decode return print compress
    navigate trigger sample annotate simulate
    """.split()
)

KNOWN_VERBS = WRITE_VERBS | READ_VERBS | OTHER_VERBS

# English verbs that write only with some objects: "open_ticket" opens a case somewhere,
# "open_nodes" (server-memory) only reads them. The Spanish "abrir" always counts as a write
# ("abrir_caso_soporte"); these need the next word to be a record that opening creates.
AMBIGUOUS_WRITE_VERBS = {
    "open": frozenset(
        """
        ticket tickets case cases account accounts issue issues incident incidents request requests
        claim claims order orders dispute disputes complaint complaints pr pull session sessions
        position positions
        """.split()
    ),
}

# Conjunctions that introduce a second action: "buscar_y_reservar_cita".
_CONJUNCTIONS = frozenset({"y", "o", "e", "and", "or", "then", "luego"})

# An unlisted Spanish infinitive ("agendar", "tramitar") is still a verb; the
# minimum length keeps short nouns such as "mar" or "bar" out.
_SPANISH_INFINITIVE = re.compile(r"^[a-z]{2,}(?:ar|er|ir)$")
_CAMEL_OR_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def fold(word: str) -> str:
    """Lower-case and strip accents so "Añadir" and "anadir" compare equal."""
    return _without_accents(word.lower())


def _without_accents(text: str) -> str:
    if text.isascii():
        return text  # NFKD leaves ASCII as it is, and it has no combining marks (P2: most names)
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def name_words(name: str) -> list[str]:
    """Words of a tool name, whether snake_case, kebab-case or camelCase."""
    return [w.lower() for w in _CAMEL_OR_WORD.findall(_without_accents(name))]


def phrase_words(phrase: str) -> list[str]:
    """Words of a free-text phrase such as `com.asixto/verb`."""
    return re.findall(r"[a-z0-9]+", fold(phrase))


def is_verb(word: str) -> bool:
    word = fold(word)
    return word in KNOWN_VERBS or bool(_SPANISH_INFINITIVE.match(word))


def write_verbs(words: list[str]) -> list[str]:
    """The action verbs of `words` (see action_verbs) that change state: an ambiguous one
    (AMBIGUOUS_WRITE_VERBS) only when the word after it is a record it would create."""
    found = []
    for index, word in enumerate(words):
        if not _is_action_position(words, index):
            continue
        if word in AMBIGUOUS_WRITE_VERBS:
            following = words[index + 1] if index + 1 < len(words) else ""
            if following in AMBIGUOUS_WRITE_VERBS[word]:
                found.append(word)
        elif word in WRITE_VERBS:
            found.append(word)
    return found


def action_verbs(words: list[str]) -> list[str]:
    """The first word, the second after a namespace, and any word right after a conjunction.

    Only those positions are taken as actions: later words are the entity, and
    in English many entity nouns are also verbs ("search_book", "get_order").
    """
    return [word for index, word in enumerate(words) if _is_action_position(words, index)]


def _is_action_position(words: list[str], index: int) -> bool:
    if index == 0:
        return True
    # Published servers lead their names with their own ("git_reset", "slack_post_message"): a first
    # word outside the verb vocabulary is a namespace, and the word after it is the action.
    if index == 1 and fold(words[0]) not in KNOWN_VERBS:
        return True
    return words[index - 1] in _CONJUNCTIONS
