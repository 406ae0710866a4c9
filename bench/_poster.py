"""The live P4 bench's poster (bench/turn_concurrency.py --live), a process of its own so its CPU is
not counted as the platform's: turns posted through the channel API as a channel would, at a
fixed rate, for a fixed time.

    python bench/_poster.py --url http://127.0.0.1:PORT --key KEY --rate 60 --seconds 60 \\
        --messages FILE.json --out FILE.jsonl [--threads 32]

Turn n is due at start + n / rate (an open loop: a slow answer does not slow the schedule down,
it takes another thread). Each turn is one new conversation (`POST /api/v1/conversations`) and one
customer message in it (`POST …/messages`), the n-th text of the JSON list in FILE.json, cycled.
Every turn's line in FILE.jsonl: its number, when it was due and posted (epoch seconds), the two
statuses, the turn id, and the seconds both requests took. The first line of standard output is
the start (epoch seconds); the last, the poster's own CPU seconds. Only loopback is ever posted to:
the bench starts the server it posts to, and the loop stops after `--seconds`."""

import argparse
import json
import threading
import time

import httpx


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--rate", type=float, required=True, help="turns per second")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--messages", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--threads", type=int, default=32)
    args = parser.parse_args()
    if not args.url.startswith(("http://127.", "http://localhost")):
        raise SystemExit("the poster posts to loopback only")
    texts = json.load(open(args.messages, encoding="utf-8"))
    total = int(args.rate * args.seconds)
    headers = {"Authorization": f"Bearer {args.key}"}
    lines, lock, next_turn = [], threading.Lock(), iter(range(total))
    start = time.time() + 0.5
    print(f"{start:.6f}", flush=True)

    def post_one(http, n):
        due = start + n / args.rate
        time.sleep(max(0.0, due - time.time()))
        posted = time.time()
        line = {"n": n, "due": due, "posted": posted, "conversation": None, "message": None, "turn": None}
        try:
            answer = http.post(f"{args.url}/api/v1/conversations", headers=headers,
                               json={"channel_kind": "chat", "channel_name": "bench", "language": "es"})
            line["conversation"] = answer.status_code
            if answer.status_code == 201:
                answer = http.post(f"{args.url}/api/v1/conversations/{answer.json()['id']}/messages", headers=headers,
                                   json={"text": texts[n % len(texts)]})
                line["message"] = answer.status_code
                if answer.status_code == 202:
                    line["turn"] = answer.json()["id"]
        except httpx.HTTPError as exc:
            line["error"] = type(exc).__name__
        line["seconds"] = time.time() - posted
        return line

    def poster():
        with httpx.Client(timeout=60) as http:
            while True:
                with lock:
                    n = next(next_turn, None)
                if n is None:
                    return
                line = post_one(http, n)
                with lock:
                    lines.append(line)

    threads = [threading.Thread(target=poster) for _ in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with open(args.out, "w", encoding="utf-8") as out:
        for line in sorted(lines, key=lambda line: line["n"]):
            out.write(json.dumps(line) + "\n")
    print(f"{time.process_time():.3f}", flush=True)


if __name__ == "__main__":
    main()
