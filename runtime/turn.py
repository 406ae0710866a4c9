"""The turn service: everything that changes a turn happens here (R2–R4, R9–R11).

`turn_execute(turn_id=...)` claims the turn (one runner at a time, by lease), then:

1. the tool loop (R2): the model gets the tenant's instructions, the recent conversation, the
   question and the offered tools (native `tools`, catalog order); each tool call it asks for —
   natively or written as text (R5) — goes through the gateway; the results, cut to the budgets
   (R4), go back to it; until it answers, the tenant's iteration limit is reached, or it keeps
   asking for calls it already made (repetition guard: the same tool with the same arguments
   is never executed twice in a turn; the model is told so, and two rounds of nothing but
   repeats end the loop);
2. the reply (R3): when tools ran, from a clean request (instructions, summary, facts, question);
   when none did, the loop's first answer already came from such a request;
3. one reply stored with its event; the gateway's call records flushed.

Built-in tools (R12, R13; runtime/builtins/) join the catalog's tools only when the message gives
a reason; a skill loaded by `asixto__invoke_skill` adds its instructions and tools from the next
model call on (`_apply_skills`); a chart's spec becomes a `chart` event; facts from public
sources are labelled in the step (`response.source = "public"`) and in the reply request.

Redelivery (R10): every step is a `TurnStep` row committed as it happens (a model step with the
first write after it, the reply step with the reply: only computation lies between). A re-run replays the
finished steps from storage (model answers included, so the step numbers line up), sends an
unfinished tool step again with the same idempotency key (`turn:<id>:step:<n>`), and the
reply is stored once (row lock). A model failure ends the turn with an honest reply in the
customer's language and the error recorded (R11).

Concurrency (P4): the turn holds no database connection while it waits on the model or a tool
(`_release_db`), so a threads worker can keep hundreds of turns in flight on a few connections.
"""

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

import kombu.exceptions
import redis
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from asixto import log_context, metrics, tracing
from asixto.json_input import JsonInputError, check_json, storable
from runtime import events, lease_keeper, selectors, webhooks
from runtime.budgets import apply_budgets
from runtime.builtins import TurnBuiltins, fact_source, is_builtin
from runtime.model_client import Answer, Endpoint, ModelError, NativeCall, complete
from runtime.models import TruncationLog, Turn, TurnEvent, TurnStep
from runtime.reply import Fact, loop_messages, reply_messages
from runtime.routing.candidates import Example, ToolCard
from runtime.routing.compose import routed_messages
from runtime.routing.delivery import delivered, pretence, reask
from runtime.routing.language import customer_language
from runtime.routing.route import Route, route_message
from runtime.routing.router import router_endpoint
from runtime.textcalls import TEXT_CALLS_NOT_RUN, clean_reply, parse_text_calls
from runtime.turn_order import next_turn_queue, waiting_on_earlier
from runtime.turn_writes import LeaseLost, reply_write, step_write, turn_claim
from tenants.selectors import current_tenant
from tools.gateway import CallContext, call_tool, flush_records
from tools.models import Tool, ToolCall
from tools.routing_examples import routing_examples

log = logging.getLogger(__name__)

VERB_KEY = "com.asixto/verb"
REPEATED, BAD_ARGUMENTS = "repeated", "invalid_arguments"
# Failures of the platform's own services that pass (a database restart, a Redis or broker blip):
# the turn runs again instead of failing (`_run_again`).
TRANSIENT = (OperationalError, InterfaceError, redis.ConnectionError, redis.TimeoutError, kombu.exceptions.OperationalError)
# Rounds in a row in which the model asked only for calls it had already made: it is looping.
MAX_REPEAT_ROUNDS = 2
# What a model writes is bounded like anything else that comes from outside.
MAX_CALLS_PER_ANSWER = 8
MAX_ARGUMENT_CHARS = 20_000
MAX_REPLY_CHARS = 8_000
# A lease renewed this recently (by the last step's write) is not renewed again before a wait.
RENEWED_RECENTLY_SECONDS = 5.0


@dataclass
class Call:
    id: str
    name: str
    arguments: dict | None  # None: the model's arguments were not a JSON object
    raw: str

    @property
    def signature(self):
        return self.name, json.dumps(self.arguments, sort_keys=True, ensure_ascii=False) if self.arguments is not None else self.raw


