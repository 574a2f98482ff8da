"""Regenerate conversation.jsonl: 40 rounds, three new memories a round (seeded, reproducible).

    python examples/rounds/make_conversation.py > examples/rounds/conversation.jsonl
"""

import json
import random

rng = random.Random(7)
TOPICS = ["deploy", "incident", "customer", "pricing", "schema", "oncall", "latency", "budget", "roadmap"]
for t in range(1, 41):
    batch = []
    for i in range(3):
        raw = rng.randint(120, 420)
        u = round(rng.uniform(2.0, 10.0), 2)
        batch.append({
            "id": f"t{t:02d}-{i}",
            "timestamp": t,
            "store": rng.choice(["episodic", "semantic", "working"]),
            "text": f"turn {t} note {i} about {rng.choice(TOPICS)}",
            "representations": {
                "raw": {"tokens": raw, "utility": u},
                "summary": {"tokens": max(raw // 4, 8), "utility": round(u * rng.uniform(0.55, 0.8), 2)},
                "abstraction": {"tokens": max(raw // 12, 4), "utility": round(u * rng.uniform(0.25, 0.45), 2)},
                "keywords": {"tokens": max(raw // 50, 3), "utility": round(u * rng.uniform(0.05, 0.15), 2)},
            },
        })
    print(json.dumps({"now": t, "records": batch}))
