"""Tool calls written as text (R5): every format models emit is parsed, unknown names are not
executed, and nothing of a call, a thought, a special token or SQL reaches the customer."""

import itertools
import json
import threading

import pytest

from runtime.textcalls import MAX_CALLS, MAX_TEXT, ParsedText, TextCall, clean_reply, parse_text_calls

TOOLS = {
    "crm__buscar_cliente": {
        "type": "object",
        "properties": {
            "nombre": {"type": "string"},
            "limite": {"type": "integer"},
            "activo": {"type": "boolean"},
            "precio_max": {"type": "number"},
            "filtros": {"type": "object"},
            "etiquetas": {"type": "array"},
            "pagina": {"type": ["integer", "null"]},
        },
    },
    "tienda__listar_productos": {"type": "object", "properties": {"categoria": {"type": "string"}}},
    "tienda__crear_pedido": {"type": "object", "properties": {"sku": {"type": "string"}, "cantidad": {"type": "integer"}}},
    # The same unprefixed name on two servers: it must never be guessed.
    "crm__consultar_estado": {},
    "envios__consultar_estado": {},
}

# What clean text can never contain.
MARKERS = ("<tool_call", "</tool_call", "<function=", "</function", "<parameter=", "<|", "<｜", "[TOOL_CALLS]", "<think>", "</think>")


def calls_of(result):
    return [(call.name, call.arguments) for call in result.calls]


def assert_clean(text):
    for marker in MARKERS:
        assert marker.lower() not in text.lower(), (marker, text)


def finishes(function, *args, ceiling=60):
    """Runs `function` in a thread and returns its result; fails only if it hangs past `ceiling`."""
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", function(*args)), daemon=True)
    worker.start()
    worker.join(ceiling)
    assert not worker.is_alive(), "parsing did not finish"
    return box["result"]


# --- Every format ------------------------------------------------------------------------------