@dataclass
class _Run:
    turn: Turn
    runner: str
    steps: dict[int, TurnStep]
    tools: dict  # model-visible name → Tool, as offered
    endpoint: Endpoint
    language: str
    used: int = 0
    index: int = 0
    facts: list[Fact] = field(default_factory=list)
    seen: set = field(default_factory=set)
    tool_steps: int = 0
    route: Route | None = None  # R6: the first iteration shows this one tool, with the composed instruction
    outcomes: list = field(default_factory=list)  # (tool name, outcome) of this turn's tool steps (R8)
    reasked: bool = False  # R8: the one re-ask of a routed turn that delivered nothing
    told_text_calls: bool = False  # R5: the model was told once that a call inside its prose was not run
    builtins: TurnBuiltins | None = None  # R12: built-ins this message gives a reason for, skills
    customer_said: tuple = ()  # the customer's messages, this one last: what a chart may draw (R12)
    renewed: float = field(default_factory=time.monotonic)  # when the lease was last renewed
    iterations: int = 0  # of the tool loop so far (the turn's `iterations` as it will be stored)
    # Writes held back until the next one (see _write): steps by index, turn changes, rows.
    pending: tuple = field(default_factory=lambda: ({}, {}, []))


def turn_execute(*, turn_id) -> None:
    """Run (or resume) one turn in the current tenant's schema. Safe to call twice."""
    log_context.turn_started(schema_name=connection.schema_name, turn_id=turn_id)
    runner = uuid.uuid4().hex
    claimed = _claim(turn_id, runner)
    if claimed is None:
        return
    turn, newest = claimed
    metrics.turn_started(first_run=turn.runs == 1, queued_seconds=_seconds(turn.created_at, turn.started_at))
    lease_keeper.hold(connection.schema_name, turn_id, runner)
    try:
        _run(turn, runner, newest)
    except LeaseLost:
        log.info("turn %s: taken over by another runner", turn_id)
        flush_records()  # the calls this runner made are recorded all the same (_finish does it otherwise)
    except TRANSIENT as exc:
        if turn.runs >= settings.ASIXTO_TURN_TRANSIENT_RUNS:
            log.exception("turn %s failed: still %s after %d runs", turn_id, type(exc).__name__, turn.runs)
            _finish(turn, runner, reply=failure_reply(turn.conversation.language), status=Turn.Status.FAILED,
                    error_code="internal", error_detail=type(exc).__name__)
        else:
            log.warning("turn %s: %s: %s; it runs again", turn_id, type(exc).__name__, exc)
            lease_keeper.release(connection.schema_name, turn_id)  # the shortened lease must run out
            _run_again(turn_id, runner)
    except Exception as exc:
        log.exception("turn %s failed", turn_id)
        _finish(turn, runner, reply=failure_reply(turn.conversation.language), status=Turn.Status.FAILED,
                error_code="internal", error_detail=type(exc).__name__)  # the message may quote SQL: the log has it
    finally:
        lease_keeper.release(connection.schema_name, turn_id)
        metrics.turn_left()


def _seconds(start, end) -> float | None:
    return (end - start).total_seconds() if start and end else None


def _run_again(turn_id, runner):
    """A database or broker that failed for a moment fails nothing for good (issue 19): the turn is
    left to run again, its stored steps replayed (no side effect twice, R10). This runner's lease
    is cut to ASIXTO_TURN_RETRY_SECONDS and the turn is sent again after as long; if even that
    cannot be written or sent, the lease running out brings the turn back (`requeue_stalled_turns`)."""
    from runtime.tasks import turn_run

    retry = settings.ASIXTO_TURN_RETRY_SECONDS
    try:
        connection.close()  # a broken connection is not reused
        Turn.objects.filter(pk=turn_id, runner=runner, status=Turn.Status.RUNNING).update(
            lease_expires_at=timezone.now() + timedelta(seconds=retry))
        turn_run.apply_async((str(turn_id),), countdown=retry + 1)
    except TRANSIENT as exc:
        log.warning("turn %s: not sent again now (%s); its lease brings it back", turn_id, type(exc).__name__)


# ---------------------------------------------------------------- claiming and finishing

