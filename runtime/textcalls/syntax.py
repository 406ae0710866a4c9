"""The markers models write around calls, thinking and debris, and the patterns that find them
(package-internal). Every pattern is bounded: no nested or unbounded repetition."""

import json
import re


# --- Markers -------------------------------------------------------------------------------------

_DS_CALLS_BEGIN, _DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_DS_CALL_BEGIN, _DS_CALL_END, _DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
_HARMONY, _KIMI = "to=functions.", "<|tool_call_begin|>"
_NAME_SEPARATORS = {_HARMONY: "<|message|>", _KIMI: "<|tool_call_argument_begin|>"}  # NAME…<sep>{json}

# Opener -> closers. Without a closer a fragment ends at the next same opener or at the end.
_CLOSERS = {
    "<tool_call>": ("</tool_call>",),
    "<tool_calls>": ("</tool_calls>",),
    "<function_call>": ("</function_call>",),
    "<function_calls>": ("</function_calls>",),
    "<TOOLCALL>": ("</TOOLCALL>",),
    "<minimax:tool_call>": ("</minimax:tool_call>",),
    "<seed:tool_call>": ("</seed:tool_call>",),
    "<|tool_call|>": ("<|/tool_call|>",),
    "<function=": ("</function>",),
    "<|python_tag|>": ("<|eom_id|>", "<|eot_id|>"),
    _DS_CALLS_BEGIN: (_DS_CALLS_END,),
    _DS_CALL_BEGIN: (_DS_CALL_END,),
    _HARMONY: ("<|call|>",),
    _KIMI: ("<|tool_call_end|>",),
    "<tool_response>": ("</tool_response>",),  # results a model made up: dropped, not executed
    "[TOOL_RESULTS]": ("[/TOOL_RESULTS]",),
    "```": ("```",),
}
_DROPPED = ("<tool_response>", "[TOOL_RESULTS]")
_OPENER = re.compile("|".join(re.escape(o) for o in (*_CLOSERS, "[TOOL_CALLS]")))
_CALL_START = re.compile("|".join(re.escape(o) for o in (*_CLOSERS, "[TOOL_CALLS]") if o not in ("```", *_DROPPED)))

# (opener, closer, whether a closer alone means everything before it was thinking)
_THINKING = (
    ("<think>", "</think>", True),
    ("<thinking>", "</thinking>", True),
    ("[THINK]", "[/THINK]", True),
    ("<seed:think>", "</seed:think>", True),
    ("<|channel|>analysis<|message|>", "<|end|>", False),  # gpt-oss reasoning channel
)

_DEBRIS = re.compile(
    r"<\|start_header_id\|>[^<>\n]{0,40}<\|end_header_id\|>"
    r"|<\|(?:im_start|start)\|>(?:assistant|user|system|tool)?"
    r"|<\|channel\|>(?:analysis|commentary|final)?"
    r"|<\|[\w./ -]{0,64}\|>"
    r"|<｜[^｜<>\n]{0,64}｜>"
    r"|(?i:</?(?:tool_calls?|tool_response|tools|function_calls?|think|thinking|arg_key|arg_value|toolcall|invoke|seed:think|seed:tool_call|minimax:tool_call)\s{0,8}>)"
    r"|(?i:</?(?:function|parameter|invoke)(?:=[^<>\n]{0,200}| name=\"[^\"<>\n]{0,200}\")?\s{0,8}>)"
    r"|\[/?(?:TOOL_CALLS|ARGS|CALL_ID|TOOL_RESULTS|AVAILABLE_TOOLS|INST|THINK)\]"
    r"|</?s>|<(?:eos|bos|end_of_turn)>|<start_of_turn>(?:model|user)?"
)
_OTHER_TURN = re.compile(
    r"<\|im_start\|>(?:user|system|tool)|<\|start_header_id\|>(?:user|system|ipython|tool)"
    r"|<\|start\|>(?:user|system|developer|functions)|<start_of_turn>user|<\|(?:user|system)\|>"
)
# What clean text can never contain, whatever slipped past the parsers (compared lower-cased).
_FORBIDDEN = (
    "<tool_call", "</tool_call", "<function=", "</function", "<parameter=", "<|", "<｜",
    "[tool_calls]", "[args]", "<think>", "</think>", "[think]", "[/think]", "<arg_key>", "<arg_value>",
)  # fmt: skip
_FORBIDDEN_ENDS = frozenset(m[-1] for m in _FORBIDDEN)

_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,127}")
_NAME_THEN_JSON = re.compile(r"([A-Za-z_][\w.\-]{0,127})\s*(\{.*)", re.S)
_MISTRAL_NAMED = re.compile(r"([A-Za-z_][\w.\-]{0,127})(?:\[CALL_ID\][\w-]{0,64})?\[ARGS\]")
_FENCE_INFO = re.compile(r"[\w+.-]{0,30}")
_CALL_LANGS = ("tool_code", "tool_call", "tool_calls", "function_call", "tool")
_SQL_LANGS = ("sql", "mysql", "postgresql", "postgres", "psql", "plpgsql", "sqlite")
_INTEGER = re.compile(r"[+-]?\d{1,40}")
_NUMBER = re.compile(r"-?\d{1,40}(?:\.\d{1,40})?(?:[eE][+-]?\d{1,3})?")
_INVOKE = re.compile(r'<invoke name="([^"<>\n]{1,128})">|</invoke>|<parameter name="([^"<>\n]{1,128})">')
_CALL_JSON = re.compile(r"""\{\s{0,20}["'](?:name|tool_name|function|arguments|parameters|type)["']\s{0,20}:""")
_DECODER = json.JSONDecoder()
_BAD = object()  # arguments that could not be read

# SQL: a keyword, then a shape only SQL has; prose ("select one from the list") stays.
_SQL_START = re.compile(r"(?i)\b(?:select|insert|update|delete|drop|alter|truncate|create)\b")
_T = r"[\w.\"`\[\]]+"  # a table or column name
_SQL_SHAPES = tuple(
    re.compile(p)
    for p in (
        r"SELECT\s[^;]{0,400}?\bFROM\s+" + _T,
        r"(?i:select)\s+(?:\*|(?i:count|sum|avg|min|max)\s*\()[^;\n]{0,400}?(?i:\bfrom)\s+" + _T,
        r"INSERT\s+INTO\s+" + _T,
        r"(?i:insert\s+into)\s+" + _T + r"\s*(?:\(|(?i:values)\b)",
        r"(?i:update)\s+" + _T + r"\s+(?i:set)\s+" + _T + r"\s*=",
        r"DELETE\s+FROM\s+" + _T,
        r"(?i:delete\s+from)\s+" + _T + r"\s+(?i:where)\b",
        r"(?i:drop|alter|truncate)\s+(?i:table)\s+" + _T,
        r"CREATE\s+(?:TABLE\s+" + _T + r"\s*\(|(?:UNIQUE\s+)?INDEX\s+" + _T + r"\s+ON\s|VIEW\s+" + _T + r"\s+AS\s)",
    )
)
_SQL_CONTINUATION = re.compile(
    r"[ \t]*(?:(?:WHERE|AND|OR|FROM|JOIN|LEFT|RIGHT|INNER|OUTER|FULL|ON|ORDER|GROUP|HAVING|LIMIT|"
    r"OFFSET|VALUES|SET|UNION|RETURNING|SELECT)\b|[()])"
)
