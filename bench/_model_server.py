"""A stand-in model for the turn benchmarks: an OpenAI-compatible Chat Completions endpoint on
loopback that answers after `--delay` seconds (0: at once).

    python bench/_model_server.py --port 8123 [--delay 1.0] [--tool-calls 3] [--tool soporte__buscar_producto]

When the request offers tools and holds fewer than `--tool-calls` tool results, it asks for one
more call (with new arguments, so the repetition guard never fires); otherwise it answers in prose.
A pre-routing request (R6: the router's task, no tools) is answered with `--tool` when it is one
of the candidates, else "none", so a routed turn still calls that tool.
Runs in its own process so its work is not counted in the benchmark process."""

import argparse
import asyncio
import json
import re

import uvicorn

ROUTER_TASK = "You read a conversation between a customer and a company's agent."  # runtime/routing/router.py
CANDIDATE = re.compile(r"^- ([^:\s]+):", re.MULTILINE)


def router_answer(request: dict, tool: str) -> str | None:
    """The router's JSON when `request` is a pre-routing request, else None."""
    messages = request.get("messages") or []
    task = str(messages[0].get("content") or "") if messages else ""
    if request.get("tools") or not task.startswith(ROUTER_TASK):
        return None
    chosen = tool if tool in CANDIDATE.findall(task) else "none"
    said = str(messages[-1].get("content") or "").rsplit(": ", 1)[-1]
    return json.dumps({"tool": chosen, "request": said, "quantity": None, "references": None, "details": {},
                       "clear": chosen != "none"})


def build_app(*, delay: float, tool_calls: int, tool: str):
    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        done = sum(1 for m in request.get("messages", []) if m.get("role") == "tool")
        routed = router_answer(request, tool)
        if routed is not None:
            message, finish = {"content": routed}, "stop"
        elif request.get("tools") and done < tool_calls:
            arguments = json.dumps({"consulta": f"router {done}"})
            message = {"content": None, "tool_calls": [
                {"id": f"call_{done}", "type": "function", "function": {"name": tool, "arguments": arguments}}]}
            finish = "tool_calls"
        else:
            message, finish = {"content": "Tenemos dos routers disponibles: AX-55 y AX-73."}, "stop"
        if delay:
            await asyncio.sleep(delay)
        answer = json.dumps({"id": "bench", "object": "chat.completion", "model": "bench", "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}]}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]})
        await send({"type": "http.response.body", "body": answer})

    return app


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--tool-calls", type=int, default=0)
    parser.add_argument("--tool", default="soporte__buscar_producto")
    args = parser.parse_args()
    app = build_app(delay=args.delay, tool_calls=args.tool_calls, tool=args.tool)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False, backlog=4096,
                timeout_keep_alive=30)


if __name__ == "__main__":
    main()