def stalled_turns_mark_resent(*, now=None, sent_at=None) -> list:
    """Turns to send to a worker again, marked as resent: queued ones whose task was lost, and
    running ones whose runner's lease ran out (its worker died). Sending one twice is harmless:
    only one runner can claim a turn.

    A queued turn's task is lost when the broker was down as it was posted, or when kombu took it
    off the Redis queue as the connection was cut (the reply to BRPOP never arrived, so it is in
    neither the queue nor the unacknowledged set: no visibility timeout brings it back). `sent_at`
    is when the sweep's own message was sent: it went through the same queue, behind every task
    sent before it, so by the time it runs, a turn queued (or resent) ASIXTO_TURN_PICKUP_SECONDS
    before it was handed out long enough ago to have been claimed. A turn still waiting in a
    backlog is behind the sweep's message, and is not sent twice. Without `sent_at` (or should
    turns go to a queue of their own), a queued turn is sent again after ASIXTO_TURN_RESEND_SECONDS."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.ASIXTO_TURN_RESEND_SECONDS)
    if sent_at is not None:
        cutoff = max(cutoff, min(sent_at, now) - timedelta(seconds=settings.ASIXTO_TURN_PICKUP_SECONDS))
    not_recently = Q(resent_at__isnull=True) | Q(resent_at__lt=cutoff)
    # A queued turn waiting on an earlier one of its conversation is not stalled: that one's end sends it.
    stalled = Turn.objects.filter(not_recently).filter(
        Q(~waiting_on_earlier(), status=Turn.Status.QUEUED, created_at__lt=cutoff)
        | Q(status=Turn.Status.RUNNING, lease_expires_at__lt=now)
    )
    turn_ids = list(stalled.values_list("pk", flat=True)[:1000])
    Turn.objects.filter(pk__in=turn_ids).update(resent_at=now)
    return turn_ids


def _lease_until():
    return timezone.now() + timedelta(seconds=settings.ASIXTO_TURN_LEASE_SECONDS)


def _claim(turn_id, runner) -> tuple[Turn, list] | None:
    """Take the turn unless it is finished or another runner holds a live lease; with the
    conversation's newest messages before it (see `turn_claim`)."""
    return turn_claim(turn_id=turn_id, runner=runner, lease_until=_lease_until(), now=timezone.now())


def _renew(run: _Run):
    """Before a wait: what is held back is stored, and the lease must outlast the wait (the last
    write renewed it if that was just now)."""
    steps, _turn, _rows = run.pending
    if steps or time.monotonic() - run.renewed > RENEWED_RECENTLY_SECONDS:
        _write(run)


def _write(run: _Run, index: int | None = None, *, turn: dict | None = None, rows: tuple = (), hold: bool = False,
           **step):
    """Renew the lease and store step `index` with `step`'s values, `turn` changes and `rows`, in
    one statement (runtime/turn_writes.py); LeaseLost if another runner holds the turn.

    With `hold`, the write joins the next one instead: a model step is stored with the first tool
    step it asks for (or before the next wait, or the reply). Nothing but computation happens in
    between, so a re-run loses nothing it could not redo without side effects (R10)."""
    steps, changes, extra = run.pending
    if index is not None:
        steps[index] = step
    changes.update(turn or {})
    extra.extend(rows)
    if hold:
        return
    run.pending = ({}, {}, [])
    step_write(turn_id=run.turn.pk, runner=run.runner, lease_until=_lease_until(), steps=steps, turn=changes, rows=extra)
    run.renewed = time.monotonic()


def _release_db():
    """Give the connection back (to the pool, or closed) before a wait of seconds (P4). Inside a
    transaction (tests that roll back) there is nothing to give back."""
    if not connection.in_atomic_block:
        connection.close()