FORMATS = [
    # Hermes / Qwen JSON in tags, with text before.
    (
        'Un momento, lo busco.\n<tool_call>\n{"name": "crm__buscar_cliente", "arguments": {"nombre": "Ana"}}\n</tool_call>',
        [("crm__buscar_cliente", {"nombre": "Ana"})],
        "Un momento, lo busco.",
    ),
    # "parameters" instead of "arguments", and arguments as a JSON string.
    (
        '<tool_call>{"name": "tienda__listar_productos", "parameters": {"categoria": "zapatos"}}</tool_call>',
        [("tienda__listar_productos", {"categoria": "zapatos"})],
        "",
    ),
    (
        '<tool_call>{"name": "crm__buscar_cliente", "arguments": "{\\"nombre\\": \\"Luis\\"}"}</tool_call>',
        [("crm__buscar_cliente", {"nombre": "Luis"})],
        "",
    ),
    # OpenAI-shaped object written as text.
    (
        '<tool_call>{"type": "function", "function": {"name": "crm__buscar_cliente", "arguments": "{\\"limite\\": 1}"}}</tool_call>',
        [("crm__buscar_cliente", {"limite": 1})],
        "",
    ),
    # Python-literal dict inside the tags.
    (
        "<tool_call>{'name': 'tienda__crear_pedido', 'arguments': {'sku': 'A-1', 'cantidad': 2}}</tool_call>",
        [("tienda__crear_pedido", {"sku": "A-1", "cantidad": 2})],
        "",
    ),
    # Qwen3-coder XML.
    (
        "<tool_call>\n<function=tienda__crear_pedido>\n<parameter=sku>\nZ-9\n</parameter>\n"
        "<parameter=cantidad>\n3\n</parameter>\n</function>\n</tool_call>",
        [("tienda__crear_pedido", {"sku": "Z-9", "cantidad": 3})],
        "",
    ),
    # <function=NAME>{json}</function> (Llama 3.1 custom format).
    (
        'Reviso el stock. <function=tienda__listar_productos>{"categoria": "botas"}</function>',
        [("tienda__listar_productos", {"categoria": "botas"})],
        "Reviso el stock.",
    ),
    # Llama 3.x python_tag, with "parameters", several separated by ";".
    (
        '<|python_tag|>{"name": "crm__buscar_cliente", "parameters": {"nombre": "Ana"}}; '
        '{"name": "tienda__listar_productos", "parameters": {}}<|eom_id|>',
        [("crm__buscar_cliente", {"nombre": "Ana"}), ("tienda__listar_productos", {})],
        "",
    ),
    (
        '<|python_tag|>{"name": "tienda__listar_productos", "arguments": {"categoria": "x"}}<|eot_id|>',
        [("tienda__listar_productos", {"categoria": "x"})],
        "",
    ),
    # Pythonic (Llama 3.2 / 4).
    (
        '[crm__buscar_cliente(nombre="Ana", limite=2), tienda__listar_productos(categoria="x")]',
        [("crm__buscar_cliente", {"nombre": "Ana", "limite": 2}), ("tienda__listar_productos", {"categoria": "x"})],
        "",
    ),
    (
        'Voy a revisar.\n[tienda__crear_pedido(sku="B-2", cantidad=1)]',
        [("tienda__crear_pedido", {"sku": "B-2", "cantidad": 1})],
        "Voy a revisar.",
    ),
    # A bare JSON object that is the whole message, and a list of them.
    (
        '{"name": "crm__buscar_cliente", "parameters": {"nombre": "Eva"}}',
        [("crm__buscar_cliente", {"nombre": "Eva"})],
        "",
    ),
    (
        '  [{"name": "crm__buscar_cliente", "arguments": {}}, {"name": "tienda__listar_productos", "arguments": {}}]\n',
        [("crm__buscar_cliente", {}), ("tienda__listar_productos", {})],
        "",
    ),
    # Mistral v3 and v11.
    (
        '[TOOL_CALLS][{"name": "tienda__listar_productos", "arguments": {"categoria": "x"}}]</s>',
        [("tienda__listar_productos", {"categoria": "x"})],
        "",
    ),
    (
        '[TOOL_CALLS]tienda__crear_pedido[ARGS]{"sku": "C", "cantidad": 1}[TOOL_CALLS]crm__buscar_cliente[CALL_ID]a1B2c3D4e[ARGS]{}',
        [("tienda__crear_pedido", {"sku": "C", "cantidad": 1}), ("crm__buscar_cliente", {})],
        "",
    ),
    # GLM-4.5 pairs, GLM-4 "name then JSON", and a call with no arguments.
    (
        "<tool_call>crm__buscar_cliente\n<arg_key>nombre</arg_key>\n<arg_value>Ana</arg_value>\n"
        "<arg_key>limite</arg_key>\n<arg_value>4</arg_value>\n</tool_call>",
        [("crm__buscar_cliente", {"nombre": "Ana", "limite": 4})],
        "",
    ),
    ('<tool_call>tienda__listar_productos\n{"categoria": "x"}</tool_call>', [("tienda__listar_productos", {"categoria": "x"})], ""),
    ("<tool_call>tienda__listar_productos\n</tool_call>", [("tienda__listar_productos", {})], ""),
    # DeepSeek V3 and V3.1.
    (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>crm__buscar_cliente\n```json\n"
        '{"nombre": "Ana"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>',
        [("crm__buscar_cliente", {"nombre": "Ana"})],
        "",
    ),
    (
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>crm__buscar_cliente<｜tool▁sep｜>{"limite": 1}<｜tool▁call▁end｜>'
        '<｜tool▁call▁begin｜>tienda__listar_productos<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        [("crm__buscar_cliente", {"limite": 1}), ("tienda__listar_productos", {})],
        "",
    ),
    # gpt-oss (harmony), reasoning channel dropped.
    (
        "<|channel|>analysis<|message|>Need the customer.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.crm__buscar_cliente <|constrain|>json<|message|>{"nombre": "Ana"}<|call|>',
        [("crm__buscar_cliente", {"nombre": "Ana"})],
        "",
    ),
    # Phi-4 / Granite wrappers.
    (
        '<|tool_call|>[{"name": "tienda__listar_productos", "arguments": {}}]<|/tool_call|>',
        [("tienda__listar_productos", {})],
        "",
    ),
    # Kimi K2.
    (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.crm__buscar_cliente:0<|tool_call_argument_begin|>"
        '{"nombre": "Ana"}<|tool_call_end|><|tool_calls_section_end|>',
        [("crm__buscar_cliente", {"nombre": "Ana"})],
        "",
    ),
    # MiniMax-M2 and Claude-style invoke blocks, typed like Qwen3-coder's.
    (
        '<minimax:tool_call>\n<invoke name="tienda__crear_pedido">\n<parameter name="sku">A-1</parameter>\n'
        '<parameter name="cantidad">2</parameter>\n</invoke>\n</minimax:tool_call>',
        [("tienda__crear_pedido", {"sku": "A-1", "cantidad": 2})],
        "",
    ),
    (
        '<function_calls><invoke name="tienda__listar_productos"><parameter name="categoria">x</parameter></invoke></function_calls>',
        [("tienda__listar_productos", {"categoria": "x"})],
        "",
    ),
    # Seed-OSS, Llama-Nemotron, MiniMax-M1 (several objects, one per line), Command R's tool_name.
    (
        "<seed:think>hmm</seed:think><seed:tool_call><function=tienda__listar_productos>"
        "<parameter=categoria>x</parameter></function></seed:tool_call>",
        [("tienda__listar_productos", {"categoria": "x"})],
        "",
    ),
    ('<TOOLCALL>[{"name": "tienda__listar_productos", "arguments": {}}]</TOOLCALL>', [("tienda__listar_productos", {})], ""),
    (
        '<tool_calls>\n{"name": "crm__buscar_cliente", "arguments": {}}\n{"name": "tienda__listar_productos", "arguments": {}}\n</tool_calls>',
        [("crm__buscar_cliente", {}), ("tienda__listar_productos", {})],
        "",
    ),
    (
        'Action: ```json\n[{"tool_name": "tienda__listar_productos", "parameters": {"categoria": "x"}}]\n```',
        [("tienda__listar_productos", {"categoria": "x"})],
        "Action:",
    ),
    # Fenced blocks holding a call.
    (
        'Claro.\n```json\n{"name": "crm__buscar_cliente", "arguments": {"nombre": "Ana"}}\n```\nTe aviso.',
        [("crm__buscar_cliente", {"nombre": "Ana"})],
        "Claro.\n\nTe aviso.",
    ),
    ('```tool_code\ntienda__listar_productos(categoria="x")\n```', [("tienda__listar_productos", {"categoria": "x"})], ""),
    (
        '```\n<tool_call>{"name": "tienda__listar_productos", "arguments": {}}</tool_call>\n```',
        [("tienda__listar_productos", {})],
        "",
    ),
]


@pytest.mark.parametrize(("text", "calls", "remaining"), FORMATS)
def test_it_parses_every_format_models_write(text, calls, remaining):
    """R5: each text format real models emit becomes calls, and the text keeps only the prose."""
    result = parse_text_calls(text, TOOLS)

    assert calls_of(result) == calls
    assert result.text == remaining
    assert result.rejected == ()
    assert_clean(result.text)


def test_it_returns_the_promised_shapes():
    """R5: frozen TextCall and ParsedText, with the fragment each call came from."""
    fragment = '<tool_call>{"name": "tienda__listar_productos", "arguments": {}}</tool_call>'
    result = parse_text_calls(f"Hola {fragment}", TOOLS)

    assert isinstance(result, ParsedText)
    assert result.calls == (TextCall("tienda__listar_productos", {}, fragment),)
    with pytest.raises(AttributeError):
        result.text = "x"


def test_it_reads_several_calls_and_unclosed_tags():
    """R5: several tagged calls in one message, the last one (or all) left unclosed."""
    text = (
        'Busco ambos.<tool_call>{"name": "crm__buscar_cliente", "arguments": {"nombre": "A"}}</tool_call>\n'
        '<tool_call>{"name": "crm__buscar_cliente", "arguments": {"nombre": "B"}}\n'
        '<tool_call>{"name": "tienda__listar_productos", "arguments": {}}'
    )
    result = parse_text_calls(text, TOOLS)

    assert calls_of(result) == [
        ("crm__buscar_cliente", {"nombre": "A"}),
        ("crm__buscar_cliente", {"nombre": "B"}),
        ("tienda__listar_productos", {}),
    ]
    assert result.text == "Busco ambos."


def test_it_reads_an_unclosed_function_and_a_missing_parameter_closer():
    """R5: Qwen3-coder output cut short still yields its call, parameters typed."""
    text = "<tool_call>\n<function=crm__buscar_cliente>\n<parameter=nombre>\nAna\n<parameter=limite>\n7\n"
    result = parse_text_calls(text, TOOLS)

    assert calls_of(result) == [("crm__buscar_cliente", {"nombre": "Ana", "limite": 7})]
    assert result.text == ""


def test_it_types_xml_parameters_from_the_schema():
    """R5: integer, number, boolean, object, array and nullable values are typed; strings keep their
    inner newlines and lose only the surrounding ones; values that do not fit stay text."""
    text = (
        "<tool_call><function=crm__buscar_cliente>"
        "<parameter=nombre>\n  Ana\nLópez \n</parameter>"
        "<parameter=limite>\n 12 \n</parameter>"
        "<parameter=activo>False</parameter>"
        "<parameter=precio_max>\n19.99\n</parameter>"
        '<parameter=filtros>\n{"ciudad": "Lima", "vip": true}\n</parameter>'
        "<parameter=etiquetas>['a', 'b']</parameter>"
        "<parameter=pagina>null</parameter>"
        "</function></tool_call>"
    )
    [(name, arguments)] = calls_of(parse_text_calls(text, TOOLS))

    assert name == "crm__buscar_cliente"
    assert arguments == {
        "nombre": "  Ana\nLópez ",
        "limite": 12,
        "activo": False,
        "precio_max": 19.99,
        "filtros": {"ciudad": "Lima", "vip": True},
        "etiquetas": ["a", "b"],
        "pagina": None,
    }


def test_it_keeps_values_that_do_not_fit_their_type_as_text():
    """R5: the gateway reports type errors to the model; the parser does not invent values."""
    text = (
        "<function=crm__buscar_cliente><parameter=limite>muchos</parameter>"
        "<parameter=filtros>{roto</parameter><parameter=extra>42</parameter></function>"
    )
    [(_, arguments)] = calls_of(parse_text_calls(text, TOOLS))

    assert arguments == {"limite": "muchos", "filtros": "{roto", "extra": "42"}


def test_it_types_glm_values_from_the_schema():
    """R5: GLM `<arg_value>` values are typed like Qwen3-coder's."""
    text = (
        "<tool_call>crm__buscar_cliente<arg_key>activo</arg_key><arg_value>true</arg_value>"
        '<arg_key>etiquetas</arg_key><arg_value>["x"]</arg_value></tool_call>'
    )

    assert calls_of(parse_text_calls(text, TOOLS)) == [("crm__buscar_cliente", {"activo": True, "etiquetas": ["x"]})]


# --- Names and arguments -----------------------------------------------------------------------


def test_it_accepts_a_name_without_its_server_prefix_only_when_unambiguous():
    """R5: `buscar_cliente` means crm__buscar_cliente; `consultar_estado` exists on two servers and
    is not guessed."""
    text = (
        '<tool_call>{"name": "buscar_cliente", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "consultar_estado", "arguments": {}}</tool_call>'
    )
    result = parse_text_calls(text, TOOLS)

    assert calls_of(result) == [("crm__buscar_cliente", {})]
    assert result.rejected == ('<tool_call>{"name": "consultar_estado", "arguments": {}}</tool_call>',)


@pytest.mark.parametrize(
    "name",
    [
        "borrar_base_de_datos",  # unknown
        "crm_buscar_cliente",  # mangled separator
        "crm.buscar_cliente",
        "otro__buscar_cliente",  # wrong server
        "CRM__BUSCAR_CLIENTE",
        "crm__buscar_cliente ; drop",
        "",
    ],
)
def test_it_never_executes_unknown_or_mangled_names(name):
    """R5: unknown or mangled names go to `rejected`, and their fragment is removed."""
    text = f'Listo. <tool_call>{{"name": {json.dumps(name)}, "arguments": {{}}}}</tool_call>'
    result = parse_text_calls(text, TOOLS)

    assert result.calls == ()
    assert len(result.rejected) == 1 and name in result.rejected[0]
    assert result.text == "Listo."


@pytest.mark.parametrize(
    "fragment",
    [
        '<tool_call>{"name": "crm__buscar_cliente", "arguments": ["Ana"]}</tool_call>',  # not an object
        '<tool_call>{"name": "crm__buscar_cliente", "arguments": "nombre=Ana"}</tool_call>',
        '<tool_call>{"name": "crm__buscar_cliente", "arguments": {"nombre": "An',  # cut short
        "<tool_call>{name: crm__buscar_cliente}</tool_call>",
        "<tool_call>buscar el cliente Ana por favor</tool_call>",
        "<function=crm__buscar_cliente>nombre es Ana</function>",
        "<function=crm__buscar_cliente\n><parameter=x>1</parameter></function>",
        "<tool_call>crm__buscar_cliente<arg_key>nombre</arg_key><arg_value>Ana</tool_call>",
        "<|python_tag|>import os; os.system('rm -rf /')<|eom_id|>",
        "[TOOL_CALLS]crm__buscar_cliente[ARGS]{roto",
        "<｜tool▁call▁begin｜>crm__buscar_cliente sin separador<｜tool▁call▁end｜>",
        '<tool_call>[crm__buscar_cliente(nombre=__import__("os").getcwd())]</tool_call>',
        '<tool_call>[crm__buscar_cliente("Ana")]</tool_call>',
    ],
)
def test_it_rejects_calls_whose_arguments_cannot_be_read(fragment):
    """R5: a call-like fragment that is not executable is recorded in `rejected` and removed;
    pythonic arguments are literals only, never evaluated."""
    result = parse_text_calls(f"Un momento. {fragment}", TOOLS)

    assert result.calls == ()
    assert result.rejected
    assert result.text == "Un momento."
    assert_clean(result.text)


def test_json_arguments_may_hold_any_text():
    """R5: a JSON call whose argument mentions tags or fences is read as JSON, not as another format."""
    text = '<tool_call>{"name": "tienda__listar_productos", "arguments": {"categoria": "<function=x> ```"}}</tool_call>'

    assert calls_of(parse_text_calls(text, TOOLS)) == [("tienda__listar_productos", {"categoria": "<function=x> ```"})]


@pytest.mark.parametrize("arguments", ["{'sku': b'bytes'}", "{'sku': {1, 2}}", "{'sku': 1j}", '{"sku": NaN}', "{'sku': float('inf')}"])
def test_it_rejects_arguments_that_are_not_plain_json(arguments):
    """R5: Python literals that JSON cannot carry (bytes, sets, complex, NaN) never reach the gateway."""
    result = parse_text_calls(f"<tool_call>{{'name': 'tienda__crear_pedido', 'arguments': {arguments}}}</tool_call>", TOOLS)

    assert result.calls == ()
    assert len(result.rejected) == 1


def test_python_literal_arguments_become_plain_json():
    """R5: tuples become lists; the arguments are what JSON would carry."""
    text = "<tool_call>{'name': 'crm__buscar_cliente', 'arguments': \"{'etiquetas': ('a', 'b'), 'activo': True}\"}</tool_call>"

    assert calls_of(parse_text_calls(text, TOOLS)) == [("crm__buscar_cliente", {"etiquetas": ["a", "b"], "activo": True})]


def test_it_rejects_a_bare_call_with_an_unknown_name_and_removes_it():
    """R5: a whole-message call object naming no offered tool is not executed, and never shown."""
    result = parse_text_calls('{"name": "hackear", "arguments": {"a": 1}}', TOOLS)

    assert result.calls == ()
    assert result.rejected == ('{"name": "hackear", "arguments": {"a": 1}}',)
    assert result.text == ""


def test_it_does_not_execute_call_json_inside_prose_but_removes_it():
    """R5: a bare call counts only when it is the whole message; inside prose it is JSON meant for a
    tool, removed and recorded."""
    text = 'Voy a consultar: {"name": "crm__buscar_cliente", "arguments": {"nombre": "Ana"}} y te cuento.'
    result = parse_text_calls(text, TOOLS)

    assert result.calls == ()
    assert result.rejected == ('{"name": "crm__buscar_cliente", "arguments": {"nombre": "Ana"}}',)
    assert result.text == "Voy a consultar: y te cuento."


@pytest.mark.parametrize("text, kept", [
    ('Su caso está abierto. Además: {"name": "crm__buscar_cliente", "arguments": {"nombre": "Ana"}}', "Su caso está abierto."),
    ('Listo.\nLo que haré:\n<tool_call>{"name": "crm__buscar_cliente", "arguments": {}}</tool_call>', "Listo."),
    ('Aquí está: {"name": "crm__buscar_cliente", "arguments": {"nombre": "Ana"}}', "Aquí está:"),
])
def test_a_lead_in_left_with_nothing_after_it_goes(text, kept):
    """R5 (found by exploratory testing): a reply whose call was cut reached the customer as "Su caso
    está abierto. Además:"; the dangling lead-in goes, unless it is all the text there is."""
    assert clean_reply(text) == kept


def test_it_caps_the_calls_taken_from_one_message():
    """R5: at most MAX_CALLS calls run from one message; the rest are rejected."""
    fragment = '<tool_call>{"name": "tienda__listar_productos", "arguments": {"categoria": "%d"}}</tool_call>'
    result = parse_text_calls("".join(fragment % i for i in range(MAX_CALLS + 4)), TOOLS)

    assert [call.arguments["categoria"] for call in result.calls] == [str(i) for i in range(MAX_CALLS)]
    assert len(result.rejected) == 4
    assert result.text == ""


def test_it_reads_only_the_first_max_text_characters():
    """R5: input beyond MAX_TEXT is dropped, calls in it included."""
    call = '<tool_call>{"name": "tienda__listar_productos", "arguments": {}}</tool_call>'
    result = parse_text_calls("a" * MAX_TEXT + call, TOOLS)

    assert result.calls == ()
    assert result.text == "a" * MAX_TEXT


# --- Debris ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "remaining"),
    [
        ("Hola, ¿en qué te ayudo?<|im_end|>", "Hola, ¿en qué te ayudo?"),
        ("<|im_start|>assistant\nHola.<|im_end|>\n<|endoftext|>", "Hola."),
        ("<|start_header_id|>assistant<|end_header_id|>\n\nTu pedido llegó.<|eot_id|>", "Tu pedido llegó."),
        ("<|assistant|>Listo.<|end|>", "Listo."),
        ("Claro</s>", "Claro"),
        ("[TOOL_CALLS]", ""),
        ("</tool_call>Tu saldo es $20.</tool_call>", "Tu saldo es $20."),
        ("Aquí está.\n</function>\n</tool_call>", "Aquí está."),
        ("<tool_call></tool_call>Hola", "Hola"),
        ("<parameter=nombre>Hola", "Hola"),
        ("Hola<｜end▁of▁sentence｜>", "Hola"),
        ("<think>\nEl cliente quiere zapatos.\n</think>\n\nTenemos zapatos desde $30.", "Tenemos zapatos desde $30."),
        ("<think>pienso y pienso, sin cerrar nunca", ""),
        ("El cliente pide saldo; consulto.\n</think>\n\nTu saldo es $5.", "Tu saldo es $5."),
        ("Hola.<think>a</think> ¿Algo más?<think>b</think>", "Hola. ¿Algo más?"),
        ("[THINK]razono[/THINK]Listo.", "Listo."),
        ('<tool_response>{"saldo": 9999}</tool_response>Tu saldo es $5.', "Tu saldo es $5."),
        ("Consulté la base:\n```sql\nSELECT saldo FROM cuentas WHERE id = 4;\n```\nTu saldo es $5.", "Consulté la base:\n\nTu saldo es $5."),
        ("```\nselect * from pedidos\n```\nNo hay pedidos.", "No hay pedidos."),
        ("Ejecuté SELECT * FROM productos WHERE id = 5; y cuesta $10.", "Ejecuté y cuesta $10."),
        ("Consulta:\nSELECT nombre, precio\nFROM productos\nWHERE stock > 0\nORDER BY precio\nHay 3 productos.", "Consulta:\n\nHay 3 productos."),
        ("Listo: `UPDATE clientes SET email = 'a@b.c' WHERE id = 1` hecho.", "Listo: hecho."),
        ("INSERT INTO pedidos (sku, cantidad) VALUES ('A', 1);\nPedido creado.", "Pedido creado."),
        ("delete from carrito where id = 3;\nListo.", "Listo."),
        ("DROP TABLE clientes;", ""),
    ],
)
def test_it_removes_debris(text, remaining):
    """R5: special tokens, orphan tags, thinking, made-up tool results and SQL never reach the
    customer; the prose around them stays."""
    assert clean_reply(text) == remaining
    assert parse_text_calls(text, TOOLS).text == remaining


def test_a_turn_the_model_writes_for_someone_else_is_dropped():
    """R5: without its stop token a model goes on writing the customer's next message (and calls in
    it); none of that is the reply, nor executed."""
    text = (
        "Tu pedido llegó ayer.<|im_end|>\n<|im_start|>user\n¿Y mi reembolso?<|im_end|>\n<|im_start|>assistant\n"
        '<tool_call>{"name": "tienda__crear_pedido", "arguments": {}}</tool_call>'
    )
    result = parse_text_calls(text, TOOLS)

    assert result == ParsedText((), "Tu pedido llegó ayer.", ())
    assert clean_reply("Listo.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nGracias") == "Listo."


def test_an_unclosed_thought_ends_where_a_call_begins():
    """R5: thinking never closed runs until the call; the call still runs, the thought is gone."""
    text = '<think>Necesito buscar al cliente.\n<tool_call>{"name": "crm__buscar_cliente", "arguments": {}}</tool_call>'
    result = parse_text_calls(text, TOOLS)

    assert calls_of(result) == [("crm__buscar_cliente", {})]
    assert result.text == ""


def test_calls_inside_thinking_are_not_executed():
    """R5: a model musing about a call in its reasoning has not made it."""
    text = '<think>Podría usar <tool_call>{"name": "tienda__crear_pedido", "arguments": {}}</tool_call></think>¿Confirmas el pedido?'
    result = parse_text_calls(text, TOOLS)

    assert result.calls == ()
    assert result.text == "¿Confirmas el pedido?"


# --- Prose passes through unchanged ------------------------------------------------------------

PROSE = [
    "¡Hola! 😊 ¿En qué puedo ayudarte hoy?",
    "El producto cuesta $1.299,90 (IVA incluido) y llega en 3–5 días hábiles.",
    "Tenemos estas opciones:\n\n- **Plan Básico**: $10/mes\n- **Plan Pro**: $25/mes\n  - incluye soporte 24/7\n\n¿Cuál prefieres?",
    "1. Entra a https://tienda.example.com/cuenta?seccion=pedidos&orden=desc\n2. Haz clic en *Mis pedidos*.",
    "Puedes ver el catálogo aquí: [Catálogo 2025](https://example.com/catalogo(2025)).",
    'The JSON format looks like {"a": 1}, with keys in double quotes.',
    'Tu configuración: {"name": "Ana", "email": "ana@example.com"} — ¿es correcta?',
    "Please select one from the list below, then update your address.",
    "You can delete from your cart any item you no longer want.",
    "Select the size from the menu and insert into the form your ZIP code.",
    "La función de búsqueda (en la app) usa filtros como color=rojo y talla=M.",
    "Precio: 3 x $4.50 = $13.50 ✅\nTotal con envío: $15.00 🚚",
    "Tu número de pedido es #A-1023 [pendiente].",
    "Horario: lunes a viernes, 9:00–18:00 (GMT-5). ¡Gracias por escribirnos! 🙌",
    "Si 2 < 3 y 5 > 4, entonces la promo aplica. <b>Importante</b>: válido hasta el 31/12.",
    "Usa el código `VERANO25` al pagar.",
    "Pasos:\n```\n1. Apaga el router\n2. Espera 10 segundos\n3. Enciéndelo\n```\nSi sigue fallando, avísame.",
    "Sí, el modelo SELECT de la marca tiene garantía de 2 años.",
    "Our CREATE TABLE workshop is on Friday; bring your own wood.",
    "Resultado: [1, 2, 3] y {x: 1}.",
    "Te recomiendo: (a) el plan anual, (b) el mensual.",
    "| Producto | Precio |\n|---|---|\n| Botas <40 | $49,99 |\n| Zapatillas | USD 30 |",
    "*Oferta* _hoy_ ~antes $50~ ahora $40 👉 wa.me/5215512345678 #promo",
    "Escríbenos a soporte@tienda.com o llama al +52 (55) 1234-5678.",
    "We update prices daily; insert into your calendar the date of the sale.",
    "[Nota(importante=sí)] Hola {nombre}, tu código es {'code': 'X1'}.",
    "ok",
]


@pytest.mark.parametrize("text", PROSE)
def test_it_leaves_ordinary_prose_unchanged(text):
    """R5: replies in Spanish and English, with prices, emojis, markdown, URLs, code and JSON in
    prose, pass through unchanged and are never mistaken for calls."""
    result = parse_text_calls(text, TOOLS)

    assert result.calls == ()
    assert result.rejected == ()
    assert result.text == text
    assert clean_reply(f"\n  {text}  \n") == text


def test_a_whole_message_json_that_is_not_a_call_stays():
    """R5: a JSON object without call keys is not JSON meant for a tool."""
    text = '{"pedido": "A-1", "estado": "enviado"}'

    assert parse_text_calls(text, TOOLS) == ParsedText((), text, ())


# --- Nothing of a call ever reaches the customer -----------------------------------------------

NASTY = [
    '<tool_call>{"name": "crm__buscar_cliente", "arguments": {"nombre": "Ana"}}',
    "<tool_call><tool_call></tool_call></tool_call>",
    "<tool_call><function=x><parameter=a>1</function>",
    "<function=<function=a>>",
    "<|python_tag|>",
    "<|im_end|><|eot_id|><|eom_id|><|end|><|assistant|><|im_start|>",
    "<|<|im_end|>|>",
    "<<||>>",
    "[TOOL_CALLS][TOOL_CALLS]",
    "[TOOL_[TOOL_CALLS]CALLS]",
    "<th<think>ink>",
    "<think><think></think>",
    "</think></think>",
    "<tool_<tool_call>call>",
    "<TOOL_CALL>{}</TOOL_CALL>",
    '```json\n{"name": "x", "arguments": {}}',
    "```\n<tool_call>\n```",
    "<｜tool▁calls▁begin｜>",
    "<｜<｜tool▁sep｜>｜>",
    "{'name': 'x', 'arguments': {}",
    "[a(b=1)]",
    "SELECT * FROM t",
    "<parameter=<parameter=x>>",
    "to=functions.",
    '<invoke name="x"><parameter name="a">1',
    "<|tool_call_begin|>functions.x:0<|tool_call_argument_begin|>",
    "\n\n",
]
PROSE_BITS = ["", "Hola.", "Precio: $10 😊", "- item\n- item", "{", "[", "<", "|", ">", "```"]


def test_clean_replies_never_contain_call_syntax():
    """R5: for every combination of nasty fragments and prose, the clean reply has no call tags,
    special tokens, Mistral markers or thinking tags."""
    for first, second in itertools.product(NASTY, repeat=2):
        for bit in PROSE_BITS:
            for text in (first + second, first + bit + second, bit + first + second + bit, first + bit + first):
                assert_clean(clean_reply(text))
                assert_clean(parse_text_calls(text, TOOLS).text)


def test_prose_around_fragments_survives():
    """R5: removing a fragment keeps the customer's sentences on both sides apart and intact."""
    text = 'Perfecto.<tool_call>{"name": "x", "arguments": {}}</tool_call>Tu pedido está en camino 🚚.<|im_end|>'

    assert clean_reply(text) == "Perfecto. Tu pedido está en camino 🚚."


# --- Hostile input -----------------------------------------------------------------------------

HOSTILE = {
    "one megabyte of prose": "Hola, el precio es $10. " * 45_000,
    "nested openers": "<tool_call>" * 100_000,
    "unclosed JSON starts": '<tool_call>{"name": ' * 60_000,
    "nested functions": "<function=a><parameter=b>" * 50_000,
    "python tags": "<|python_tag|>{" * 70_000,
    "mistral markers": "[TOOL_CALLS][]" * 80_000,
    "fences": "```" * 400_000,
    "deep brackets": "[" * 1_000_000,
    "call-shaped starts": '{"name": ' * 120_000,
    "literal starts": "{'name': " * 120_000,
    "select without from": "SELECT " * 150_000,
    "marker builders": "<" * 100_000 + "|" * 100_000,
    "pythonic lines": "[a(b=1)]\n" * 110_000,
    "deep pythonic": "[a(b=" * 200_000,
    "thinking": "<think>" * 150_000,
    "lone closers": "a</think>" * 120_000,
    "deepseek": "<｜tool▁call▁begin｜>" * 60_000,
    "spaces": " " * 1_000_000 + "<|im_end|>",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_input_finishes_and_comes_out_clean(name):
    """R5: a megabyte of garbage or nested tags is processed promptly (bounded work), with capped
    calls and rejections, and comes out clean."""
    result = finishes(parse_text_calls, HOSTILE[name], TOOLS)

    assert len(result.calls) <= MAX_CALLS
    assert len(result.rejected) <= 32
    assert len(result.text) <= MAX_TEXT
    assert_clean(result.text)


def test_it_accepts_an_empty_message():
    """R5: a model that answers nothing (or only with native calls) gives empty text."""
    assert parse_text_calls("", TOOLS) == ParsedText((), "", ())
    assert parse_text_calls(None, TOOLS) == ParsedText((), "", ())
    assert clean_reply("  <|im_end|>  ") == ""
