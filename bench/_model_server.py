"""A stand-in model for the turn benchmarks: an OpenAI-compatible Chat Completions endpoint on
loopback that answers after `--delay` seconds (0: at once).

    python bench/_model_server.py --port 8123 [--delay 1.0] [--tool-calls 3] [--tool soporte__buscar_producto]

When the request offers tools and holds fewer than `--tool-calls` tool results, it asks for one
more call (with new arguments, so the repetition guard never fires); otherwise it answers in prose.
Runs in its own process so its work is not counted in the benchmark process."""

import argparse
import asyncio
import json

import uvicorn


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
        if request.get("tools") and done < tool_calls:
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