def _finish(turn: Turn, runner: str, *, reply: str, status: str, error_code: str = "", error_detail: str = "",
            run: _Run | None = None):
    """Store the one reply of the turn, its event, and the final status (R10: once, whatever runs;
    a runner whose lease another one took over stores nothing), with what `run` still holds back
    (the reply step, the loop's last model step) in the same statement."""
    if run is None or run.tool_steps:
        _release_db()  # flushing may wait on the record writer: hold no connection meanwhile
        flush_records()  # the turn's call records are stored before anyone reads the turn as done
    tracing.annotate(**{"asixto.outcome": str(status), "asixto.error": error_code or None})
    steps, changes, rows = run.pending if run is not None else ({}, {}, [])
    # The webhook's delivery is owed in the reply's own statement (an outbox row), so nothing that
    # happens after the commit can lose it (issue 19).
    owed = webhooks.outbox_row(api_key_id=turn.api_key_id, turn_id=turn.pk)
    rows = [*rows, owed] if owed is not None else rows
    written = reply_write(
        turn_id=turn.pk, conversation_id=turn.conversation_id, runner=runner, reply=reply, status=status,
        error_code=error_code, error_detail=error_detail[:4000], finished_at=timezone.now(),
        event_data={"status": status, **({"error": error_code} if error_code else {})},
        steps=steps, turn=changes, rows=tuple(rows),
    )
    if not written.stored:
        log.info("turn %s: reply not stored: another runner took the turn over or stored it", turn.pk)
        return
    metrics.turn_finished(status=status, seconds=_seconds(turn.started_at, timezone.now()),
                          iterations=run.iterations if run is not None else turn.iterations)
    if owed is not None:
        # Sent once the reply is stored for good (robust: when the broker is down the sweep sends it).
        transaction.on_commit(lambda: webhooks.outbox_queue(owed[1]["id"]), robust=True)
    if written.others_queued:
        next_turn_queue(turn.conversation_id)  # the customer's next message, which waited for this reply


def failure_reply(language):
    with translation.override(language):
        return _("Sorry, I cannot answer right now. Please try again in a few minutes.")


def acted_failure_reply(language):
    """The reply of a turn whose model failed after a tool that changes something had done it: the
    customer must not be told to try again (a second request would do it twice; issue 19)."""
    with translation.override(language):
        return _("Your request went through, but I cannot give you the details right now. There is no need to "
                 "ask for it again: if you want the details, ask me in a few minutes.")


def _acted(run: "_Run") -> bool:
    """Whether a tool that changes something (write or destructive) answered ok in this turn."""
    return any(outcome == ToolCall.Outcome.OK and getattr(run.tools.get(name), "level", Tool.Level.DESTRUCTIVE) != Tool.Level.READ
               for name, outcome in run.outcomes)


def no_answer_reply(language):
    with translation.override(language):
        return _("Sorry, I could not find an answer to that. Could you say it in other words?")


# ---------------------------------------------------------------- the turn

@tracing.turn
def _run(turn: Turn, runner: str, newest: list):
    tenant = current_tenant()
    conversation = turn.conversation
    offered = selectors.offered_tools(channel=conversation.channel_kind)
    history, older = selectors.history_before(message=turn.message, newest=newest)
    question = turn.message.text
    catalog = {tool.prefixed_name: tool for tool in offered}
    builtins = TurnBuiltins.for_message(message=question, catalog=catalog,  # skills' tools leave `catalog`
                                        channel=conversation.channel_kind)
    run = _Run(
        # A first run has no stored steps to replay (steps are written by a runner that claimed it).
        turn=turn, runner=runner, steps={step.index: step for step in turn.steps.all()} if turn.runs > 1 else {},
        tools={**catalog, **builtins.attached}, builtins=builtins,
        customer_said=(*(line.text for line in history if line.role == "customer"), question),
        endpoint=Endpoint(tenant.model_base_url, tenant.model_name, tenant.model_api_key),
        # R7: the reply is pinned to the language the customer writes in.
        language=customer_language(message=question, earlier=[line.text for line in history if line.role == "customer"],
                                   default=conversation.language or tenant.language),
    )
    native_tools = [_native_tool(tool) for tool in run.tools.values()]  # catalog order, then built-ins
    messages = loop_messages(instructions=tenant.agent_instructions, language=run.language, history=history,
                             question=question, older=older)
    try:
        if settings.ASIXTO_ROUTING and catalog:
            run.route = _route_step(run, tenant, history, question)
        answer_text, incomplete = _loop(run, messages, native_tools, tenant.iteration_limit, tenant.turn_budget)
        if answer_text and not run.tool_steps:
            reply = answer_text
        else:
            instructions = "\n\n".join(filter(None, [tenant.agent_instructions, builtins.instructions()]))
            request = reply_messages(instructions=instructions, language=run.language, history=history,
                                     facts=run.facts, question=question, incomplete=incomplete, older=older)
            reply = _reply_step(run, request)
    except ModelError as exc:
        log.info("turn %s: model error %s", turn.pk, exc.code)
        reply = acted_failure_reply(run.language) if _acted(run) else failure_reply(run.language)
        _finish(turn, runner, reply=reply, status=Turn.Status.FAILED, error_code=exc.code, error_detail=exc.detail, run=run)
        return
    if len(reply) > MAX_REPLY_CHARS:
        reply = reply[:MAX_REPLY_CHARS].rsplit(None, 1)[0] + "…"
    # The loop's last model step (if it was the answer) or the reply step is stored with the reply.
    # An empty answer after a tool that acted: asking to say it in other words would have it done twice.
    unanswered = acted_failure_reply(run.language) if _acted(run) else no_answer_reply(run.language)
    _finish(turn, runner, reply=reply or unanswered, status=Turn.Status.DONE,
            error_code="" if reply else "no_answer", run=run)


