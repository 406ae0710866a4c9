"""Work run on several threads at once, for tests of code that many threads share:

    answers, errors = on_threads(lambda number: call(), count=8)

Each thread's return value is an answer (a list extends the answers); an exception is an error, kept to
be asserted on (a thread's exception would otherwise only be printed). Each thread is joined with a
generous ceiling, so a thread left waiting shows as a missing answer, never as a hung test."""

import threading


def on_threads(work, *, count: int, ceiling: float = 120.0) -> tuple[list, list]:
    answers, errors = [], []

    def run(number):
        try:
            answer = work(number)
        except Exception as exc:  # reported through `errors`
            errors.append(exc)
            return
        if isinstance(answer, list):
            answers.extend(answer)
        else:
            answers.append(answer)

    threads = [threading.Thread(target=run, args=(number,)) for number in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(ceiling)
    return answers, errors