def _native_tool(tool) -> dict:
    definition = tool.definition
    return {"type": "function", "function": {
        "name": tool.prefixed_name,
        "description": definition.get("description") or definition.get("title") or "",
        "parameters": definition.get("inputSchema") or {"type": "object", "properties": {}},
    }}


def _route_step(run: _Run, tenant, history, question) -> Route | None:
    """Pre-routing (R6), stored as the turn's first step so a re-run replays the decision. A
    message the cheap check lets through stores nothing (it costs no model call)."""
    stored = run.steps.get(1)
    if stored is not None:
        route = (stored.response or {}).get("route") if stored.kind == TurnStep.Kind.MODEL else None
        if stored.response and "routing" in stored.response:
            run.index = 1
            return Route.from_dict(route) if route and route.get("tool") in run.tools else None
        return None  # the first run was not routed: neither is this one
    cards = [ToolCard.from_definition(tool.definition, name=name, digest=tool.definition_hash)
             for name, tool in run.tools.items() if not is_builtin(name)]
    conversation = [{"role": "user" if line.role == "customer" else "assistant", "content": line.text}
                    for line in history[-8:]] + [{"role": "user", "content": question}]
    taught = [Example(tool, text) for tool, text in routing_examples()]  # what the tenant taught, read per turn
    _release_db()
    try:
        with tracing.span("routing", **{"asixto.routing.tools": len(cards)}):
            route, record = route_message(cards=cards, conversation=conversation, endpoint=router_endpoint(tenant),
                                          examples=taught)
            tracing.routed(tool=route and route.tool, record=record)
    except Exception:  # routing is an optimisation: when it breaks, the turn runs as it would without it
        log.exception("turn %s: routing failed; the turn proceeds unrouted", run.turn.pk)
        return None
    if "router" not in record:  # the cheap check said no tool: nothing to store
        return None
    tokens_in, tokens_out = record.pop("router_tokens", (None, None))
    # A router request that failed once sent is counted as a failed model request (issue 20); its
    # decision (unrouted) is replayed all the same.
    state = TurnStep.State.FAILED if record.pop("router_failed", False) else TurnStep.State.DONE
    _write(run, _next_index(run), kind=TurnStep.Kind.MODEL, state=state, finished_at=timezone.now(),
           tokens_in=tokens_in, tokens_out=tokens_out, response={"content": "", "tool_calls": [], "routing": record, "route": route.to_dict() if route else None})
    return route


def _loop(run: _Run, messages: list[dict], native_tools: list[dict], limit: int, turn_budget: int) -> tuple[str, bool]:
    """The tool loop (R2). Returns the model's answer when it gave one without asking for tools,
    and whether the search for facts ended unfinished (limit reached, or a looping model).

    A routed turn (R6): the first iteration shows only the routed tool, with the instruction the
    platform composed; later ones are as always. If it answers without the routed tool having
    succeeded, it is asked once more, shown that tool again (R8)."""
    repeat_rounds = 0
    routed_step = run.route is not None
    for iteration in range(1, limit + 1):
        if routed_step:
            routed_tools = [_native_tool(run.tools[run.route.tool])]
            request = routed_messages(messages, run.route.instruction) if iteration == 1 else messages
            answer = _model_step(run, request, routed_tools, iteration)
            routed_step = False
        else:
            _apply_skills(run, messages, native_tools)
            answer = _model_step(run, messages, native_tools, iteration)
        calls, text, unrun = _calls_of(run, answer)
        if not calls:
            if unrun and not run.told_text_calls and iteration < limit:
                # R5: call JSON inside prose may be a call or a quotation (of the customer, of an example):
                # it is never run from there, and the model is asked once to call the tool or answer without it.
                run.told_text_calls = True
                routed_step = run.route is not None and iteration == 1  # still the routed step: its tool again
                log.info("turn %s: call-shaped text in the answer was not run; asking the model once more", run.turn.pk)
                messages.append({"role": "assistant", "content": text or ""})
                messages.append({"role": "user", "content": TEXT_CALLS_NOT_RUN})
                continue
            if run.route and not run.reasked and iteration < limit and not delivered(
                    tool_outcomes=run.outcomes, routed=run.route.tool):
                run.reasked = routed_step = True
                log.info("turn %s: routed step not delivered (%s); asking once more", run.turn.pk,
                         pretence(answer.content) or "prose")
                messages.append({"role": "assistant", "content": text or ""})
                messages.append({"role": "user", "content": reask(verb=run.route.verb, name=run.route.tool)})
                continue
            return text, False
        messages.append({"role": "assistant", "content": text or None, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.raw}} for call in calls
        ]})
        only_repeats = True
        for call in calls:
            result, repeated = _tool_step(run, call, turn_budget)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            only_repeats = only_repeats and repeated
        if unrun:  # calls past the cap, or written in text naming no offered tool: the model is told
            messages.append({"role": "user", "content": calls_not_run(len(unrun))})
        repeat_rounds = repeat_rounds + 1 if only_repeats else 0
        if repeat_rounds >= MAX_REPEAT_ROUNDS:
            log.info("turn %s: the model keeps repeating its calls; stopping the loop", run.turn.pk)
            return "", True
    return "", True


def _apply_skills(run: _Run, messages: list[dict], native_tools: list[dict]):
    """Skills loaded by the last tool calls (R12): their instructions join the system message and
    their tools are offered from this model call on, never before."""
    for instructions, tools in run.builtins.take_loaded(offered=run.tools):
        messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n\n{instructions}"}
        native_tools.extend(_native_tool(tool) for tool in tools)


def _next_index(run: _Run) -> int:
    run.index += 1
    return run.index


def _model_step(run: _Run, messages, native_tools, iteration) -> Answer:
    run.iterations = iteration
    index = _next_index(run)
    stored = run.steps.get(index)
    if stored is not None and stored.state == TurnStep.State.DONE and stored.kind == TurnStep.Kind.MODEL:
        return _answer_from(stored.response)
    _renew(run)
    _release_db()
    try:
        answer = complete(endpoint=run.endpoint, messages=messages, tools=native_tools)
    except ModelError as exc:
        _failed_request(run, index, TurnStep.Kind.MODEL, exc)
        raise
    _write(run, index, turn={"iterations": iteration}, hold=True, kind=TurnStep.Kind.MODEL, state=TurnStep.State.DONE,
           response=_answer_to(answer), finished_at=timezone.now(), tokens_in=answer.tokens_in,
           tokens_out=answer.tokens_out)
    return answer


def _failed_request(run: _Run, index: int, kind: str, error: ModelError):
    """A request the model server failed (error, timeout, a bad answer) is a model request all the
    same: usage counts it, with no tokens (issue 20). Held for the failed turn's reply statement;
    a re-run never replays it (only done steps are)."""
    if error.sent:
        _write(run, index, hold=True, kind=kind, state=TurnStep.State.FAILED, response={"error": error.code},
               finished_at=timezone.now())


def _answer_to(answer: Answer) -> dict:
    calls = [{"id": call.id, "name": call.name, "arguments": call.arguments} for call in answer.tool_calls]
    return {"content": answer.content, "tool_calls": calls, "finish_reason": answer.finish_reason}


def _answer_from(stored: dict) -> Answer:
    calls = tuple(NativeCall(name=c["name"], arguments=c["arguments"], id=c.get("id", "")) for c in stored.get("tool_calls", []))
    return Answer(content=stored.get("content", ""), tool_calls=calls, finish_reason=stored.get("finish_reason", ""))


def calls_not_run(count: int) -> str:
    """What the model is told when calls of its answer were not run beside those that were (R2, R5)."""
    return (f"{count} more tool call(s) in your last answer were not run: at most {MAX_CALLS_PER_ANSWER} calls of one "
            "answer are run, and only of tools you were offered. Call again what you still need, or answer with what "
            "you have.")


def _calls_of(run: _Run, answer: Answer) -> tuple[list[Call], str, tuple[str, ...]]:
    """The calls the model asked for — native ones, or else the ones written as text (R5) —, its
    text without any call syntax, and the call-shaped fragments of that text that were not run
    (call JSON inside prose, a name not offered). Call ids are ours: some servers reuse theirs."""
    prefix = f"call_{run.index}_"
    if answer.tool_calls:
        calls = []
        for n, native in enumerate(answer.tool_calls[:MAX_CALLS_PER_ANSWER], 1):
            try:
                too_long = len(native.arguments) > MAX_ARGUMENT_CHARS
                arguments = None if too_long else json.loads(native.arguments) if native.arguments.strip() else {}
                check_json(arguments)  # a NUL or a lone surrogate: arguments no server or record can take
            except ValueError:  # JsonInputError is one
                arguments = None
            calls.append(Call(f"{prefix}{n}", native.name, arguments if isinstance(arguments, dict) else None,
                              storable(native.arguments[:MAX_ARGUMENT_CHARS])))
        return calls, clean_reply(answer.content), tuple(native.name for native in answer.tool_calls[MAX_CALLS_PER_ANSWER:])
    parsed = parse_text_calls(answer.content, {name: tool.definition.get("inputSchema") or {} for name, tool in run.tools.items()})
    calls = [
        Call(f"{prefix}{n}", call.name, call.arguments if _storable_json(call.arguments) else None,
             storable(json.dumps(call.arguments, ensure_ascii=False)))
        for n, call in enumerate(parsed.calls[:MAX_CALLS_PER_ANSWER], 1)
    ]
    return calls, clean_reply(parsed.text), (*parsed.rejected, *(call.raw for call in parsed.calls[MAX_CALLS_PER_ANSWER:]))


def _storable_json(value) -> bool:
    try:
        check_json(value)
    except JsonInputError:
        return False
    return True


def _tool_step(run: _Run, call: Call, turn_budget: int) -> tuple[str, bool]:
    """One tool call through the gateway, or its stored result. Returns what the model reads and
    whether it was a repeat."""
    index = _next_index(run)
    run.tool_steps += 1
    stored = run.steps.get(index)
    tool = run.tools.get(call.name)
    source = (tool.definition.get("_meta") or {}).get(VERB_KEY) if tool else None
    if stored is not None and stored.state == TurnStep.State.DONE and stored.kind == TurnStep.Kind.TOOL:
        run.seen.add(call.signature)
        run.used = (stored.response or {}).get("used_after", run.used)
        if stored.outcome != REPEATED:
            run.facts.append(Fact(fact_source(source or call.name, stored.response), stored.model_text))
        run.builtins.replay(stored.response)
        run.outcomes.append((call.name, stored.outcome))
        return stored.model_text, stored.outcome == REPEATED
    with translation.override(run.language):
        if call.signature in run.seen:
            text = _(
                "You already called %(name)s with these same arguments in this turn; its result is above. It was "
                "not called again. Do not repeat the call: answer with what you have."
            ) % {"name": call.name}
            _write(run, index, kind=TurnStep.Kind.TOOL, state=TurnStep.State.DONE, tool_name=call.name,
                   call_id=call.id, arguments=call.arguments, outcome=REPEATED, model_text=text,
                   response={"used_after": run.used}, finished_at=timezone.now())
            return text, True
        run.seen.add(call.signature)
        if call.arguments is None:
            text = _(
                "The arguments for %(name)s are not a valid JSON object of at most %(max)d characters. Correct them "
                "and call the tool again."
            ) % {"name": call.name, "max": MAX_ARGUMENT_CHARS}
            _write(run, index, kind=TurnStep.Kind.TOOL, state=TurnStep.State.DONE, tool_name=call.name,
                   call_id=call.id, arguments={"_raw": call.raw[:2000]}, outcome=BAD_ARGUMENTS, model_text=text,
                   response={"used_after": run.used}, finished_at=timezone.now())
            return text, False
    key = f"turn:{run.turn.pk}:step:{index}"
    status = ()
    if stored is None:
        # R9: the channel shows or says what the agent is doing, from the tool's own verb.
        verb_language = getattr(tool, "verb_language", None) or current_tenant().language
        text = events.status_text(verb=source or "", verb_language=verb_language, language=run.language)
        status = ((TurnEvent, {"turn_id": run.turn.pk, "kind": TurnEvent.Kind.STATUS, "text": text,
                               "data": {"tool": call.name}}),)
    # Stored (with the lease checked) before the call: a re-run sends it again with the same key.
    _write(run, index, rows=status, kind=TurnStep.Kind.TOOL, state=TurnStep.State.STARTED, tool_name=call.name,
           call_id=call.id, arguments=call.arguments, idempotency_key=key, sends=(stored.sends if stored else 0) + 1)
    _release_db()
    conversation = run.turn.conversation
    outcome, extra = _send_call(run, call, key)
    budgeted = apply_budgets(
        text=outcome.model_text, tool_name=call.name, gateway_truncated=outcome.truncated,
        result_chars=outcome.result_chars, used=run.used, turn_budget=turn_budget, language=run.language,
    )
    rows = [(TruncationLog, {"turn_id": run.turn.pk, "conversation_id": conversation.pk, "tool_name": call.name,
                             "kind": cut.kind, "original_chars": cut.original_chars, "kept_chars": cut.kept_chars})
            for cut in budgeted.cuts]
    if "chart" in extra:  # R12: the channel renders the spec; its data came from the server
        rows.append((TurnEvent, {"turn_id": run.turn.pk, "kind": TurnEvent.Kind.CHART, "text": extra["chart"]["title"],
                                 "data": {"tool": call.name, "spec": extra["chart"]}}))
    _write(run, index, turn={"turn_chars": budgeted.used}, rows=tuple(rows), kind=TurnStep.Kind.TOOL,
           state=TurnStep.State.DONE, outcome=str(outcome.outcome), model_text=budgeted.text,
           record_id=outcome.record_id, response={"used_after": budgeted.used, **extra}, finished_at=timezone.now())
    metrics.truncated(count=len(budgeted.cuts))  # logged now (the write above stored them)
    run.used = budgeted.used
    run.facts.append(Fact(fact_source(source or call.name, extra), budgeted.text))
    run.outcomes.append((call.name, str(outcome.outcome)))
    return budgeted.text, False


def _send_call(run: _Run, call: Call, key: str):
    """A built-in (R12) runs in the runtime; a catalog tool goes through the gateway."""
    conversation = run.turn.conversation
    context = CallContext(
        channel=conversation.channel_kind, idempotency_key=key, conversation_id=str(conversation.pk),
        turn_id=run.turn.pk, price_list_id=conversation.price_list_id, currency=conversation.currency,
        timezone=conversation.timezone,
    )
    if is_builtin(call.name) or call.name in run.builtins.held:
        evidence = (*run.customer_said, *(fact.text for fact in run.facts))
        return run.builtins.send(name=call.name, arguments=call.arguments, context=context, language=run.language,
                                 evidence=evidence)
    return call_tool(name=call.name, arguments=call.arguments, context=context), {}


def _reply_step(run: _Run, request: list[dict]) -> str:
    """The reply from the clean request (R3), no tools offered; whatever call syntax the model
    still writes is removed (R5)."""
    index = _next_index(run)
    stored = run.steps.get(index)
    if stored is not None and stored.state == TurnStep.State.DONE and stored.kind == TurnStep.Kind.REPLY:
        return clean_reply(_answer_from(stored.response).content)
    _renew(run)
    _release_db()
    try:
        answer = complete(endpoint=run.endpoint, messages=request)
    except ModelError as exc:
        if exc.code != "model_empty":
            _failed_request(run, index, TurnStep.Kind.REPLY, exc)
            raise
        answer = Answer(content="")
    # Held for the reply's own statement (_finish): only computation happens in between.
    _write(run, index, hold=True, kind=TurnStep.Kind.REPLY, state=TurnStep.State.DONE, response=_answer_to(answer),
           finished_at=timezone.now(), tokens_in=answer.tokens_in, tokens_out=answer.tokens_out)
    return clean_reply(answer.content)
